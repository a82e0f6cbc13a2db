"""`mcptap … | head`: the reader closes the pipe early. Every command stops
quietly with its normal status (0 here), as `show` always did: not click's
silent exit status 1, and not a 'cannot write -: Broken pipe' error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])


@pytest.mark.parametrize("args", [
    ("export", "{cap}", "--format", "messages"),
    ("export", "{cap}", "--format", "otlp-json"),
    ("ls", "--dir", "{dir}"),
    ("ls", "--dir", "{dir}", "--format", "json"),
    ("scrub", "{cap}", "-o", "-"),
    ("show", "{cap}"),
])
def test_closed_pipe_is_a_quiet_stop(cap: Path, args: tuple[str, ...]) -> None:
    argv = [a.format(cap=cap, dir=cap.parent) for a in args]
    proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT)
    proc.stdout.close()          # the reader is gone before the first write
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert err == b""
