"""A file without a line break (/dev/zero, a binary, a core dump) given as a
capture: its first line used to be read whole, so `show /dev/zero` and
`demo -o /dev/full` (record refuses the path, demo then read it back) grew
until the OOM killer ended them with 137 (found by a breaker helper). The
header line is read up to ``HEADER_LIMIT``: one clear line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture import source
from mcptap.capture.reader import CaptureStream
from mcptap.errors import CaptureReadError

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("cmd", [("show", "/dev/zero"), ("check", "/dev/zero"), ("export", "-f", "messages", "/dev/zero")])
def test_an_endless_file_is_refused_in_one_line(cmd: tuple[str, ...]) -> None:
    p = subprocess.run([*MCPTAP, *cmd], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "/dev/zero:1: not an mcptap capture (no line break in its first 16 MiB)" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr


def test_the_header_line_is_read_up_to_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "HEADER_LIMIT", 1000)
    blob = tmp_path / "core"
    blob.write_bytes(b"\x7fELF" + b"\x00" * 5000)
    with pytest.raises(CaptureReadError, match=r"core:1: not an mcptap capture \(no line break"):
        CaptureStream(str(blob))
