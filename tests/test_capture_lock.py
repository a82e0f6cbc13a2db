"""A capture has one writer. `replay -o`, `serve -o` (and two `record -o`
started at the same moment: the stat-then-open refusal had a window) opened a
capture a live tap was writing with O_TRUNC: the live session's header was
gone and two sessions wrote into one file (found by breaker helpers).
CaptureWriter.open now takes an exclusive flock before it truncates; every
reader of liveness and every atomic output (rename over) respects it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter, locked_by_a_writer
from mcptap.errors import CaptureWriteError
from mcptap.liveness import being_written

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
HEADER = {"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "0.1.0", "started": "2026-01-01T00:00:00.000000Z",
          "transport": "stdio", "target": {"argv": ["x"]}}


def test_a_second_writer_is_refused_before_it_truncates(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    first = CaptureWriter.open(str(path))
    first.write(HEADER)
    first.flush()
    size = path.stat().st_size
    assert locked_by_a_writer(str(path)) and being_written(str(path), (path.stat().st_dev, path.stat().st_ino))
    with pytest.raises(CaptureWriteError, match="another mcptap is recording into it"):
        CaptureWriter.open(str(path))
    assert path.stat().st_size == size and (tmp_path / ".live.jsonl.reserve").exists()
    first.close()
    assert not locked_by_a_writer(str(path))
    CaptureWriter.open(str(path)).close()          # once it ended, a new capture may replace it, as before


def test_serve_and_scrub_outputs_refuse_a_live_capture(tmp_path: Path) -> None:
    live = tmp_path / "live.jsonl"
    writer = CaptureWriter.open(str(live))
    writer.write(HEADER)
    writer.flush()
    src = Path(__file__).parent.parent / "captures" / "clean-2025-06-18.jsonl"
    try:
        for cmd in (["serve", str(src), "-o", str(live)], ["scrub", str(src), "-o", str(live)]):
            p = subprocess.run([*MCPTAP, *cmd], input=b"", capture_output=True, timeout=60)
            assert p.returncode == 2 and b"another mcptap is recording into it" in p.stderr, (cmd, p.stderr)
        assert json.loads(live.read_text().splitlines()[0])["target"] == {"argv": ["x"]}
    finally:
        writer.close()
    assert read_capture(str(live)).header["target"] == {"argv": ["x"]}
