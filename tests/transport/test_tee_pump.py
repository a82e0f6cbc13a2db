"""The s2c pump by tee/splice: every byte reaches the destination and the
copy, each chunk is shown before it moves on, and the copy queue takes each
chunk out of the aux pipe by the path `forward.pump`'s copies take (issue 13)."""

from __future__ import annotations

import fcntl
import os
import random
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcptap.transport import copy_queue, copy_stream, tee_pump
from mcptap.transport.copy_queue import CopyQueue
from mcptap.transport.copy_stream import S2C, read_items
from mcptap.transport.forward import BROKEN, EOF, MAX_CHUNK
from mcptap.transport.spill import SpillFile, entries

TEE = tee_pump.tee_fn()
pytestmark = pytest.mark.skipif(TEE is None, reason="no tee(2) in this libc")


def _pending(fd: int) -> int:
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), "little")


def _aux() -> tuple[int, int]:
    r, w = os.pipe()
    fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 16)
    return r, w


def test_every_byte_moves_on_and_each_chunk_is_seen_before_it_does() -> None:
    data = random.Random(7).randbytes(3 << 20)
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    aux_r, aux_w = _aux()
    received: list[bytes] = []
    got = [0]
    seen: list[bytes] = []
    early: list[tuple[int, int]] = []

    def writer() -> None:
        rnd = random.Random(1)
        i = 0
        while i < len(data):
            k = rnd.randint(1, 200_000)
            os.write(src_w, data[i:i + k])
            i += k
        os.close(src_w)

    def reader() -> None:
        while chunk := os.read(dst_r, 1 << 20):
            received.append(chunk)
            got[0] += len(chunk)

    def on_seen(fd: int, n: int) -> str:
        before = sum(map(len, seen))
        if got[0] > before:                      # bytes reached the destination before they were seen
            early.append((got[0], before))
        seen.append(tee_pump.read_exact(fd, n))
        return "token"

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    assert TEE is not None
    assert tee_pump.tee_pump(TEE, src_r, dst_w, aux_r, aux_w, 1 << 16, on_seen) == (EOF, None, 0)
    os.close(dst_w)
    for t in threads:
        t.join(30)
    assert b"".join(seen) == data and b"".join(received) == data
    assert early == [] and len(seen) > 1 and max(map(len, seen)) <= 1 << 16
    assert _pending(aux_r) == 0
    for fd in (src_r, dst_r, aux_r, aux_w):
        os.close(fd)


def _s2c(src_r: int, dst: int) -> tuple[tuple[str, Any, int], list[tuple[str, bytes]]]:
    seen: list[tuple[str, bytes]] = []
    how = tee_pump.pump_s2c(src_r, dst, lambda view: seen.append(("copied", bytes(view))),
                            lambda fd, n: seen.append(("teed", tee_pump.read_exact(fd, n))))
    return how, seen


def test_small_chunks_are_read_and_floods_teed_then_read_again() -> None:
    src_r, src_w = os.pipe()
    fcntl.fcntl(src_w, getattr(fcntl, "F_SETPIPE_SZ", 1031), MAX_CHUNK)
    dst_r, dst_w = os.pipe()
    flood = os.urandom(MAX_CHUNK)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.extend(iter(lambda: os.read(dst_r, 1 << 20), b"")))
    reader.start()
    done: list[Any] = []
    pumping = threading.Thread(target=lambda: done.append(_s2c(src_r, dst_w)))
    pumping.start()
    os.write(src_w, b"ping\n")
    time.sleep(0.2)                              # a round trip's message, alone in the pipe
    os.write(src_w, flood)                       # fills the pump's first buffer: a flood
    for line in (b"pong\n", b"pang\n"):        # the first small chunk ends the flood, the next is read
        time.sleep(0.2)
        os.write(src_w, line)
    os.close(src_w)
    pumping.join(30)
    os.close(dst_w)
    reader.join(30)
    (how, seen), = done
    assert how == (EOF, None, 0)
    assert b"".join(received) == b"".join(b for _, b in seen) == b"ping\n" + flood + b"pong\npang\n"
    kinds = [k for k, _ in seen]
    assert kinds[0] == "copied" and kinds[-1] == "copied" and "teed" in kinds      # back to reads after the flood
    for fd in (src_r, dst_r):
        os.close(fd)


def test_a_destination_refusing_splice_gets_every_byte_by_plain_writes(tmp_path: Path) -> None:
    # splice(2) refuses a file opened for appending (EINVAL), as it refuses some devices
    out = tmp_path / "out"
    dst = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    src_r, src_w = os.pipe()
    fcntl.fcntl(src_w, getattr(fcntl, "F_SETPIPE_SZ", 1031), MAX_CHUNK)
    data = os.urandom(MAX_CHUNK)
    os.write(src_w, data)
    writer = threading.Thread(target=lambda: (os.write(src_w, data[::-1]), os.close(src_w)))
    writer.start()
    how, seen = _s2c(src_r, dst)
    writer.join(30)
    assert how == (EOF, None, 0)
    assert out.read_bytes() == b"".join(b for _, b in seen) == data + data[::-1]
    assert "teed" in [k for k, _ in seen]        # it tried, once
    os.close(src_r)
    os.close(dst)


