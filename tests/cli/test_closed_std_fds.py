"""mcptap started with file descriptor 0, 1 or 2 closed (`<&-`, `>&-`, `2>&-` in a
host's wrapper script): the capture file took the lowest free descriptor, so with
stdout closed the server's bytes were relayed into the capture, with stderr closed
its stderr lines were, and with stdin closed the capture held its header only.
cli/entry.py opens /dev/null in their place first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
SERVER = ("import sys; sys.stderr.write('server-stderr-line\\n'); sys.stderr.flush(); "
          "sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\\n')")


@pytest.mark.parametrize("closed", [0, 1, 2])
def test_a_closed_standard_fd_never_becomes_the_capture(tmp_path: Path, closed: int) -> None:
    cap = tmp_path / "cap.jsonl"

    def close_it() -> None:
        os.close(closed)

    p = subprocess.run([sys.executable, "-m", "mcptap", "record", "-q", "-o", str(cap), "--", sys.executable, "-c", SERVER],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       preexec_fn=close_it, cwd=ROOT, timeout=60)
    assert p.returncode == 0
    lines = cap.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]          # every line a record: no relayed bytes among them
    assert all(isinstance(r, dict) and "type" in r for r in records), lines
    capture = read_capture(str(cap))
    assert capture.end is not None
    assert [r["type"] for r in capture.records].count("message") == 1
