"""check's fast scan (mcptap/check/scan.py) and its two-process run
(mcptap/check/parallel.py) give exactly the report of the reference check
(report.check_capture: Reannotated + check_stream), for every capture here
and for a split of its records at every line: the same JSON, the same order
of codes and of each code's severities, the same first places (line numbers
included)."""

from __future__ import annotations

import base64
import pickle
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from casefiles import CASES, as_stdio, wires
from mcptap.capture.dumps import dumps
from mcptap.capture.integrity import StreamTally
from mcptap.capture.writer import CaptureWriter
from mcptap.check import parallel
from mcptap.check.report import CaptureReport, check_capture
from mcptap.check.scan import PLAIN_KEYS, Scan, Unsupported
from mcptap.errors import CaptureReadError
from mcptap.model import Direction
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.recorder import Recorder
from scripted import c2s, err, handshake, note, record, req, res, s2c
from test_cases_stdio import record_wire

STREAMS = parallel.STREAMS
TASK = {"ttl": 60000}


def _shape(rep: CaptureReport) -> Any:
    return (rep.to_json(), list(rep.groups), [(c, list(g.by_severity), [p.to_json() | {"line": p.line} for p in g.places])
                                              for c, g in rep.groups.items()])


def _split(path: Path, k: int | None, keep: int, shapes: bool = True) -> tuple[CaptureReport | None, bool]:
    """What parallel.check_capture does, in one process: the records before
    line ``k`` (None: all) scanned here, the rest by a later scan whose state
    goes through pickle. (report or None for the reference way, absorbed?)"""
    data = path.read_bytes().splitlines(keepends=True)
    header = orjson.loads(data[0])
    lines = data[1:]
    tallies = {n: StreamTally() for n in STREAMS}
    spilled: dict[str, list[bytes]] = {n: [] for n in STREAMS}
    a = Scan(header.get("transport"), keep, shapes, True, lambda n, d: tallies[n].sha.update(d))
    absorbed = False
    try:
        if k is None:
            a.run(lines)
        else:
            a.run(lines[:k])
            b = Scan(header.get("transport"), keep, shapes, False, lambda n, d: spilled[n].append(d))
            try:
                b.run(lines[k:])
                b.end_of_input()
                state = pickle.loads(pickle.dumps(b.state()))
            except Unsupported:
                state = None
            a.flush()
            if state is not None and a.absorb(state):
                absorbed = True
                for n in STREAMS:
                    tallies[n].sha.update(b"".join(spilled[n]))
            else:
                a.run(lines[k:])
        a.end_of_input()
    except Unsupported:
        return None, False
    return a.report(str(path), header, tallies), absorbed


def _same_full(path: Path, keep: int, must_scan: bool) -> None:
    """check --full's fast scan (FullScan) gives the reference's --full report."""
    want = _shape(check_capture(str(path), keep, reuse=False))
    if must_scan:
        assert parallel._fast(str(path), keep, True, 1, reuse=False) is not None
    assert _shape(parallel.check_capture(str(path), keep, reuse=False, workers=1)) == want


def _same_at_every_split(path: Path, must_scan: bool = False, keeps: tuple[int, ...] = (1, 3)) -> None:
    n = len(path.read_bytes().splitlines())
    reused = orjson.loads(path.read_bytes().split(b"\n", 1)[0]).get("rules") == rules_fingerprint()
    for keep in keeps:
        _same_full(path, keep, must_scan)
        want = _shape(check_capture(str(path), keep))
        assert _shape(parallel.check_capture(str(path), keep, workers=1)) == want
        if not reused:              # other rules: re-annotated (FullScan), no reuse scan to split
            continue
        one, _ = _split(path, None, keep)
        if must_scan:
            assert one is not None, "the fast scan gave up on a capture it must handle"
        if one is not None:
            assert _shape(one) == want
        for k in range(0, n):
            got, absorbed = _split(path, k, keep)
            if must_scan:
                assert got is not None and absorbed, f"split at {k} not merged"
            if got is not None:
                assert _shape(got) == want, f"split before record {k + 1} (keep {keep})"