def test_a_closed_destination_is_broken_with_the_chunks_token() -> None:
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    os.close(dst_r)
    os.write(src_w, b"x" * 1000)
    aux = tee_pump.Aux()
    assert aux.tee is not None and aux.fds is not None
    got = tee_pump.tee_pump(aux.tee, src_r, dst_w, *aux.fds, aux.room, lambda fd, n: tee_pump.read_exact(fd, n) and "token")
    assert got == (BROKEN, "token", 1000)
    aux.close()
    for fd in (src_r, src_w, dst_w):
        os.close(fd)


def _copy_pipe(room: int) -> tuple[int, int, int]:
    """A non-blocking copy pipe with ``room`` bytes free; returns (r, w, filled)."""
    r, w = os.pipe()
    size = fcntl.fcntl(w, getattr(fcntl, "F_GETPIPE_SZ", 1032))
    os.set_blocking(w, False)
    filled = 0
    while filled < size - room:
        filled += os.write(w, b"\0" * min(4096, size - room - filled))
    return r, w, filled


def _fill_aux(data: bytes) -> tuple[int, int]:
    aux_r, aux_w = _aux()
    os.write(aux_w, data)
    return aux_r, aux_w


def _drain_items(q: CopyQueue, copy_r: int, copy_w: int, filled: int) -> list[tuple[int, int, bytes]]:
    q.close()
    feeder = threading.Thread(target=q.feed)
    feeder.start()
    left = filled
    while left:
        left -= len(os.read(copy_r, left))
    feeder.join(10)
    os.close(copy_w)
    chunks: list[tuple[int, int, bytes]] = []
    events: list[Any] = []
    assert read_items(copy_r, lambda d, t, b: chunks.append((d, t, b)), lambda *e: events.append(e))
    os.close(copy_r)
    return chunks


@pytest.mark.parametrize("room", [1 << 16, 5000, 0])
def test_chunk_from_sends_keeps_or_finishes_each_chunk_whole(tmp_path: Path, room: int) -> None:
    # room for all, for the header and part of the bytes (the rest follows from
    # memory), or for nothing (the chunk is read into memory and queued)
    copy_r, copy_w, filled = _copy_pipe(room)
    q = CopyQueue(lambda: 5, copy_w, SpillFile(None, str(tmp_path)))
    data = os.urandom(40_000)
    aux_r, aux_w = _fill_aux(data)
    token = q.chunk_from(S2C, aux_r, len(data))
    assert (token is not None) == (room == 0)
    assert _pending(aux_r) == 0
    assert _drain_items(q, copy_r, copy_w, filled) == [(S2C, 5, data)]
    os.close(aux_r)
    os.close(aux_w)


def test_chunk_from_spills_behind_a_full_queue_and_recover_can_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_queue, "SPILL_BYTES", 0)
    copy_r, copy_w, filled = _copy_pipe(0)
    spill = SpillFile(str(tmp_path / "c.jsonl.spill"))
    q = CopyQueue(lambda: 9, copy_w, spill)
    first, second = b"a" * 1000, os.urandom(70_000)
    assert q.chunk(S2C, memoryview(bytearray(first))) is not None      # queued: the queue is not empty now
    aux_r, aux_w = _fill_aux(second[:60_000])
    threading.Thread(target=lambda: os.write(aux_w, second[60_000:])).start()   # the rest arrives while it is spliced
    assert q.chunk_from(S2C, aux_r, len(second)) is None
    assert _pending(aux_r) == 0
    assert list(entries(str(tmp_path / "c.jsonl.spill"))) == [(S2C, 9, len(first), second)]
    events: list[Any] = []
    q.close()
    feeder = threading.Thread(target=q.feed)
    feeder.start()
    left = filled
    while left:
        left -= len(os.read(copy_r, left))
    feeder.join(10)
    os.close(copy_w)
    chunks: list[Any] = []
    assert read_items(copy_r, lambda d, t, b: chunks.append((d, t, b)), lambda *e: events.append(e))
    assert chunks == [(S2C, 9, first)]
    (kind, d, at, t, n), = events
    assert (kind, d, t, n) == (copy_stream.SPILLED, S2C, 9, len(second)) and spill.read(at, n) == second
    spill.close(remove=True)
    for fd in (copy_r, aux_r, aux_w):
        os.close(fd)


def test_a_spill_file_that_cannot_be_written_still_takes_the_bytes_out_of_the_pipe(tmp_path: Path) -> None:
    spill = SpillFile(str(tmp_path / "missing-dir" / "c.spill"))
    aux_r, aux_w = _fill_aux(b"z" * 5000)
    assert spill.append_from(S2C, 1, 0, aux_r, 5000) == -1
    assert _pending(aux_r) == 0
    os.close(aux_r)
    os.close(aux_w)
