"""The last line of defence: an exception mcptap did not foresee (here: a
bug planted in the capture reader) is one 'mcptap: internal error: …' line
and exit status 2; MCPTAP_DEBUG=1 gives the traceback for a bug report.
Hand-edited captures with fields of the wrong type are foreseen: a
``corrupt … record`` error naming file and line (tests/test_capture.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]


def edited(tmp_path: Path) -> Path:
    return record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])


_PLANTED = """
import sys
import mcptap.capture.reader as reader
def boom(rec):
    raise ZeroDivisionError("planted bug")
reader._malformed = boom
from mcptap.cli.main import main
sys.argv = ["mcptap", "show", sys.argv[1]]
main()
"""


def show(cap: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PLANTED, str(cap)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=60)


def test_unforeseen_error_is_one_line(tmp_path: Path) -> None:
    proc = show(edited(tmp_path), MCPTAP_DEBUG="")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptap: internal error: "), proc.stderr
    assert "MCPTAP_DEBUG=1" in lines[0]


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    proc = show(edited(tmp_path), MCPTAP_DEBUG="1")
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


_PLANTED_WRAP = """
import sys
import mcptap.hosts.wrap as engine
def boom(*a, **k):
    raise ZeroDivisionError("planted bug")
engine._wrap_one = boom
from mcptap.cli.main import main
sys.argv = ["mcptap", "wrap", "--config", sys.argv[1], "-n"]
main()
"""


def test_an_unforeseen_error_in_wrap_does_not_blame_a_capture(tmp_path: Path) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text('{"mcpServers": {"a": {"command": "x"}}}')
    proc = subprocess.run([sys.executable, "-c", _PLANTED_WRAP, str(cfg)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "MCPTAP_DEBUG": ""}, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("mcptap: internal error: ZeroDivisionError"), proc.stderr
    assert "capture" not in proc.stderr and "hand-edited configuration" in proc.stderr
