"""A capture given as a FIFO (or ``<(…)``) is read once: nothing may open it to sniff
its first bytes (gzip magic, a size for progress) and then open it again, or those
bytes are gone and the reader sees a capture without its start. ``show --follow``
reads such a capture to its end record, as it reads ``-``."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pty_run import run_on_pty

ROOT = Path(__file__).resolve().parents[2]
CLEAN = ROOT / "captures" / "clean-2025-06-18.jsonl"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _source(tmp_path: Path, gz: bool) -> Path:
    if not gz:
        return CLEAN
    out = tmp_path / "clean.jsonl.gz"
    out.write_bytes(gzip.compress(CLEAN.read_bytes()))
    return out


def _fifo(tmp_path: Path, src: Path) -> tuple[Path, threading.Thread]:
    """A FIFO that a thread fills with ``src`` once a reader opens it (then closes it)."""
    fifo = tmp_path / "cap.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        try:
            with open(fifo, "wb") as out, open(src, "rb") as inp:      # blocks until the reader opens it
                shutil.copyfileobj(inp, out)
        except OSError:
            pass            # the reader left early (a sniff that closed it): the test says what it got

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return fifo, t


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_show_follow_reads_a_fifo_whole_to_its_end_record(tmp_path: Path, gz: bool) -> None:
    src = _source(tmp_path, gz)
    want = subprocess.run([*MCPTAP, "show", "--format", "json", str(src)], capture_output=True, timeout=60, cwd=ROOT)
    assert want.returncode == 0, want.stderr
    fifo, t = _fifo(tmp_path, src)
    try:
        got = subprocess.run([*MCPTAP, "show", "--follow", "--format", "json", str(fifo)], capture_output=True, timeout=60, cwd=ROOT)
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    t.join(timeout=60)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout


@pytest.mark.parametrize("argv", [["check"], ["export", "--format", "messages", "-o", "{out}"], ["scrub", "-o", "{out}"]],
                         ids=["check", "export", "scrub"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_progress_on_a_terminal_takes_no_byte_of_a_fifo(tmp_path: Path, argv: list[str], gz: bool) -> None:
    src = _source(tmp_path, gz)
    args = [a.replace("{out}", str(tmp_path / "from-file")) for a in argv]
    want = subprocess.run([*MCPTAP, *args, str(src)], capture_output=True, timeout=60, cwd=ROOT)
    fifo, t = _fifo(tmp_path, src)
    args = [a.replace("{out}", str(tmp_path / "from-fifo")) for a in argv]
    try:
        # a command that opened the FIFO a second time would wait for a writer for ever: 60 s, then it fails
        code, said = run_on_pty([*MCPTAP, *args, str(fifo)], {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"}, cwd=ROOT, deadline=60)
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))      # a feeder still waiting for a reader ends
    t.join(timeout=60)
    assert code == want.returncode, said.decode(errors="replace")
    if "-o" in argv:
        assert (tmp_path / "from-fifo").read_bytes() == (tmp_path / "from-file").read_bytes()
