"""The typed capture records (mcptap/records/): each record type's JSON is
written by its class, ``from_json`` is the exact inverse for what mcptap
writes (same keys, same order), and a malformed record is refused with one
CaptureReadError naming its type and seq."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.capture.reader import CaptureStream
from mcptap.capture.writer import CaptureWriter
from mcptap.errors import CaptureReadError
from mcptap.model import Direction
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.records import RECORD_TYPES, Chunk, Context, End, Eof, Gap, Header, Http, MessageRecord, Note, Process, Stderr, parse

ROOT = Path(__file__).resolve().parents[1]
C2S, S2C = Direction.C2S, Direction.S2C


def _every_type(path: Path) -> Path:
    """A capture holding every record type, written by the live recorder."""
    t = {"v": 0}

    def tick() -> int:
        t["v"] += 10
        return t["v"]

    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["srv"]}, clock=tick, started="2026-01-01T00:00:00Z")
    rec.process("spawn", pid=1, argv=["srv"])
    rec.assume(phase="operating", revision="2025-06-18")
    rec.stdio_bytes(C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')
    rec.stdio_bytes(S2C, b'[{"jsonrpc":"2.0","id":1,"result":{}}]\n\xff banner\n')
    rec.stderr(b"\xfe\xff no newline")
    rec.stdio_unframed(C2S, b'{"jsonrpc":"2.0","id":2,')
    rec.lost(C2S, 7)
    rec.http(event="request", exchange=1, conn=1)
    rec.http(informational=True, event="response", exchange=1, status=100)
    rec.note("otlp", message="failed", endpoint="http://x")
    rec.gap("recorder failed: boom")
    rec.segment("episode-2")
    rec.stdio_eof(C2S)
    rec.exit(code=0)
    rec.close(exit_code=0, tap={"502": 1})
    return path


def _corpus(tmp_path: Path) -> list[Path]:
    return [_every_type(tmp_path / "every.jsonl"), *sorted((ROOT / "captures").glob("*.jsonl")), *sorted((ROOT / "tests" / "data").glob("*.jsonl"))]


def test_every_record_round_trips_with_its_key_order(tmp_path: Path) -> None:
    seen = set()
    for path in _corpus(tmp_path):
        stream = CaptureStream(str(path))
        records = [stream.header, *stream]
        for r in records:
            typed = parse(r)
            seen.add(r["type"])
            assert type(typed).__name__ in {"Header", "MessageRecord", "Chunk", "Stderr", "Process", "Eof", "Context", "Http", "Note", "Gap", "End"}
            back = typed.to_json()
            if path.parent.name == "data":
                # hand-written and early-v1 samples (no offset; severities under "findings"): nothing lost, defaults added
                assert {k: back[k] for k in r} == r
                continue
            assert list(back.items()) == list(r.items()), (path.name, r)
    assert seen == set(RECORD_TYPES)


def test_reannotated_records_round_trip_too(tmp_path: Path) -> None:
    path = _every_type(tmp_path / "every.jsonl")
    stream = CaptureStream(str(path))
    for r in reannotate(stream.header, stream, reuse=False):
        assert list(parse(r).to_json().items()) == list(r.items())


def test_writer_gap_records_are_gaps() -> None:
    assert Gap(None, None, "capture write failed: ENOSPC", dropped_records=3).to_json() == \
        {"type": "gap", "seq": None, "reason": "capture write failed: ENOSPC", "dropped_records": 3}
    g = Gap.from_json({"type": "gap", "seq": None, "reason": "x", "dropped_records": 2})
    assert g.seq is None and g.t_us is None and g.dropped_records == 2


@given(st.binary(max_size=64))
def test_bytes_fields_round_trip_exactly(data: bytes) -> None:
    for rec in (Chunk(1, 2, "c2s", 0, data), Stderr(1, 2, data)):
        d = orjson.loads(orjson.dumps(rec.to_json()))
        assert type(rec).from_json(d) == rec


@pytest.mark.parametrize("bad, why", [
    ({"type": "chunk", "seq": 1, "t_us": 0, "dir": "up", "offset": 0, "data": ""}, "dir 'up'"),
    ({"type": "chunk", "seq": 1, "t_us": 0, "dir": "c2s", "offset": 0}, "no data"),
    ({"type": "chunk", "seq": 1, "t_us": 0, "dir": "c2s", "offset": 0, "data_b64": "!!"}, "not base64"),
    ({"type": "stderr", "seq": "1", "t_us": 0, "data": ""}, "seq '1' is not an integer"),
    ({"type": "stderr", "seq": 1, "t_us": 0, "data": "", "findings": [{"severity": "error"}]}, "findings"),
    ({"type": "process", "seq": 1, "t_us": 0}, "event"),
    ({"type": "eof", "seq": 1, "t_us": True, "dir": "c2s"}, "t_us True"),
    ({"type": "context", "seq": 1, "t_us": 0, "state": []}, "state"),
    ({"type": "http", "seq": 1, "t_us": 0, "exchange": 1}, "event"),
    ({"type": "note", "seq": 1, "t_us": 0}, "source"),
    ({"type": "gap", "seq": 1.5, "reason": "x"}, "seq 1.5"),
    ({"type": "end", "seq": 2, "t_us": 0, "severities": []}, "severities"),
    ({"type": "header", "format": "mcptap-capture"}, "version"),
    ({"type": "message", "seq": 3, "t_us": 0, "dir": "c2s", "kind": "request"}, "neither json nor raw"),
    ({"type": "message", "seq": 3, "t_us": 0, "dir": "c2s", "kind": "nonsense", "json": {}}, "seq 3"),
    ({"type": "frobnicate", "seq": 1}, "not a capture record type"),
])
def test_malformed_records_are_refused_with_one_error(bad: dict, why: str) -> None:
    with pytest.raises(CaptureReadError, match=why.replace("(", r"\(")):
        parse(bad)


def test_typed_fields() -> None:
    h = Header.from_json({"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "0", "started": "s",
                          "transport": "http", "target": {"url": "u"}, "rules": "r", "name": "n"})
    assert h.transport == "http" and h.extra == {"rules": "r", "name": "n"}
    m = MessageRecord.from_json({"type": "message", "seq": 4, "t_us": 9, "dir": "s2c", "kind": "response", "id": 1, "pair": 3,
                                 "latency_us": 5, "json": {"jsonrpc": "2.0", "id": 1, "result": {}}, "eol": "", "offset": 0})
    assert (m.seq, m.t_us, m.message.pair, m.message.raw, m.eol) == (4, 9, 3, b'{"jsonrpc":"2.0","id":1,"result":{}}', b"")
    assert Http(1, 2, {"informational": True, "event": "response"}).event == "response"
    assert Process.from_json({"type": "process", "seq": 1, "t_us": 0, "event": "exit", "code": 0}).fields == {"code": 0}
    assert Eof.from_json({"type": "eof", "seq": 1, "t_us": 0, "dir": "s2c", "session": "k"}).session == "k"
    assert Context(1, 0, {"phase": "operating"}).to_json()["state"] == {"phase": "operating"}
    assert Note(1, 0, "otlp", {"spans": 2}).to_json() == {"type": "note", "seq": 1, "t_us": 0, "source": "otlp", "spans": 2}
    end = End.from_json({"type": "end", "seq": 9, "t_us": 1, "severities": {"error": 1}, "codes": {"b": 1, "a": 2}, "pending": [],
                         "exit_code": 3, "incomplete": True})
    assert end.exit_code == 3 and end.extra == {"incomplete": True} and list(end.to_json()["codes"]) == ["a", "b"]


def _shape(line: bytes) -> bytes:
    """A record line with what today's rules decide reduced to codes (finding
    messages, counts by severity) and the rules fingerprint blanked: the rest,
    key order included, is the record types' own JSON."""
    r = orjson.loads(line)
    if r["type"] == "header":
        r["rules"] = "RULES"
    if isinstance(r.get("findings"), list):
        r["findings"] = [f["code"] for f in r["findings"]]
    if r["type"] == "end":
        r["severities"] = "SEVERITIES"
        r["unanswered"] = [f["code"] for f in r.get("unanswered", ())]
    return orjson.dumps(r)


