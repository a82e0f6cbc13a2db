"""Re-annotation rebuilds message and end records from what it computes; every
other field of the record it read survives (a scrubbed record's ``original``,
which ``recover`` needs, the end's ``recorder_error``…)."""

from __future__ import annotations

from pathlib import Path

from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.reannotate import reannotate
from mcptap.reannotate_views import framed
from mcptap.recorder import Recorder
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules
from mcptap.redact.scrub import Scrubber

C2S, S2C = Direction.C2S, Direction.S2C
SECRET = "ghp_" + "abcdefghij" * 3 + "012345"
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"token":"%s"}}}\n' % SECRET.encode()
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n'


def _redacted(path: Path, chunks: bool) -> None:
    w = CaptureWriter.open(str(path))
    w.transform = Scrubber(Redactor(Rules(), Keyer(b"k" * 32))).transform
    rec = Recorder(w, "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z")
    rec.stdio_bytes(C2S, CALL)
    rec.stdio_bytes(S2C, ANSWER)
    if chunks:
        rec.stdio_unframed(C2S, CALL.replace(b'"id":1', b'"id":2'))      # analysis fell behind
    rec.close(exit_code=0, recorder_error="RuntimeError: a bug")


def test_a_re_annotated_message_keeps_its_original_and_the_end_its_own_fields(tmp_path: Path) -> None:
    cap = tmp_path / "red.jsonl"
    _redacted(cap, chunks=False)
    source = read_capture(str(cap)).records
    assert source[0]["original"] == {"offset": 0, "bytes": len(CALL)}
    stream = CaptureStream(str(cap))
    out = list(reannotate(stream.header, stream, shapes=False, reuse=False))
    assert out[0]["original"] == source[0]["original"] and list(out[0])[-2:] == ["offset", "original"]
    end = out[-1]
    assert end["recorder_error"] == "RuntimeError: a bug" and end["exit_code"] == 0 and end["original"] == source[-1]["original"]


def test_scrubbing_a_redacted_capture_with_chunks_keeps_where_its_bytes_were_forwarded(tmp_path: Path) -> None:
    """``mcptap scrub`` re-frames chunk records first (``framed``): the message records before
    them went through re-annotation and lost ``original``, so the copy placed them by the scrubbed
    stream's offsets and a later ``recover`` misjudged which forwarded bytes it holds."""
    cap = tmp_path / "red.jsonl"
    _redacted(cap, chunks=True)
    stream = CaptureStream(str(cap))
    scrubber = Scrubber(Redactor(Rules(), Keyer(b"k" * 32)))
    copy = list(scrubber.records(framed(stream)))
    first = copy[0]
    assert first["type"] == "message" and first["original"] == {"offset": 0, "bytes": len(CALL)}
