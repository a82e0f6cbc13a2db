"""`mcptap recover`: a killed stdio tap's spill file added to its capture
(the SIGKILL end to end: tests/transport/test_stdio_flood.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.transport.spill import SpillFile, entries

A = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}\n'
B = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"b"}}\n'


def _killed_capture(tmp: Path) -> Path:
    """A capture cut off mid-record after A was recorded (no end record)."""
    cap = tmp / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.stdio_bytes(Direction.S2C, A)
    rec.writer.flush()
    with open(cap, "ab") as fp:
        fp.write(b'{"type":"mess')                       # SIGKILL mid-write
    return cap


def test_recover_appends_what_the_capture_lacks_and_marks_the_rest_lost(tmp_path: Path) -> None:
    cap = _killed_capture(tmp_path)
    spill = SpillFile(str(tmp_path / "cap.jsonl.spill"))
    spill.append(1, 7, 0, A)                              # recorded before the kill: skipped
    spill.append(1, 8, len(A) + len(B), B)                # B (at len(A)) was only in memory: a gap
    assert [e[2] for e in entries(str(tmp_path / "cap.jsonl.spill"))] == [0, len(A) + len(B)]
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0, out.output
    c = read_capture(str(cap))
    assert c.end is None and not (tmp_path / "cap.jsonl.spill").exists()
    tail = [r for r in c.records if r["type"] in ("gap", "chunk")]
    assert [r["type"] for r in tail] == ["gap", "gap", "chunk"]           # the cut record, the lost bytes, B
    assert tail[1]["dir"] == "s2c" and tail[1]["bytes"] == len(B)
    assert tail[2]["offset"] == len(A) + len(B) and decode_bytes(tail[2], "data") == B
    seqs = [r["seq"] for r in c.records if r.get("seq") is not None]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    report = orjson.loads(CliRunner().invoke(mcptap, ["check", "--format", "json", str(cap)]).output)["captures"][0]
    assert not report["complete"]


def test_recover_leaves_a_complete_capture_alone(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.stdio_bytes(Direction.S2C, A)
    rec.close(exit_code=0)
    before = cap.read_bytes()
    (tmp_path / "cap.jsonl.spill").write_bytes(b"stale")
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])
    assert out.exit_code == 0 and cap.read_bytes() == before and not (tmp_path / "cap.jsonl.spill").exists()
    out = CliRunner().invoke(mcptap, ["recover", str(cap)])              # nothing left: says so, changes nothing
    assert out.exit_code == 0 and "nothing to recover" in out.output and cap.read_bytes() == before


def test_check_points_an_incomplete_capture_to_recover(tmp_path: Path) -> None:
    cap = _killed_capture(tmp_path)
    text = CliRunner().invoke(mcptap, ["check", str(cap)]).output
    assert "mcptap recover" in text and "cap.jsonl.spill" in text