def _write(path: Path, lines: list[dict[str, Any]], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(dumps(x) + b"\n" for x in lines) + tail)
    return path


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def busy(tmp_path: Path, name: str = "busy.jsonl", end: bool = True, gap: bool = True) -> Path:
    """Requests in flight across any split: answered late, out of order,
    twice or never; task-augmented calls; invalid results (shape findings);
    errors, notifications, stderr, garbage lines."""
    steps = list(handshake("2025-11-25"))
    for i in range(10, 22):
        params: dict[str, Any] = {"name": "echo", "arguments": {"i": i}}
        if i % 4 == 0:
            params["task"] = TASK
        steps.append(c2s(req(i, "tools/call", params)))
        if i % 3 == 0:
            steps.append(s2c(note("notifications/progress", {"progressToken": i, "progress": 1})))
        if i % 5 == 0:
            steps.append(("err", f"working on {i}\n".encode()))
    for i in (13, 10, 11, 15, 12, 14):
        steps.append(s2c(res(i, {"content": [{"type": "text", "text": f"r{i}"}]} if i != 12 else {"content": [{"text": "no type"}]})))
    steps += [s2c(res(16, {"task": {"taskId": "t1", "status": "working", "createdAt": "2025-01-01T00:00:00Z", "ttl": 60000}})),
              s2c(err(17)), s2c(res(17)), s2c(res(99)), s2c(b"not json at all\n"), c2s(req(30, "ping")),
              s2c(res(18, {"content": "wrong"})), s2c(res(30)), *([("gap", "test gap")] if gap else []), c2s(req(31, "tools/list")),
              s2c(res(20, {"content": []})), ("eof", "c2s"), ("exit", 0)]
    return record(tmp_path / name, steps, end=end)


