"""check --full with the schema shape checks computed ahead by a second
process (check/shape_oracle.py, check/shape_child.py) gives exactly the
one-process report: when the speculated verdict is taken (recorded
annotations right), when it must not be (recorded kind, method, revision or
pairing edited, batches of other lines), when it comes late or never (child
failed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.integrity import MAX_T_US
from mcptap.check import file_ranges, parallel, shape_child
from mcptap.check.fullscan import FullScan
from mcptap.check.report import check_capture
from mcptap.check.shape_oracle import PLAIN_KEYS, Batch, ShapeOracle, Speculation, plain_fields, plain_record, plain_record_reference
from mcptap.errors import CaptureReadError
from test_check_scan import _records, _shape, _write, busy


class InProcess:
    """ShapeChild's interface, speculating here and at once (deterministic)."""

    def __init__(self, lines: Callable[[], Iterator[list[bytes]]], shift: int = 0) -> None:
        spec = Speculation()
        self.batches = [spec.batch(b) for b in lines()]
        self.batches = self.batches[shift:]

    def next(self) -> Batch | None:
        return self.batches.pop(0) if self.batches else None

    def close(self) -> None:
        pass


@pytest.fixture
def oracles(monkeypatch: pytest.MonkeyPatch) -> list[ShapeOracle]:
    """Every capture is 'big' and read in small lists; the oracles made."""
    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH", 600)
    monkeypatch.setattr(file_ranges, "BATCH", 600)
    made: list[ShapeOracle] = []
    orig = FullScan.speculated

    def spy(self: FullScan, batches: Callable[[], Batch | None], stop: Callable[[], None] = lambda: None) -> ShapeOracle:
        made.append(orig(self, batches, stop))
        return made[-1]

    monkeypatch.setattr(FullScan, "speculated", spy)
    return made


def _same(path: Path) -> None:
    want = _shape(check_capture(str(path), 3, reuse=False))
    assert _shape(parallel.check_capture(str(path), 3, reuse=False, workers=1)) == want
    assert _shape(parallel.check_capture(str(path), 3, reuse=False, workers=2)) == want


def _same_or_error(path: Path) -> None:
    """_same, or the same error from each way (a record the reader refuses)."""
    def outcome(check: Callable[[], Any]) -> Any:
        try:
            return _shape(check())
        except CaptureReadError as exc:
            return str(exc)

    want = outcome(lambda: check_capture(str(path), 3, reuse=False))
    assert outcome(lambda: parallel.check_capture(str(path), 3, reuse=False, workers=1)) == want
    assert outcome(lambda: parallel.check_capture(str(path), 3, reuse=False, workers=2)) == want


def test_speculated_checks_are_taken_and_give_the_same_report(tmp_path: Path, oracles: list[ShapeOracle],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_child, "ShapeChild", InProcess)
    path = busy(tmp_path)
    _same(path)
    assert len(oracles) == 1 and oracles[0].used > 10
    # shape findings came from the speculation: the busy capture has invalid results
    assert b"shape.invalid_result" in orjson.dumps(parallel.check_capture(str(path), 3, reuse=False).to_json())


def _edited(path: Path, fn: Any) -> Path:
    out = path.with_name("edited-" + path.name)
    return _write(out, fn(_records(path)))


