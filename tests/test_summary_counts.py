"""A client's lone blank line is one line of traffic (a message record, as the
end record and the integrity check count it, flagged framing.empty_line), but
the summaries say it is not JSON and count in the singular."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def test_a_lone_blank_line_is_said_to_be_no_json(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    r = subprocess.run([*MCPTAP, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", "import sys; sys.stdin.read()"],
                       input=b"\n", capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    show = subprocess.run([*MCPTAP, "show", str(cap)], capture_output=True, timeout=60).stdout.decode()
    assert "  1 message (c2s 1, s2c 0; 1 not JSON: blank or text line) over " in show
    check = subprocess.run([*MCPTAP, "check", str(cap)], capture_output=True, timeout=60).stdout.decode()
    assert f"{cap}: 1 message, " in check