def test_clean_and_busy_captures_at_every_split(tmp_path: Path) -> None:
    _same_at_every_split(busy(tmp_path), must_scan=True)
    _same_at_every_split(busy(tmp_path, "killed.jsonl", end=False), must_scan=True)
    faulty = record(tmp_path / "faulty.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(99)), s2c(res(2)), s2c(res(2)), s2c(
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\r\n')])
    _same_at_every_split(faulty, must_scan=True)
    rep = check_capture(str(busy(tmp_path)))
    assert {"shape.invalid_result", "capture.gap"} <= set(rep.groups)     # the captures do exercise findings


def _edited(tmp_path: Path, name: str, fn: Any, tail: bytes = b"") -> Path:
    src = busy(tmp_path, f"src-{name}", gap=False)     # a gap record makes the digests unverifiable
    return _write(tmp_path / name, fn(_records(src)), tail)


def _drop(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rs if not (r.get("type") == "message" and r.get("id") == 11 and r["dir"] == "c2s")]


def _swap(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = next(i for i, r in enumerate(rs) if r.get("type") == "message" and r.get("id") == 12)
    rs[i], rs[i + 1] = rs[i + 1], rs[i]
    return rs


def _tamper(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in rs:
        if r.get("type") == "message" and r.get("id") == 13 and r["dir"] == "s2c":
            r["json"]["result"]["content"][0]["text"] = "edited"
        if r.get("type") == "stderr":
            r["data"] = "edited\n"
    return rs


def _after_end(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    end = rs.pop()
    return rs[:-3] + [end] + rs[-3:]


def _raw_and_b64(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in rs:
        if r.get("type") == "message" and r.get("id") == 14:
            r["raw"] = orjson.dumps(r.pop("json")).decode() + "\n"
        if r.get("type") == "message" and r.get("id") == 15 and r["dir"] == "s2c":
            r["raw_b64"] = base64.b64encode(orjson.dumps(r.pop("json")) + b"\n").decode()
        if r.get("type") == "message" and r.get("id") == 16 and r["dir"] == "c2s":
            r["findings"] = [{"code": "jsonrpc.unmatched_response", "severity": "odd", "message": "hand-made"}]
    return rs


def _unencodable(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``json`` that orjson reads but cannot write: 300 levels deep, an id beyond 64 bits."""
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    for r in rs:
        if r.get("type") == "message" and r.get("id") == 13 and r["dir"] == "s2c":
            r["json"]["result"]["deep"] = deep
        if r.get("type") == "message" and r.get("id") == 14:
            r["id"] = r["json"]["id"] = 2**64 + 14
    return rs


def _dup_seq(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in rs:
        if r.get("type") == "message" and r.get("id") == 19:
            r["seq"] = 5
    return rs


def _gap_seq(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r, seq=r["seq"] + 7) if isinstance(r.get("seq"), int) and r["seq"] > 20 else r for r in rs]


@pytest.mark.parametrize("name, fn, tail, code", [
    ("dropped", _drop, b"", "capture.out_of_sequence"), ("swapped", _swap, b"", "capture.out_of_sequence"),
    ("tampered", _tamper, b"", "capture.digest_mismatch"), ("after-end", _after_end, b"", "capture.out_of_sequence"),
    ("raw", _raw_and_b64, b"", "jsonrpc.unmatched_response"), ("dup-seq", _dup_seq, b"", "capture.out_of_sequence"),
    ("unencodable", _unencodable, b"", "capture.digest_mismatch"),
    ("seq-jump", _gap_seq, b"", "capture.out_of_sequence"),
    ("truncated", lambda rs: rs[:-1], b'{"type":"message","seq":9', "capture.truncated"),
    ("cut-record", lambda rs: rs[:20] + [{"type": "gap", "seq": 21, "t_us": 1, "reason": "disk full"}] + rs[20:], b"", "capture.gap"),
])
def test_edited_captures_at_every_split(tmp_path: Path, name: str, fn: Any, tail: bytes, code: str) -> None:
    path = _edited(tmp_path, name, fn, tail)
    if name == "cut-record":           # a record cut by a failed write, then the writer's gap record
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:20] + [b'{"type":"message","se\n'] + lines[20:]))
    assert code in check_capture(str(path)).groups
    assert _split(path, None, 2)[0] is not None        # one scan handles them all
    _same_at_every_split(path, keeps=(2,))


STDIO = wires("stdio") + [as_stdio(w) for w in wires("http") if w.case in ("B09", "B10")]


@pytest.mark.skipif(not STDIO, reason=f"handed cases not found at {CASES}")
def test_fault_cases_at_every_split(tmp_path: Path) -> None:
    for i, w in enumerate(STDIO):
        path = tmp_path / f"{i}-{w.case}.jsonl"
        record_wire(w, path)
        _same_at_every_split(path, keeps=(3,))


def test_chunk_records_and_other_rules_are_re_annotated(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00.000000Z")
    for data in handshake():
        rec.stdio_bytes(Direction(data[0]), data[1])
    rec.stdio_unframed(Direction.C2S, req(2, "tools/list") + req(3, "ping"))
    rec.stdio_bytes(Direction.S2C, res(2, {"tools": []}) + res(3))
    rec.close()
    assert {"chunk", "message"} <= {r["type"] for r in _records(path)}
    assert _shape(parallel.check_capture(str(path), workers=1)) == _shape(check_capture(str(path)))
    assert parallel._fast(str(path), 3, True, 1) is not None                  # re-annotated by FullScan
    _same_full(path, 3, True)
    other = _write(tmp_path / "other.jsonl", [dict(r, rules="sha256:0") if r["type"] == "header" else r for r in _records(busy(tmp_path))])
    assert _shape(parallel.check_capture(str(other))) == _shape(check_capture(str(other)))
    assert parallel._fast(str(other), 3, True, 1) is not None


def test_a_flood_stored_as_chunk_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the stdio hand-off writes a flood while analysis is behind: pieces
    cut anywhere, most stored unframed; in one process and with the child."""
    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)
    path = tmp_path / "flood.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00.000000Z")
    for d, data in handshake():
        rec.stdio_bytes(Direction(d), data)
    flood = b"".join(note("notifications/message", {"level": "info", "data": f"line {i}"}) for i in range(3000))
    flood += b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"loud"}}\n' + res(77)
    for i, at in enumerate(range(0, len(flood), 4000)):
        piece = flood[at:at + 4000]
        if i % 3 == 0:
            rec.stdio_bytes(Direction.S2C, piece)
        else:
            rec.stdio_unframed(Direction.S2C, piece)
    rec.stdio_eof(Direction.S2C)
    rec.close()
    want = check_capture(str(path))
    assert want.messages == 3005 and {"shape.invalid_params", "jsonrpc.unmatched_response"} <= set(want.groups)
    for workers in (1, 2):
        assert _shape(parallel.check_capture(str(path), workers=workers)) == _shape(want)
    _same_full(path, 3, True)


def test_two_processes_give_the_one_process_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real fork: child scan, pickled state, stream bytes through temporary files."""
    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)
    used = []
    real = parallel._Child

    def spy(*a: Any) -> Any:
        used.append(a)
        return real(*a)

    monkeypatch.setattr(parallel, "_Child", spy)
    steps = list(handshake())
    for i in range(2, 3000):
        steps += [c2s(req(i, "tools/call", {"name": "echo", "arguments": {"i": i}})), ("err", b"x" * (i % 7) + b"\n")]
        if i > 5:
            steps.append(s2c(res(i - 3, {"content": [{"type": "text", "text": str(i)}]} if i % 500 else {"content": 1})))
    big = record(tmp_path / "big.jsonl", steps)
    for path in (big, busy(tmp_path), _edited(tmp_path, "tampered.jsonl", _tamper), _edited(tmp_path, "dropped.jsonl", _drop)):
        for keep in (1, 3):
            assert _shape(parallel.check_capture(str(path), keep, workers=2)) == _shape(check_capture(str(path), keep))
    assert used
    assert "capture.digest_mismatch" in parallel.check_capture(str(tmp_path / "tampered.jsonl"), workers=2).groups
    assert "capture.digest_mismatch" not in parallel.check_capture(str(big), workers=2).groups


def test_unreadable_captures_raise_as_the_reference_does(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"header","format":"mcptap-capture","version":99}\n')
    with pytest.raises(CaptureReadError, match="version 99"):
        parallel.check_capture(str(bad))
    corrupt = _write(tmp_path / "corrupt.jsonl", _records(busy(tmp_path)), b"")
    lines = corrupt.read_bytes().splitlines(keepends=True)
    corrupt.write_bytes(b"".join(lines[:9] + [b"{oops\n"] + lines[9:]))
    with pytest.raises(CaptureReadError) as want:
        check_capture(str(corrupt))
    with pytest.raises(CaptureReadError) as got:
        parallel.check_capture(str(corrupt), workers=1)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("field,value", [("pair", "x"), ("pair", True), ("pair", 1.5), ("latency_us", [1]), ("latency_us", 2**70),
                                         ("phase", 3), ("phase", {"a": 1})])
def test_a_wrong_typed_annotation_field_is_refused_as_the_reference_does(tmp_path: Path, field: str, value: Any) -> None:
    """A message record of the common shape with a ``pair``/``latency_us``
    that is not an integer, or a ``phase`` that is not a string: every fast
    path refuses it with the reader's words (they reported on it instead)."""
    recs = _records(busy(tmp_path))
    i = next(k for k, r in enumerate(recs) if r["type"] == "message" and r.get("kind") == "request" and k > 6
             and not {"findings", "raw", "raw_b64", "eol", "session"} & r.keys())       # the common shape
    recs[i] = dict(recs[i], **{field: value})
    for rules in (recs[0].get("rules"), "sha256:0"):     # reused annotations, and re-annotated
        path = _write(tmp_path / f"{field}.jsonl", [dict(recs[0], rules=rules)] + recs[1:])
        with pytest.raises(CaptureReadError) as want:
            check_capture(str(path))
        assert field in str(want.value)
        for reuse in (True, False):
            for workers in (1, 2):
                with pytest.raises(CaptureReadError) as got:
                    parallel.check_capture(str(path), reuse=reuse, workers=workers)
                assert str(got.value) == str(want.value), (rules, reuse, workers)


_DROP = object()
#: members of a message record of the common shape set to another value (_DROP: removed), or added
MEMBER_EDITS = [("rev", None), ("rev", 5), ("rev", _DROP), ("rev", ""), ("dir", "x"), ("dir", None), ("kind", None), ("kind", 7),
                ("kind", "other"), ("method", 3), ("method", None), ("method", _DROP), ("link", 2), ("link", "a"), ("offset", "zz"),
                ("transport", {}), ("transport", 1), ("extra", 1), ("members", []), ("seq", "9"), ("t_us", 1.5), ("json", _DROP),
                ("json", [1]), ("json", None), ("eol", "\r\n"), ("session", "s"), ("raw", "{}\n"), ("findings", []), ("pair", None),
                ("raw", None), ("raw_b64", None), ("raw_b64", 5)]


@pytest.mark.parametrize("which", ["request", "response"])
@pytest.mark.parametrize(("field", "value"), MEMBER_EDITS)
def test_a_common_message_record_edited_in_one_member(tmp_path: Path, which: str, field: str, value: Any) -> None:
    """The fast scan tells the common message record (check/scan.py's
    PLAIN_KEYS and member types) from every other one: a record of that shape
    edited in one member gets the reference's report, or its error words."""
    recs = _records(busy(tmp_path))
    i = next(k for k, r in enumerate(recs) if r["type"] == "message" and r.get("kind") == which and k > 6 and r.keys() <= PLAIN_KEYS)
    recs[i] = {k: v for k, v in recs[i].items() if k != field} | ({} if value is _DROP else {field: value})
    path = _write(tmp_path / "edited.jsonl", recs)

    def outcome(fn: Any) -> Any:
        try:
            rep = fn()
        except CaptureReadError as exc:
            return str(exc)
        return None if rep is None else _shape(rep)

    want = outcome(lambda: check_capture(str(path)))
    assert outcome(lambda: parallel.check_capture(str(path), workers=1)) == want
    for k in (None, i - 1, i, i + 1):
        got = outcome(lambda k=k: _split(path, k, 3)[0])
        assert got is None or got == want, k


_KEYS = sorted(PLAIN_KEYS | {"raw", "raw_b64", "eol", "findings", "session", "transport", "members", "", "Type"})


@given(st.lists(st.sampled_from(_KEYS), unique=True))
def test_the_common_record_key_test_is_the_key_set_test(keys: list[str]) -> None:
    """Scan.run's key test (PLAIN_KEYS.issuperset of the parsed record)
    answers as ``rec.keys() <= PLAIN_KEYS``, for orjson's parsed keys too."""
    rec = orjson.loads(orjson.dumps(dict.fromkeys(keys, 0)))
    assert PLAIN_KEYS.issuperset(rec) == (rec.keys() <= PLAIN_KEYS) == set(keys).issubset(PLAIN_KEYS)


DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_the_example_captures_at_every_split(name: str) -> None:
    """HTTP captures and the format sample, as checked in (other rules: re-annotated)."""
    _same_at_every_split(DATA / name, keeps=(3,))
    assert parallel._fast(str(DATA / name), 3, True, 1, reuse=False) is not None


def test_big_integer_ids_at_every_split(tmp_path: Path) -> None:
    """Ids beyond 64 bits (orjson reads them as floats; the reader re-parses such records exactly)."""
    big, u64, i64 = 2**80 + 1, 2**64 + 5, -(2**63) - 1
    path = record(tmp_path / "big.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % big), c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % u64),
        s2c(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % big), c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i64),
        s2c(b'{"jsonrpc":"2.0","id":%d,"result":{"x":1}}\n' % (big + 1)), c2s(b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}\n'),
        s2c(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % u64), ("exit", 0)], end=True)
    _same_at_every_split(path, must_scan=True)
    # a batch record: its members' shape checks are the reference's (batch_shapes.py; the scan gives it up)
    batch = path.with_name("batch.jsonl")
    batch.write_bytes(record(tmp_path / "src.jsonl", handshake() + [c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % u64),
                                                                    s2c(b'[{"jsonrpc":"2.0","id":%d,"result":{}}]\n' % u64)]).read_bytes())
    _same_at_every_split(batch)
    killed = record(tmp_path / "killed.jsonl", handshake() + [c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % big)], end=False)
    _same_at_every_split(killed, must_scan=True)


