"""A directed ``gap`` record's bytes were forwarded but not recorded: every
writer and reader of a stdio capture counts them in that direction's stream
(offsets after the gap, the end record's byte count), so a ``--redact``
capture, a scrubbed copy and a recovered capture agree with the plain one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules
from mcptap.redact.scrub import Scrubber
from mcptap.transport.spill import SpillFile

C2S, S2C = Direction.C2S, Direction.S2C
SECRET = "ghp_" + "abcdefghij" * 3 + "012345"
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"token":"%s"}}}\n' % SECRET.encode()
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}\n'
LOST = 500


def _redactor() -> Redactor:
    return Redactor(Rules(), Keyer(b"k" * 32))


def _record(path: Path, redact: bool, end: bool = True) -> None:
    """A session whose s2c stream loses LOST bytes mid-line and whose c2s stream holds a
    secret on both sides of a c2s gap (its placeholder is shorter than the secret)."""
    w = CaptureWriter.open(str(path))
    if redact:
        w.transform = Scrubber(_redactor()).transform
    ticks = iter(range(1000, 10**9, 1000))
    rec = Recorder(w, "stdio", {"argv": ["x"]}, clock=lambda: next(ticks), started="2026-01-01T00:00:00Z",
                   header_extra={"spill": path.name + ".spill"})
    rec.stdio_bytes(C2S, CALL)
    rec.stdio_bytes(S2C, NOTE + b'{"jsonrpc":"2.0","meth')
    rec.lost(S2C, LOST, "test: analysis fell behind")
    rec.stdio_bytes(S2C, b'od":"x"}\n' + NOTE)
    rec.lost(C2S, 77, "test: analysis fell behind")
    rec.stdio_bytes(C2S, CALL)
    if end:
        rec.close(exit_code=0)
    else:
        rec.flush()


def _placed(path: Path) -> dict[str, list[tuple[int, Any]]]:
    """Per direction, (offset, original) of each message/chunk record after the first gap."""
    out: dict[str, list[tuple[int, Any]]] = {"c2s": [], "s2c": []}
    seen = False
    for r in read_capture(str(path)).records:
        seen = seen or r["type"] == "gap"
        if seen and r["type"] in ("message", "chunk"):
            out[r["dir"]].append((r["offset"], r.get("original")))
    return out


def test_a_redacted_capture_counts_a_gap_s_bytes_as_the_plain_one_does(tmp_path: Path) -> None:
    plain, red = tmp_path / "plain.jsonl", tmp_path / "red.jsonl"
    _record(plain, False)
    _record(red, True)
    p, r = read_capture(str(plain)), read_capture(str(red))
    assert p.end is not None and r.end is not None
    assert r.end["s2c"]["bytes"] == p.end["s2c"]["bytes"] == 2 * len(NOTE) + 31 + LOST
    # c2s: the placeholder is shorter than the secret, so the redacted stream is shorter by that,
    # but the gap's 77 bytes count in both
    shrink = p.end["c2s"]["bytes"] - r.end["c2s"]["bytes"]
    assert p.end["c2s"]["bytes"] == 2 * len(CALL) + 77 and 0 < shrink < 2 * len(SECRET)
    assert _placed(red)["s2c"] == _placed(plain)["s2c"] and [o for o, _ in _placed(plain)["s2c"]][0] == len(NOTE) + 22 + LOST
    (off, original), = _placed(red)["c2s"]
    assert original == {"offset": len(CALL) + 77, "bytes": len(CALL)} and off == len(CALL) - shrink // 2 + 77
    # and a scrubbed copy of the plain capture places them the same way
    scrubber = Scrubber(_redactor())
    copied = list(scrubber.records(p.records))
    assert [(x["offset"], x.get("original")) for x in copied if x["type"] in ("message", "chunk") and x["dir"] == "s2c"][-2:] == \
        _placed(red)["s2c"]
    assert copied[-1]["s2c"]["bytes"] == r.end["s2c"]["bytes"] and copied[-1]["c2s"]["bytes"] == r.end["c2s"]["bytes"]


def test_recover_continues_the_stream_after_a_gap_the_capture_already_counts(tmp_path: Path) -> None:
    """A capture whose last record is a gap (analysis fell behind, then mcptap was killed): the
    spill entries after it continue the stream past the gap's bytes; recover used to read the
    gap's bytes as held only in memory and count them a second time."""
    cap = tmp_path / "cap.jsonl"
    w = CaptureWriter.open(str(cap))
    rec = Recorder(w, "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.stdio_bytes(S2C, NOTE)
    rec.lost(S2C, LOST, "test: past the spill bound")
    rec.flush()
    SpillFile(str(tmp_path / "cap.jsonl.spill")).append(1, 7, len(NOTE) + LOST, NOTE)
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0 and "held only in memory" not in out.output, out.output
    c = read_capture(str(cap))
    gaps = [g for g in c.records if g["type"] == "gap"]
    assert [g["bytes"] for g in gaps] == [LOST]
    last = c.records[-1]
    assert last["type"] == "chunk" and last["offset"] == len(NOTE) + LOST and decode_bytes(last, "data") == NOTE


def test_a_stdio_stream_cut_by_a_gap_resumes_at_the_next_line_and_blames_nobody(tmp_path: Path) -> None:
    """The stdio side of the rule the HTTP observer follows (tests/relay/test_http_observe_gap.py):
    the partial line before the hole and the rest of a line after it are chunk records, never a
    message, live and when ``check`` re-frames the capture."""
    cap = tmp_path / "cap.jsonl"
    ticks = iter(range(1000, 10**9, 1000))
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: next(ticks), started="2026-01-01T00:00:00Z")
    rec.stdio_bytes(S2C, NOTE + NOTE[:40])
    rec.lost(S2C, LOST, "test: past the spill bound")
    rec.stdio_bytes(S2C, NOTE[60:] + NOTE)
    rec.close(exit_code=0)
    recs = read_capture(str(cap)).records
    assert [x["type"] for x in recs if x["type"] in ("message", "chunk", "gap")] == ["message", "chunk", "gap", "chunk", "message"]
    assert not [f for x in recs for f in x.get("findings", ())]
    out = CliRunner().invoke(mcptap, ["check", "--full", "--format", "json", str(cap)])
    report = orjson.loads(out.output)["captures"][0]
    assert {c["code"] for c in report["codes"]} == {"capture.gap"}
