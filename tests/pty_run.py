"""Run a command with some of its standard streams on a pseudo-terminal, as a
user's terminal would get them (progress lines, escape sequences)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run_on_pty(argv: list[str | bytes], env: dict[str, str], *, stdout: bool = False, cwd: Path | None = None) -> tuple[int, bytes]:
    """Run ``argv`` with stderr (and stdout when ``stdout``; else it is
    discarded) on a new pty, stdin empty; returns (exit status, every byte
    the terminal got). Waits at most 60 s for the exit."""
    main, sub = os.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sub if stdout else subprocess.DEVNULL, stderr=sub, cwd=cwd, env=env)
    os.close(sub)
    out = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:          # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        out.append(chunk)
    os.close(main)
    return proc.wait(timeout=60), b"".join(out)