def test_gzip_captures(tmp_path: Path) -> None:
    """Scanned as they are decompressed; a stream that ends early is a cut last line."""
    import gzip

    src = busy(tmp_path, gap=False)
    for name, data in (("whole.jsonl.gz", gzip.compress(src.read_bytes())), ("cut.jsonl.gz", gzip.compress(src.read_bytes())[:-200])):
        path = tmp_path / name
        path.write_bytes(data)
        for reuse in (True, False):
            assert parallel._fast(str(path), 3, True, 2, reuse) is not None
            want = check_capture(str(path), 3, reuse=reuse)
            assert _shape(parallel.check_capture(str(path), 3, reuse=reuse)) == _shape(want)
    assert check_capture(str(tmp_path / "cut.jsonl.gz")).truncated


def test_without_a_second_process_or_when_it_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No fork to be had, or a child that dies: this process scans it all, same report."""
    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)
    path = busy(tmp_path, gap=False)
    want = _shape(check_capture(str(path)))

    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    with monkeypatch.context() as m:
        m.setattr(parallel.os, "fork", no_fork)
        assert _shape(parallel.check_capture(str(path), workers=2)) == want

    def broken(self: Any, *a: Any) -> None:
        raise MemoryError

    monkeypatch.setattr(parallel._Child, "_run", broken)
    assert _shape(parallel.check_capture(str(path), workers=2)) == want


def test_progress_counts_every_byte_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress line's bytes read (capture/source.bytes_read): the child's half counted too."""
    from mcptap.capture.source import bytes_read

    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)
    path = busy(tmp_path, gap=False)
    data = path.read_bytes()
    records = len(data) - len(data.split(b"\n", 1)[0]) - 1
    for workers in (1, 2):
        before = bytes_read()
        parallel.check_capture(str(path), workers=workers)
        assert bytes_read() - before == records
    before = bytes_read()
    check_capture(str(path))
    assert bytes_read() - before == records              # as the reference reader counts


