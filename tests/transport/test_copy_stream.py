"""The relay's copy stream: big reads, chunks copied only when they must wait,
and a reader that completes a chunk spanning many pipe reads (issue 13)."""

from __future__ import annotations

import fcntl
import os
import threading
from typing import Any

import pytest

from mcptap.transport.copy_stream import CHUNK, END, HEADER, S2C, read_items
from mcptap.transport.forward import CHUNK as READ_SIZE
from mcptap.transport.forward import EOF, MAX_CHUNK, pump
from mcptap.transport.relay_child import CopyQueue
from mcptap.transport.spill import SpillFile

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _grown_pipe(size: int) -> tuple[int, int]:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, size)
    except OSError:
        os.close(r)
        os.close(w)
        pytest.skip("this system refuses a 1 MiB pipe")
    return r, w


def test_pump_takes_bigger_bites_once_a_read_fills_its_buffer() -> None:
    src_r, src_w = _grown_pipe(MAX_CHUNK)
    dst_r, dst_w = os.pipe()
    data = os.urandom(MAX_CHUNK)
    assert os.write(src_w, data) == MAX_CHUNK
    os.close(src_w)
    sizes: list[int] = []
    got: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(dst_r, 1 << 20):
            got.append(chunk)

    t = threading.Thread(target=drain)
    t.start()
    assert pump(src_r, dst_w, lambda view: sizes.append(len(view))) == (EOF, None, 0)
    os.close(dst_w)
    t.join(10)
    assert sizes == [READ_SIZE, MAX_CHUNK - READ_SIZE]      # 64 KiB, then the rest in one read
    assert b"".join(got) == data
    for fd in (src_r, dst_r):
        os.close(fd)


def _items(raw: bytes, pieces: int) -> tuple[list[tuple[int, int, bytes]], list[tuple[int, ...]], bool]:
    """Feed ``raw`` to read_items through a pipe in ``pieces`` writes."""
    r, w = os.pipe()
    chunks: list[tuple[int, int, bytes]] = []
    events: list[tuple[int, ...]] = []
    done: list[bool] = []
    t = threading.Thread(target=lambda: done.append(read_items(r, lambda d, t, b: chunks.append((d, t, b)),
                                                               lambda *e: events.append(e))))
    t.start()
    step = -(-len(raw) // pieces)
    for i in range(0, len(raw), step):
        os.write(w, raw[i:i + step])
    os.close(w)
    t.join(30)
    os.close(r)
    return chunks, events, done == [True]


def test_reader_completes_a_big_chunk_that_spans_many_reads() -> None:
    big = os.urandom(3 * MAX_CHUNK // 2)
    small = b'{"jsonrpc":"2.0","method":"x"}\n'
    raw = (HEADER.pack(CHUNK, S2C, 0, 7, len(small)) + small + HEADER.pack(CHUNK, S2C, 0, 8, len(big)) + big
           + HEADER.pack(CHUNK, S2C, 0, 9, len(small)) + small + HEADER.pack(END, S2C, 0, 10, 0))
    for pieces in (1, 7, 300):
        chunks, events, eof = _items(raw, pieces)
        assert chunks == [(S2C, 7, small), (S2C, 8, big), (S2C, 9, small)], pieces
        assert events == [(END, S2C, 0, 10, 0)] and eof


def test_reader_drops_a_chunk_cut_by_the_relays_end() -> None:
    big = os.urandom(MAX_CHUNK)
    raw = HEADER.pack(CHUNK, S2C, 0, 1, len(big)) + big[: len(big) // 2]
    chunks, events, eof = _items(raw, 5)
    assert chunks == [] and events == [] and eof


def test_a_chunk_that_must_wait_is_copied_out_of_the_pumps_buffer(tmp_path: Any) -> None:
    copy_r, copy_w = os.pipe()
    os.set_blocking(copy_w, False)
    filler = 0
    try:
        while True:                                  # the copy pipe is full: mcptap is behind
            filler += os.write(copy_w, b"\0" * 4096)
    except BlockingIOError:
        pass
    q = CopyQueue(lambda: 5, copy_w, SpillFile(None, str(tmp_path)))
    buf = bytearray(b"first chunk\n")
    assert q.chunk(S2C, memoryview(buf)) is not None     # queued, not sent
    buf[:] = b"XXXXXXXXXXXX"                              # the pump reads the next chunk into its buffer
    q.close()
    feeder = threading.Thread(target=q.feed)
    feeder.start()
    left = filler
    while left:
        left -= len(os.read(copy_r, left))
    feeder.join(10)
    os.close(copy_w)
    chunks: list[tuple[int, int, bytes]] = []
    assert read_items(copy_r, lambda d, t, b: chunks.append((d, t, b)), lambda *e: None)
    os.close(copy_r)
    assert chunks == [(S2C, 5, b"first chunk\n")]
