"""``record --redact`` and bytes stored unframed (``chunk`` records, analysis behind a
flood): the relay's reads end anywhere, so a chunk boundary used to cut a key
(``…"pas`` | ``sword":"hunter2…"``: the value stayed in clear), a value (its tail
stayed) or a token (almost all of it stayed). A redacted capture's chunk records now
hold whole lines (``recorder_chunks``); the stream's bytes, offsets and digests still
add up (``check`` stays clean), and ``scrub`` of such a capture finds them too (found
by a breaker helper)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.redact.default import default_redactor
from mcptap.redact.scrub import Scrubber
from scripted import handshake, req
from test_redact_engine import SECRETS

GH = SECRETS["github"]
PW = "hunter2hunter2"
NOTE = ('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"token ' + GH
        + ' here","password":"' + PW + '"}}\n').encode()
#: pieces of each secret that must never be in the capture (a cut leaves one of these behind)
PIECES = [PW[4:], PW[:-4], GH[4:16], GH[-12:]]


def _live(path: Path, pieces: list[tuple[Direction, bytes]], end: str = "close") -> Path:
    w = CaptureWriter.open(str(path))
    w.transform = Scrubber(default_redactor()).transform
    rec = Recorder(w, "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    for kind, data in handshake():
        rec.stdio_bytes(Direction(kind), data)
    for d, data in pieces:
        rec.stdio_unframed(d, data)
    if end == "gap":
        rec.lost(Direction.S2C, 10)
    if end in ("gap", "eof"):
        rec.stdio_eof(Direction.S2C)
    rec.close()
    return path


def _assert_whole(path: Path, sent: bytes) -> None:
    text = path.read_text()
    for piece in PIECES:
        assert piece not in text, f"{piece!r} in clear"
    cap = read_capture(str(path))
    assert cap.end is not None
    # the stream the chunk records hold, in order, without a hole or an overlap
    pos = None
    stream = b""
    for r in cap.records:
        if r["type"] == "chunk" and r["dir"] == "s2c":
            assert pos is None or r["offset"] == pos
            data = decode_bytes(r, "data") or b""
            stream += data
            pos = r["offset"] + len(data)
    assert stream.count(b"\n") == sent.count(b"\n")
    r = CliRunner().invoke(mcptap, ["check", str(path), "--fail-on", "never", "--format", "json"])
    for bad in ("capture.digest_mismatch", "capture.out_of_sequence", "capture.offset", "capture.cut_line", "capture.bytes"):
        assert bad not in r.output, r.output


@pytest.mark.parametrize("where", ["pas", "hunt", "ghp_Zq", "ghp_Zq3xY9w8V7u6T5s4", '"}'])
def test_a_chunk_boundary_does_not_cut_a_secret_out_of_redaction(tmp_path: Path, where: str) -> None:
    flood = NOTE * 3
    cut = flood.index(where.encode(), len(NOTE)) + len(where)     # in the second note
    path = _live(tmp_path / "live.jsonl", [(Direction.S2C, flood[:cut]), (Direction.S2C, flood[cut:])])
    _assert_whole(path, flood)


def test_every_cut_of_a_flood_read_a_few_bytes_at_a_time(tmp_path: Path) -> None:
    flood = NOTE * 4
    step = 37           # reads of odd sizes: cuts fall everywhere in the secrets
    pieces = [(Direction.S2C, flood[i:i + step]) for i in range(0, len(flood), step)]
    path = _live(tmp_path / "steps.jsonl", pieces)
    _assert_whole(path, flood)


@pytest.mark.parametrize("end", ["close", "eof", "gap"])
def test_an_unfinished_last_line_is_stored_before_the_stream_ends(tmp_path: Path, end: str) -> None:
    """The held unfinished line goes out before the eof, gap or end record: the capture
    still holds every forwarded byte (the digests agree)."""
    flood = NOTE * 2 + NOTE[:40]
    path = _live(tmp_path / f"{end}.jsonl", [(Direction.S2C, flood[:100]), (Direction.S2C, flood[100:])], end)
    cap = read_capture(str(path))
    held = b"".join(decode_bytes(r, "data") or b"" for r in cap.records if r["type"] == "chunk")
    assert held.endswith(NOTE[:40]) and b"hunter2" not in held
    kinds = [r["type"] for r in cap.records]
    last_chunk = max(i for i, k in enumerate(kinds) if k == "chunk")
    assert kinds[last_chunk + 1] == ("gap" if end == "gap" else "eof" if end == "eof" else "end")
    r = CliRunner().invoke(mcptap, ["check", str(path), "--fail-on", "never"])
    assert "digest" not in r.output, r.output


def test_stored_ends_do_not_count_a_held_line(tmp_path: Path) -> None:
    """The relay's spill file keeps bytes until the capture holds them: a held line is not held yet."""
    w = CaptureWriter.open(str(tmp_path / "s.jsonl"))
    w.transform = Scrubber(default_redactor()).transform
    rec = Recorder(w, "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    rec.stdio_unframed(Direction.S2C, NOTE + NOTE[:50])
    rec.flush()
    assert rec.stored_ends() == (0, len(NOTE))
    rec.stdio_unframed(Direction.S2C, NOTE[50:])
    assert rec.stored_ends() == (0, 2 * len(NOTE))
    rec.close()


def test_unredacted_capture_keeps_its_chunks_as_read(tmp_path: Path) -> None:
    """Without redaction the records keep the relay's reads (nothing to hold back)."""
    rec = Recorder(CaptureWriter.open(str(tmp_path / "p.jsonl")), "stdio", {"argv": ["srv"]}, clock=lambda: 1000,
                   started="2026-01-01T00:00:00Z")
    rec.stdio_unframed(Direction.S2C, NOTE[:50])
    rec.stdio_unframed(Direction.S2C, NOTE[50:])
    rec.close()
    chunks = [r for r in read_capture(str(tmp_path / "p.jsonl")).records if r["type"] == "chunk"]
    assert [len(decode_bytes(r, "data") or b"") for r in chunks] == [50, len(NOTE) - 50]


def test_a_line_past_the_bound_still_loses_the_rest_of_a_cut_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than the hold bound is stored as it comes; the scrubber scans the
    unfinished line before with the next chunk, so the rest of a token cut there goes too."""
    import mcptap.recorder_chunks as rc

    monkeypatch.setattr(rc, "HOLD", 64)
    line = b'{"jsonrpc":"2.0","method":"x","params":{"pad":"' + b"a" * 100 + b'","t":"' + GH.encode() + b'"}}\n'
    cut = line.index(GH.encode()) + 12
    path = _live(tmp_path / "long.jsonl", [(Direction.S2C, line[:cut]), (Direction.S2C, line[cut:])])
    assert GH[12:] not in path.read_text()


def test_scrub_of_a_capture_cut_mid_secret_finds_them_whole(tmp_path: Path) -> None:
    """Offline: ``scrub`` re-frames chunk records into messages before it redacts."""
    flood = NOTE * 3
    cut = flood.index(b"pas", len(NOTE)) + 3
    src = tmp_path / "plain.jsonl"
    rec = Recorder(CaptureWriter.open(str(src)), "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    for kind, data in handshake():
        rec.stdio_bytes(Direction(kind), data)
    rec.stdio_bytes(Direction.C2S, req(2, "ping"))
    rec.stdio_unframed(Direction.S2C, flood[:cut])
    rec.stdio_unframed(Direction.S2C, flood[cut:])
    rec.close()
    assert PW in src.read_text()
    out = tmp_path / "s.jsonl"
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    for piece in PIECES:
        assert piece not in out.read_text()