def test_the_live_recorder_writes_every_record_type_as_it_always_did(tmp_path: Path) -> None:
    """Byte for byte (but for rule-dependent texts) what the recorder wrote when
    the record types became classes: tests/data/records/every-record-type.jsonl.
    A change here changes every capture mcptap writes: the format (and
    docs/capture-format.md) changes with it, or the change is a bug."""
    got = _every_type(tmp_path / "every.jsonl").read_bytes().splitlines()
    want = (ROOT / "tests" / "data" / "records" / "every-record-type.jsonl").read_bytes().splitlines()
    assert [_shape(x) for x in got] == [_shape(x) for x in want]


def test_queued_records_hold_about_their_own_size(tmp_path: Path) -> None:
    # a flood's chunk is thousands of records queued before one write: each line must be its own
    # size (orjson's OPT_APPEND_NEWLINE bytes kept a ~4 KiB buffer each: 16 MiB per 4,000 lines)
    import tracemalloc

    w = CaptureWriter.open(str(tmp_path / "c.jsonl"))
    rec = {"type": "message", "seq": 1, "t_us": 5, "dir": "s2c", "kind": "notification", "json": {"jsonrpc": "2.0", "method": "x"}}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(1000):
            w.write(rec)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    w.flush()
    w.close()
    assert held < 1000 * 400, held
    assert (tmp_path / "c.jsonl").read_bytes().count(b"\n") == 1000