def _hand_cut(path: Path, stream: bytes, cuts: list[tuple[int, str]], gap_at: int | None) -> Path:
    """A stdio capture of the handshake, then ``stream`` (s2c lines) cut at
    ``cuts`` (offset, how: "chunk" or "message"; a "message" piece that is
    not one whole JSON line is stored as a chunk), a c2s request after every
    third piece, optionally a gap record before piece ``gap_at``, an eof and
    an end record: as a hand-edited or damaged capture may hold them."""
    recs: list[dict[str, Any]] = [{"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "0.1.0",
                                   "started": "2026-01-01T00:00:00.000000Z", "transport": "stdio", "target": {"argv": ["x"]}}]
    offs = {"c2s": 0, "s2c": 0}
    seq = [0]

    def add(kind: str, d: str, data: bytes) -> None:
        seq[0] += 1
        r: dict[str, Any] = {"type": kind, "seq": seq[0], "t_us": seq[0] * 10, "dir": d}
        value = None
        if kind == "message" and data.endswith(b"\n") and data.count(b"\n") == 1:
            try:
                value = orjson.loads(data)
            except orjson.JSONDecodeError:
                value = None
        if kind == "message" and value is not None and orjson.dumps(value) + b"\n" == data:
            r.update(kind="notification", json=value, offset=offs[d])
        else:
            r.update(type="chunk", offset=offs[d], data=data.decode("utf-8", "replace"))
        offs[d] += len(data)
        recs.append(r)

    for d, data in handshake():
        add("message", d, data)
    at = 0
    for i, (end, how) in enumerate(cuts + [(len(stream), "message")]):
        if i == gap_at:
            seq[0] += 1
            recs.append({"type": "gap", "seq": seq[0], "t_us": seq[0] * 10, "dir": "s2c", "reason": "test", "bytes": 0})
        if end > at:
            if how == "message" and i % 4 == 1:
                add("chunk", "s2c", b"xx")           # a cut line the next record continues (hand-edited)
            add(how, "s2c", stream[at:end])
            at = end
        if i % 3 == 2:
            add("message", "c2s", req(100 + i, "ping"))
    seq[0] += 1
    recs.append({"type": "eof", "seq": seq[0], "t_us": seq[0] * 10, "dir": "s2c"})
    seq[0] += 1
    recs.append({"type": "end", "seq": seq[0], "t_us": seq[0] * 10})
    return _write(path, recs)


