"""CaptureWriter.open makes a capture it creates owner-only (0600), but a device or
FIFO given as the output (`scrub cap -o /dev/null`, `-o some.fifo`) is not a file it
owns: as root, chmod 0600 of /dev/null locked every other user out of it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mcptap.capture.writer import CaptureWriter


def test_a_regular_capture_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b"old")
    path.chmod(0o644)
    w = CaptureWriter.open(str(path))
    w.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == b""


def test_a_fifo_keeps_its_mode(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo, 0o644)
    os.chmod(fifo, 0o666)                        # whatever the umask made of it
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # so the writer's open does not block
    try:
        w = CaptureWriter.open(str(fifo))
        w.write({"type": "header"})
        w.flush()
        w.close()
        assert os.read(reader, 1 << 16).startswith(b'{"type":"header"}')
    finally:
        os.close(reader)
    assert stat.S_IMODE(fifo.stat().st_mode) == 0o666
