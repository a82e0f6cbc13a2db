"""In a pause of the traffic, the stdio tap's copy stream holds none of the
bytes it moved last: the relay's feeder thread (``CopyQueue.feed``) and
mcptap's copy reader (``copy_stream.read_items``) wait for the next item with
the last one let go (after a flood they held up to 2 MiB through every pause)."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcptap.transport.copy_queue import CopyQueue
from mcptap.transport.copy_stream import C2S, CHUNK, HEADER, read_items
from mcptap.transport.spill import SpillFile

F_SETPIPE_SZ = 1031
BIG = 300_000


def _holds_big(thread: threading.Thread, function: str) -> bool:
    """Whether ``function``'s frame in ``thread`` has a local of BIG bytes or more."""
    frame: Any = sys._current_frames().get(thread.ident or 0)
    while frame is not None and frame.f_code.co_name != function:
        frame = frame.f_back
    assert frame is not None, f"{function} is not running"
    return any(len(v.obj if isinstance(v, memoryview) else v) >= BIG      # a view holds all its buffer
               for v in frame.f_locals.values() if isinstance(v, (bytes, bytearray, memoryview)))


def _let_go(thread: threading.Thread, function: str) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not _holds_big(thread, function):
            return True
        time.sleep(0.01)
    return False


def test_the_feeder_lets_the_last_copy_go_before_it_waits(tmp_path: Path) -> None:
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)        # full at once: the copy waits in the queue for the feeder
    q = CopyQueue(lambda: 7, w, SpillFile(None, str(tmp_path)))
    feeder = threading.Thread(target=q.feed, daemon=True)
    feeder.start()
    try:
        q.chunk(C2S, b"x" * BIG)
        got = bytearray()
        while len(got) < HEADER.size + BIG:
            got += os.read(r, 1 << 16)
        assert bytes(got) == HEADER.pack(CHUNK, C2S, 0, 7, BIG) + b"x" * BIG
        assert _let_go(feeder, "feed")
    finally:
        q.close()
        feeder.join()
        os.close(r)
        os.close(w)


def test_the_copy_reader_lets_the_last_chunk_go_before_it_reads_again() -> None:
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
    seen: list[int] = []
    reader = threading.Thread(target=read_items, args=(r, lambda d, t, data: seen.append(len(data)), lambda *a: None),
                              daemon=True)
    reader.start()
    try:
        for n in (BIG, 2 * BIG):             # whole in one read; then completed by a second read
            item = HEADER.pack(CHUNK, C2S, 0, 1, n) + b"y" * n
            os.write(w, item[: len(item) // 2])
            time.sleep(0)
            os.write(w, item[len(item) // 2:])
        deadline = time.monotonic() + 30
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen == [BIG, 2 * BIG]
        assert _let_go(reader, "read_items")
    finally:
        os.close(w)
        reader.join()
        os.close(r)
