"""The annotator and recorder never raise on arbitrary peer bytes, and the
capture reproduces every byte (property tests)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.format import message_from_record
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder

KEYS = ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "_meta",
        "progressToken", "requestId", "progress", "capabilities", "protocolVersion"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS), c, max_size=5),
    max_leaves=12,
)


@st.composite
def messages(draw):
    import orjson
    v = draw(json_values)
    if draw(st.booleans()) and isinstance(v, dict):
        v["jsonrpc"] = "2.0"
    return orjson.dumps(v) + draw(st.sampled_from([b"\n", b"\r\n"]))


chunks = st.lists(st.tuples(st.sampled_from([Direction.C2S, Direction.S2C]), st.one_of(messages(), st.binary(max_size=64))), max_size=25)


@settings(max_examples=200, deadline=None)
@given(chunks)
def test_recorder_never_raises_and_loses_nothing(tmp_path_factory, events) -> None:
    path = tmp_path_factory.mktemp("cap") / "c.jsonl"
    t = {"v": 0}
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", clock=lambda: t["v"], started="2026-01-01T00:00:00.000000Z")
    sent = {Direction.C2S: b"", Direction.S2C: b""}
    for d, data in events:
        t["v"] += 10
        rec.stdio_bytes(d, data)
        sent[d] += data
    rec.stdio_eof(Direction.C2S)
    rec.stdio_eof(Direction.S2C)
    rec.close(exit_code=0)
    cap = read_capture(str(path))
    assert cap.end is not None and not cap.truncated
    for d in Direction:
        got = b"".join(message_from_record(r).raw for r in cap.records if r["type"] == "message" and r["dir"] == d.value)
        assert got == sent[d]