def _mislabel(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded annotations that re-annotation does not confirm: another
    revision, kind, method, a response paired with another request."""
    out = []
    for i, r in enumerate(rs):
        r = dict(r)
        if r.get("type") == "message" and i % 5 == 1:
            r["rev"] = "2024-11-05" if r.get("rev") != "2024-11-05" else "2025-06-18"
        elif r.get("type") == "message" and i % 5 == 2 and r.get("kind") == "request":
            r["method"] = "tools/list"
        elif r.get("type") == "message" and i % 5 == 3 and "pair" in r:
            r["pair"] = r["pair"] - 1
        elif r.get("type") == "message" and i % 5 == 4 and r.get("kind") == "response":
            r["kind"] = "notification"
            r["method"] = "notifications/message"
        out.append(r)
    return out


def test_mislabelled_records_are_checked_here(tmp_path: Path, oracles: list[ShapeOracle], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_child, "ShapeChild", InProcess)
    path = _edited(busy(tmp_path), _mislabel)
    _same(path)
    assert oracles and all(o.used < 40 for o in oracles)


def test_batches_of_other_lines_are_not_used(tmp_path: Path, oracles: list[ShapeOracle], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_child, "ShapeChild", lambda lines: InProcess(lines, shift=1))
    path = busy(tmp_path)
    _same(path)
    assert oracles[-1].used == 0


def test_a_real_second_process_and_one_that_fails(tmp_path: Path, oracles: list[ShapeOracle], monkeypatch: pytest.MonkeyPatch) -> None:
    path = busy(tmp_path)
    _same(path)
    calls = {"n": 0}
    batch = Speculation.batch

    def fail_later(self: Speculation, lines: Any) -> Batch:
        calls["n"] += 1
        if calls["n"] > 2:
            raise RuntimeError("speculation broke")
        return batch(self, lines)

    monkeypatch.setattr(Speculation, "batch", fail_later)
    _same(path)


def test_speculation_stops_at_the_first_chunk_record(tmp_path: Path, oracles: list[ShapeOracle], monkeypatch: pytest.MonkeyPatch) -> None:
    stopped: list[bool] = []

    class Stoppable(InProcess):
        def close(self) -> None:
            stopped.append(True)

    monkeypatch.setattr(shape_child, "ShapeChild", Stoppable)
    rs = _records(busy(tmp_path))
    cut = next(i for i, r in enumerate(rs) if r.get("type") == "message" and r.get("kind") == "response")
    chunk = {"type": "chunk", "seq": rs[cut]["seq"], "t_us": rs[cut]["t_us"], "dir": rs[cut]["dir"],
             "data": orjson.dumps(rs[cut]["json"]).decode() + "\n", "offset": rs[cut].get("offset", 0)}
    path = _write(tmp_path / "chunked.jsonl", rs[:cut] + [chunk] + rs[cut + 1:])
    _same(path)
    assert len(stopped) == 2 and oracles[-1].used > 0     # used before the chunk record, stopped at it (and closed at the end)


def test_late_batches_keep_the_key_table_in_step() -> None:
    """A batch that arrives after its list was checked here is read for its keys only."""
    spec = Speculation()
    lines = [orjson.dumps({"type": "message", "seq": i + 1, "t_us": i, "dir": "c2s", "kind": "request", "id": i,
                           "method": m, "rev": "2025-06-18", "json": {"jsonrpc": "2.0", "id": i, "method": m, "params": {}}}) + b"\n"
             for i, m in enumerate(["tools/list", "prompts/list", "tools/list"])]
    batches = [spec.batch(lines[:1]), spec.batch(lines[1:2]), spec.batch(lines[2:])]
    ready: list[Batch | None] = [None]              # the first is late
    oracle = ShapeOracle(lambda: ready.pop(0) if ready else None)
    oracle.next_batch(lines[:1])
    assert len(oracle.keys) == 0
    ready[:] = [batches[0], batches[1]]
    oracle.next_batch(lines[1:2])
    assert oracle.keys == spec.keys                  # the late one's key and this one's
    oracle.line = 0
    from mcptap.model import Direction, Kind
    assert oracle.check(Direction.C2S, Kind.REQUEST, "prompts/list", {}, "2025-06-18") == []
    assert oracle.used == 1


def _odd_types(rs: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Message records that fail one of plain_record's type tests each (the
    reader's full check then words or accepts them), from the ``k``-th on."""
    odd: list[Any] = [("t_us", "5"), ("seq", True), ("dir", "up"), ("kind", 3), ("id", 1.5), ("method", 7), ("rev", None),
                      ("link", "x"), ("pair", "3"), ("latency_us", 1.0), ("phase", 4), ("extra", 1), ("t_us", 10**20)]
    out = []
    for i, r in enumerate(rs):
        r = dict(r)
        if r.get("type") == "message" and i >= k and i % 3 == 0:
            key, value = odd[(i // 3) % len(odd)]
            r[key] = value
        out.append(r)
    return out


@pytest.mark.parametrize("shift", [0, 1])
def test_records_of_other_types_get_the_same_report_with_or_without_the_verdicts(tmp_path: Path, oracles: list[ShapeOracle],
                                                                                  monkeypatch: pytest.MonkeyPatch, shift: int) -> None:
    """plain_record's verdicts from the speculating process (shift 0: taken;
    1: batches of other lines, not taken) change nothing in the report."""
    monkeypatch.setattr(shape_child, "ShapeChild", lambda lines: InProcess(lines, shift=shift))
    rs = _records(busy(tmp_path, gap=False))
    for k in range(0, 40, 3):          # from each record on: the first odd one is another kind of odd each time
        path = _write(tmp_path / f"odd{k}.jsonl", _odd_types(rs, k))
        _same_or_error(path)


def test_plain_record() -> None:
    base = {"type": "message", "seq": 4, "t_us": 10, "dir": "s2c", "kind": "response", "id": 1, "pair": 3, "latency_us": 5,
            "phase": "operating", "rev": "2025-11-25", "json": {"jsonrpc": "2.0", "id": 1, "result": {}}, "offset": 0, "link": 1}
    assert plain_record(base)
    assert plain_record({k: v for k, v in base.items() if k not in ("pair", "latency_us", "phase", "rev", "link", "offset", "id")})
    for key, value in [("t_us", "5"), ("seq", True), ("seq", None), ("dir", "stderr"), ("kind", None), ("id", 1.5), ("method", 7),
                       ("rev", None), ("link", None), ("pair", 1.0), ("latency_us", "1"), ("phase", 4), ("raw", "x"),
                       ("findings", []), ("session", "s"), ("t_us", 10**20), ("type", "chunk")]:
        assert not plain_record(base | {key: value}), key
    assert not plain_record({k: v for k, v in base.items() if k != "json"})
    assert not plain_record([base]) and not plain_record(None)


def test_the_re_annotating_process_takes_the_verdicts(tmp_path: Path, oracles: list[ShapeOracle], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the speculating process's batches, no record's type tests are made twice."""
    from mcptap.check import fullscan

    monkeypatch.setattr(shape_child, "ShapeChild", InProcess)
    path = busy(tmp_path)
    tested: list[Any] = []
    monkeypatch.setattr(fullscan, "plain_fields", lambda r: tested.append(r) or plain_fields(r))
    parallel.check_capture(str(path), 3, reuse=False, workers=2)
    assert oracles[-1].plain is not None and tested == []
    parallel.check_capture(str(path), 3, reuse=False, workers=1)      # one process: it tests each record itself
    assert len(tested) > 20


#: values of every type a record field may hold, the telling ones among them
_VALUES = st.one_of(st.sampled_from(["message", "chunk", "c2s", "s2c", "stderr", "", "request"]), st.integers(-3, 2**63), st.booleans(),
                    st.none(), st.floats(allow_nan=False), st.sampled_from([2**64, MAX_T_US, MAX_T_US + 1, {}, []]))


@settings(max_examples=400, deadline=None)
@given(fields=st.lists(st.tuples(st.sampled_from(sorted(PLAIN_KEYS) + ["raw", "findings", "session"]), _VALUES), max_size=16),
       keep=st.booleans(), few=st.booleans())
def test_plain_record_is_its_reference(fields: list[tuple[str, Any]], keep: bool, few: bool) -> None:
    """plain_record's verdict cached by signature (keys and their values' types)
    is the field-by-field one, for any record, first seen or not (``few``: a
    plain record with a field or two changed)."""
    base = {"type": "message", "seq": 4, "t_us": 10, "dir": "s2c", "kind": "response", "json": {}} if keep else {}
    r = base | dict(fields[:2] if few else fields)
    assert plain_record(r) == plain_record_reference(r)
    assert plain_record(r) == plain_record_reference(r)
    # the values FullScan.run reads next, given with the verdict (check --full's common line, one call)
    want = (r["seq"], r["t_us"], r["dir"], r["json"], r.get("offset", 0)) if plain_record_reference(r) else None
    got = plain_fields(r)
    assert got == want and (got is None or all(a is b for a, b in zip(got, want or (), strict=True)))
