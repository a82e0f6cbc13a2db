"""Run a command with some of its standard streams on a pseudo-terminal, as a
user's terminal would get them (progress lines, escape sequences)."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path


def run_on_pty(argv: list[str | bytes], env: dict[str, str], *, stdout: bool = False, cwd: Path | None = None,
               deadline: float | None = None) -> tuple[int, bytes]:
    """Run ``argv`` with stderr (and stdout when ``stdout``; else it is
    discarded) on a new pty, stdin empty; returns (exit status, every byte
    the terminal got). Waits at most 60 s for the exit; ``deadline``: at most
    that many seconds for the terminal to close, then the command is killed
    and AssertionError raised (a command that would never end)."""
    main, sub = os.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sub if stdout else subprocess.DEVNULL, stderr=sub, cwd=cwd, env=env)
    os.close(sub)
    out = []
    end = None if deadline is None else time.monotonic() + deadline
    while True:
        if end is not None and not select.select([main], [], [], max(0.0, end - time.monotonic()))[0]:
            proc.kill()
            proc.wait()
            os.close(main)
            raise AssertionError(f"{argv!r} still running after {deadline} s; the terminal's last bytes: {b''.join(out)[-300:]!r}")
        try:
            chunk = os.read(main, 65536)
        except OSError:          # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        out.append(chunk)
    os.close(main)
    return proc.wait(timeout=60), b"".join(out)
