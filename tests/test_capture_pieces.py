"""Record lines made in pieces (capture/pieces.py): byte-identical to the line
the writer makes from the whole record, for any payload (text with escapes and
multi-byte characters cut between pieces, or bytes stored as base64)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture import pieces
from mcptap.capture.writer import CaptureWriter
from mcptap.model import UNPARSED, Direction, Finding, Kind, Message, Severity
from mcptap.records import MessageRecord

_payloads = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=120).map(lambda s: s.encode("utf-8")),
    st.lists(st.sampled_from(["\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\u2028", "a"]), max_size=60)
    .map(lambda x: "".join(x).encode("utf-8")),
)


def message(raw: bytes) -> Message:
    return Message(seq=3, t_us=17, direction=Direction.S2C, raw=raw, value=UNPARSED, kind=Kind.NON_JSON, method="x/\"y\"",
                   findings=[Finding("m.code", Severity.WARN, "a \x01 message")], transport={"sse": {"bytes": len(raw)}})


def whole_line(rec: dict) -> bytes:
    return orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)


@settings(max_examples=300, deadline=None)
@given(raw=_payloads, piece=st.integers(1, 9))
def test_pieces_equal_the_whole_line(raw, piece):
    old = pieces.PIECE, pieces._B64_PIECE
    pieces.PIECE, pieces._B64_PIECE = piece, 3 * piece
    try:
        deferred = pieces.Deferred()
        rec = MessageRecord(message(raw), b"").to_json(encode=deferred)
        got = deferred.line(rec)
        assert got is not None
        line = b"".join(got)
    finally:
        pieces.PIECE, pieces._B64_PIECE = old
    assert line == whole_line(MessageRecord(message(raw), b"").to_json())
    assert pieces.is_utf8(raw) == ("raw" in orjson.loads(line))


def test_unused_encoder_or_unencodable_record_means_whole_write():
    d = pieces.Deferred()
    assert d.line({"type": "message"}) is None
    rec = {"type": "message", "id": 2 ** 70}
    d(b"abc", "raw", rec)
    assert d.line(rec) is None       # orjson refuses the big integer: written whole, by the stdlib


def test_write_pieces_after_queued_records(tmp_path: Path):
    path = tmp_path / "c.jsonl"
    w = CaptureWriter.open(str(path))
    w.write({"type": "note", "seq": 1})
    d = pieces.Deferred()
    rec = MessageRecord(message(b"\xff" * 10), b"").to_json(encode=d)
    lines = d.line(rec)
    assert lines is not None
    w.write_pieces(lines)
    w.close()
    got = path.read_bytes().splitlines()
    assert orjson.loads(got[0]) == {"type": "note", "seq": 1}
    assert orjson.loads(got[1])["raw_b64"] == "/////////////w=="


def test_failed_piece_write_leaves_no_partial_line(tmp_path: Path, monkeypatch):
    path = tmp_path / "c.jsonl"
    w = CaptureWriter.open(str(path))
    w.write({"type": "note", "seq": 1})
    w.flush()
    calls = []

    def failing(data):
        calls.append(1)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return os.write(w._fd, data)

    monkeypatch.setattr(w, "_write", failing)
    w.write_pieces(iter([b'{"type":"message","raw":"', b"abc", b'"}\n']))
    assert w.failed == "No space left on device" and w.dropped == 1
    monkeypatch.undo()
    w.write({"type": "note", "seq": 3})
    w.close()
    recs = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    # the partial line is gone; the next write is preceded by the gap record saying one record was lost
    assert [r["type"] for r in recs] == ["note", "gap", "note"] and recs[1]["dropped_records"] == 1


@settings(max_examples=300, deadline=None)
@given(raw=_payloads, parts=st.lists(_payloads, min_size=1, max_size=3), piece=st.integers(1, 9), big=st.booleans())
def test_a_lazy_event_text_in_pieces_equals_the_whole_line(tmp_path_factory, raw, parts, piece, big):
    """A message whose ``transport.sse.raw`` is a LazyText (an SSE event's bytes,
    each part decoded on its own with U+FFFD for bad bytes): its line, written
    in pieces with or without its payload deferred too, is the line of the same
    record holding the text."""
    from mcptap.protocol.utf8 import LazyText

    d = tmp_path_factory.mktemp("lazy")
    lazy = LazyText(tuple(parts))
    msg = message(raw)
    msg.transport["sse"]["raw"] = lazy
    old = pieces.PIECE, pieces._B64_PIECE, pieces.STREAM_ABOVE
    pieces.PIECE, pieces._B64_PIECE = piece, 3 * piece
    pieces.STREAM_ABOVE = -1 if big else 1 << 30
    try:
        w = CaptureWriter.open(str(d / "c.jsonl"))
        pieces.write_message(w, msg, b"")
        w.close()
    finally:
        pieces.PIECE, pieces._B64_PIECE, pieces.STREAM_ABOVE = old
    assert msg.transport["sse"]["raw"] is lazy
    msg.transport["sse"]["raw"] = "".join(p.decode("utf-8", "replace") for p in parts)
    assert (d / "c.jsonl").read_bytes() == whole_line(MessageRecord(msg, b"").to_json())


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_payloads, max_size=5), piece=st.integers(1, 9))
def test_a_payload_in_several_buffers_makes_the_line_of_the_joined_payload(parts, piece):
    """A chunk record written from the buffers it is made of (a framer's line head
    and the chunk after it, never joined): the line of the joined bytes."""
    from mcptap.records import Chunk

    joined = b"".join(parts)
    old = pieces.PIECE, pieces._B64_PIECE
    pieces.PIECE, pieces._B64_PIECE = piece, 3 * piece
    try:
        deferred = pieces.Deferred()
        rec = Chunk(4, 9, "s2c", 7, b"").to_json(encode=lambda _, key, d: deferred([bytearray(p) for p in parts], key, d))
        got = deferred.line(rec)
        assert got is not None
        line = b"".join(got)
    finally:
        pieces.PIECE, pieces._B64_PIECE = old
    assert line == whole_line(Chunk(4, 9, "s2c", 7, joined).to_json())
