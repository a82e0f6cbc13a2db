"""The live stdio recorder and multi-MiB lines: the bytes a framer holds of an
unfinished line go to ``chunk`` records without being held again (joined to
the next chunk, decoded to one text, encoded to one line), and the capture
still holds every byte, in order, at its offsets.

Memory is measured with tracemalloc over the recorder's own work (the input
chunks exist before). ``pieces.PIECE`` is lowered so that orjson's reservation
for one piece (it reserves ~16x a string's length, untouched pages that never
become resident) stays small beside the figures compared."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from mcptap.capture import pieces
from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.records import message_bytes

C2S, S2C = Direction.C2S, Direction.S2C
MIB = 1 << 20
READ = 64 << 10


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pieces, "PIECE", 64 << 10)
    monkeypatch.setattr(pieces, "_B64_PIECE", 3 << 16)


def _recorder(path: Path, long_line: int | None) -> Recorder:
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["srv"]}, clock=lambda: 0, started="2026-01-01T00:00:00Z")
    rec.long_line = long_line
    return rec


def _reads(line: bytes) -> list[bytes]:
    return [line[k:k + READ] for k in range(0, len(line), READ)]


def _line(n: int, tail: bytes = b"") -> bytes:
    return b'{"jsonrpc":"2.0","method":"notifications/x","params":{"blob":"' + tail + b"x" * n + b'"}}\n'


def _peak(work: Callable[[], None]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _stream(path: Path, d: str) -> bytes:
    """A direction's bytes rebuilt from the message and chunk records, checked contiguous."""
    out = bytearray()
    for r in read_capture(str(path)).records:
        if r.get("dir") != d or r["type"] not in ("chunk", "message"):
            continue
        if r["type"] == "chunk":
            assert r["offset"] == len(out)
            out += decode_bytes(r, "data") or b""
        else:
            out += message_bytes(r)
    return bytes(out)


@pytest.mark.parametrize("tail", [b"", b"\\u00e9\xc3\xa9 \xff"])     # text, and bytes stored as base64
def test_a_long_line_head_goes_to_its_record_without_a_second_copy(tmp_path: Path, tail: bytes) -> None:
    long_line = 8 * MIB
    line = _line(10 * MIB, tail)
    reads = _reads(line)
    rec = _recorder(tmp_path / "c.jsonl", long_line)

    def feed() -> None:
        for data in reads:
            rec.stdio_bytes(C2S, data)

    peak = _peak(feed)
    rec.close(exit_code=0)
    # the framer's 8 MiB head is in memory once (it was held twice and more: copied out,
    # then a text and an encoded line beside that copy; with orjson's reservation ~150 MiB)
    assert peak < 2 * long_line, peak
    assert _stream(tmp_path / "c.jsonl", "c2s") == line


def test_bytes_held_when_analysis_falls_behind_are_not_joined_to_the_next_chunk(tmp_path: Path) -> None:
    line = _line(6 * MIB)
    reads = _reads(line)
    head = 48                      # reads framed (3 MiB held: below long_line), then analysis is behind
    rec = _recorder(tmp_path / "c.jsonl", 4 * MIB)
    for data in reads[:head]:
        rec.stdio_bytes(C2S, data)
    held = head * READ

    def behind() -> None:
        for data in reads[head:]:
            rec.stdio_unframed(C2S, data)

    peak = _peak(behind)
    rec.stdio_eof(C2S)
    rec.close(exit_code=0)
    # the held 3 MiB are never copied (they were joined to the next read, and that
    # record's text and line were held beside it: ~44 MiB with orjson's reservation)
    assert peak < held, peak
    assert _stream(tmp_path / "c.jsonl", "c2s") == line
    # the first chunk of the spell carries the held bytes (docs/capture-format.md), written from both buffers
    first = next(r for r in read_capture(str(tmp_path / "c.jsonl")).records if r["type"] == "chunk")
    assert (first["offset"], len(decode_bytes(first, "data") or b"")) == (0, held + READ)
