"""A flood grows the pipes around the pump that moves it (``forward.pump``,
``tee_pump.pump_s2c``): the host's are 64 KiB as a rule, so each 256 KiB
chunk went out in four waits for the host (issue 13, stop 40). A trickle
leaves them as they are, and no pipe is ever shrunk."""

from __future__ import annotations

import fcntl
import os
import random
import threading
from typing import Any

import pytest

from mcptap.transport import tee_pump
from mcptap.transport.forward import CHUNK, EOF, MAX_CHUNK, grow_pipe, pump

F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
pytestmark = pytest.mark.skipif(not hasattr(os, "splice"), reason="Linux pipes")


def _size(fd: int) -> int:
    return int(fcntl.fcntl(fd, F_GETPIPE_SZ))


def _pipe(size: int = CHUNK) -> tuple[int, int]:
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, size)
    return r, w


def _relay(data: bytes, src_size: int, dst_size: int, s2c: bool, paced: bool = False) -> tuple[bytes, int, int]:
    """Run a pump (``pump_s2c`` or ``pump``) from a pipe fed ``data`` to a
    pipe read to EOF; returns what arrived and both pipes' sizes after.
    ``paced``: each write waits until the previous one arrived (a trickle)."""
    src_r, src_w = _pipe(src_size)
    dst_r, dst_w = _pipe(dst_size)
    got: list[bytes] = []
    arrived = threading.Semaphore(0)

    def writer() -> None:
        rnd = random.Random(3)
        i = 0
        while i < len(data):
            k = rnd.randint(1, 300) if paced else rnd.randint(1, 200_000)
            os.write(src_w, data[i:i + k])
            i += k
            if paced:
                arrived.acquire()
        os.close(src_w)

    def reader() -> None:
        have = 0
        want = 0
        rnd = random.Random(3)
        while chunk := os.read(dst_r, 1 << 20):
            got.append(chunk)
            have += len(chunk)
            while paced and have >= want + 1 and want < len(data):
                want = min(len(data), want + rnd.randint(1, 300))
                if have >= want:
                    arrived.release()
                else:
                    break

    def seen_view(view: memoryview) -> Any:
        return None

    def seen_pipe(fd: int, n: int) -> Any:
        tee_pump.read_exact(fd, n)
        return None

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    if s2c:
        how = tee_pump.pump_s2c(src_r, dst_w, seen_view, seen_pipe)
    else:
        how = pump(src_r, dst_w, seen_view)
    sizes = _size(src_r), _size(dst_w)
    os.close(dst_w)
    for t in threads:
        t.join(60)
    os.close(src_r)
    os.close(dst_r)
    assert how == (EOF, None, 0)
    return b"".join(got), *sizes


@pytest.mark.parametrize("s2c", [False, True])
def test_a_flood_grows_both_pipes_to_a_whole_chunk(s2c: bool) -> None:
    data = random.Random(5).randbytes(4 << 20)
    got, src, dst = _relay(data, CHUNK, CHUNK, s2c)
    assert got == data
    assert (src, dst) == (MAX_CHUNK, MAX_CHUNK)


@pytest.mark.parametrize("s2c", [False, True])
def test_a_trickle_leaves_the_pipes_as_they_are(s2c: bool) -> None:
    data = random.Random(6).randbytes(40_000)
    got, src, dst = _relay(data, CHUNK, CHUNK, s2c, paced=True)
    assert got == data
    assert (src, dst) == (CHUNK, CHUNK)


def test_a_larger_pipe_is_never_shrunk() -> None:
    data = random.Random(8).randbytes(4 << 20)
    got, src, dst = _relay(data, 1 << 20, 1 << 20, s2c=False)
    assert got == data and (src, dst) == (1 << 20, 1 << 20)
    r, w = _pipe(1 << 20)
    assert grow_pipe(w, MAX_CHUNK) == 1 << 20 and _size(r) == 1 << 20
    assert grow_pipe(w, 1 << 20) == 1 << 20 and grow_pipe(w, 1 << 16) == 1 << 20
    os.close(r)
    os.close(w)


def test_grow_pipe_on_what_is_not_a_pipe_changes_nothing(tmp_path: Any) -> None:
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        assert grow_pipe(fd, MAX_CHUNK) == 0
    finally:
        os.close(fd)