def test_re_framed_message_records_at_every_kind_of_cut(tmp_path: Path) -> None:
    """While re-framing (after a chunk record), a message record whose
    direction's framer holds nothing is taken as its own line (FullScan,
    ``NewlineFramer.whole_line``), one that follows a cut line is framed with
    it: cut anywhere, with a gap or not, FullScan gives the reference's report."""
    import random

    lines = [note("notifications/message", {"level": "info", "data": f"m{i}"}) for i in range(40)]
    lines[7] = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"loud"}}\n'   # a finding
    lines[20] = b"not json\n"
    lines[30] = res(5)                                                                          # unmatched
    stream = b"".join(lines)
    starts = [sum(len(x) for x in lines[:i]) for i in range(len(lines))]
    rnd = random.Random(13)
    for trial in range(60):
        points = sorted(rnd.sample(range(1, len(stream)), 12) + rnd.sample(starts[1:], 10))
        cuts = [(p, rnd.choice(("chunk", "message", "message"))) for p in points]
        cuts[0] = (cuts[0][0], "chunk")          # re-framing from early on
        path = _hand_cut(tmp_path / f"cut{trial}.jsonl", stream, cuts, rnd.choice([None, 3, 9]))
        kinds = [r["type"] for r in _records(path)]
        assert "chunk" in kinds and kinds.count("message") > 5
        for keep in (1, 3):
            want = _shape(check_capture(str(path), keep, reuse=False))
            assert parallel._fast(str(path), keep, True, 1, reuse=False) is not None
            assert _shape(parallel.check_capture(str(path), keep, reuse=False, workers=1)) == want, (trial, keep)


