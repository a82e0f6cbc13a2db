"""The HTTP recorder process gives its heap's free pages back in a pause
(``transport/http_trim.py``), never while traffic goes on."""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.transport import http_trim
from mcptap.transport.http_recorder import start_recorder
from mcptap.transport.http_recorder_child import _Frames
from mcptap.transport.spill import SpillFile


def test_the_trim_is_found_where_glibc_is_the_c_library() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    assert http_trim._TRIM is not None


def test_trim_in_a_pause_only(monkeypatch: pytest.MonkeyPatch) -> None:
    r, w = os.pipe()
    calls: list[int] = []
    monkeypatch.setattr(http_trim, "_TRIM", lambda pad: calls.append(pad) or 1)
    try:
        assert http_trim.wait_then_trim(r)          # nothing came for IDLE_S: trimmed
        assert calls == [0]
        os.write(w, b"x")
        assert not http_trim.wait_then_trim(r)      # a batch is waiting: traffic goes on, no trim
        assert calls == [0]
    finally:
        os.close(r)
        os.close(w)


def test_recorder_looks_for_a_pause_before_every_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    r, w = os.pipe()
    waits: list[int] = []
    monkeypatch.setattr(http_trim, "wait_then_trim", lambda fd: waits.append(fd) or False)
    try:
        os.write(w, b"abc")
        frames = _Frames(r, lambda: None)
        assert frames.exact(3) == b"abc"
        assert waits == [r]
    finally:
        os.close(r)
        os.close(w)


def test_frames_let_the_batch_read_last_go_before_they_wait() -> None:
    r, w = os.pipe()
    try:
        os.write(w, b"abcdef")
        frames = _Frames(r, lambda: None)
        assert frames.exact(3) == b"abc"
        assert frames.exact(3) == b"def"
        seen: list[bytes] = []
        frames.before_wait = lambda: seen.append(frames.buf)
        os.write(w, b"ghi")
        assert frames.exact(3) == b"ghi"
        assert seen == [b""]                 # the consumed batch was not held through the wait
    finally:
        os.close(r)
        os.close(w)


def test_the_heap_is_trimmed_right_before_the_recorder_process_forks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a free page left in the heap at the fork was resident in both processes, and the first to reuse it got a copy
    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(http_trim, "_TRIM", lambda pad: seen.append((os.getpid(), gc.get_freeze_count())) or 1)

    def child(fact_fd: int, status_fd: int, spill: SpillFile) -> None:
        os._exit(0)

    link = start_recorder(child, lambda: 0, lambda line: None, str(tmp_path))
    try:
        assert os.waitpid(link.pid, 0)[1] == 0
        assert seen == [(os.getpid(), 0)]          # in the process that forks, before anything was frozen for the fork
    finally:
        os.close(link._fd)
        os.close(link._status)
        link._spill.close()



_LARGE_BLOCKS = r"""
import fcntl, os, random, sys, threading
from mcptap.transport import http_trim

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])

if sys.argv[1] == "fixed":
    assert http_trim.map_large_blocks()
r, w = os.pipe()
fcntl.fcntl(w, 1031, 1 << 20)                 # F_SETPIPE_SZ: room for a whole read
out = []

def flood():
    rnd = random.Random(1)
    first = b"x" * (1 << 20)
    del first                                 # a mapped block freed: glibc raises its threshold past 1 MiB
    before = rss_kib()
    held, small = [], []
    for _ in range(64):
        os.write(w, b"z" * rnd.randrange(100_000, 900_000))
        held.append(os.read(r, 1 << 20))     # a copy read: 1 MiB asked for, less returned (shrunk in place)
        small.append(b"y" * rnd.randrange(600, 3000))   # what stays (records, state)
        if len(held) > 4:
            held.pop(0)
    held.clear()
    out.append(rss_kib() - before)

t = threading.Thread(target=flood)            # a thread's own malloc arena, as the copy reader's
t.start()
t.join()
print(out[0])
"""


def test_large_blocks_go_back_when_freed() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    # a flood's MiB-sized copy reads, freed, stayed resident in the heap between the small
    # blocks still in use: 4-10 MiB more in the mcptap process for the rest of the session
    kept = {how: int(subprocess.run([sys.executable, "-c", _LARGE_BLOCKS, how], check=True, capture_output=True,
                                    text=True).stdout) for how in ("fixed", "default")}
    assert kept["default"] > 1 << 10          # KiB: the glibc behaviour this guards against, still there
    assert kept["fixed"] < 512