def _times(edit: Any) -> Any:
    def fn(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        msgs = [r for r in rs if r.get("type") == "message"]
        edit(rs, msgs)
        return rs
    return fn


@pytest.mark.parametrize("name, edit, words", [
    ("negative", lambda rs, ms: ms[9].update(t_us=-5), "t_us -5, a negative time"),
    ("2**63", lambda rs, ms: ms[9].update(t_us=2**63), "t_us 9223372036854775808, 2.92e+05 years"),
    ("back-an-hour", lambda rs, ms: [m.update(t_us=m["t_us"] + 3_600_000_000) for m in ms[:9]], "3599.999 s before message record seq 10 (t_us 3600010000)"),
    ("end-negative", lambda rs, ms: rs[-1].update(t_us=-1), "end record seq"),
    ("stderr-huge", lambda rs, ms: next(r for r in rs if r.get("type") == "stderr").update(t_us=2**62), "stderr record seq"),
])
def test_an_impossible_t_us_is_a_capture_finding_at_every_split(tmp_path: Path, name: str, edit: Any, words: str) -> None:
    """t_us counts µs since the capture started on a monotonic clock
    (docs/capture-format.md): a negative one, one beyond any run of a tap,
    or message times going back a long way are an edited or damaged
    capture, reported as such by every path of check, split anywhere."""
    path = _edited(tmp_path, name, _times(edit))
    rep = check_capture(str(path))
    g = rep.groups["capture.impossible_time"]
    assert g.severity == "error" and words in g.places[0].message, g.places[0].message
    assert rep.duration_us < 2 * 3600 * 10**6           # an impossible time is no duration
    _same_at_every_split(path, keeps=(2,))


def test_message_times_that_go_back_a_little_pass(tmp_path: Path) -> None:
    """Two directions read by two threads can be stamped a moment out of
    order (a read, then its hand-over): not a finding, and the fast scans
    still take the capture (no fall back to the reference)."""
    def edit(rs: list[dict[str, Any]], ms: list[dict[str, Any]]) -> None:
        ms[9]["t_us"] = max(0, ms[8]["t_us"] - 2_000)
    path = _edited(tmp_path, "jitter", _times(edit))
    assert "capture.impossible_time" not in check_capture(str(path)).groups
    _same_at_every_split(path, must_scan=True, keeps=(2,))


def test_at_most_five_impossible_times_are_reported(tmp_path: Path) -> None:
    path = _edited(tmp_path, "all", _times(lambda rs, ms: [m.update(t_us=-1) for m in ms]))
    assert check_capture(str(path)).groups["capture.impossible_time"].count == 5
    _same_at_every_split(path, keeps=(2,))
