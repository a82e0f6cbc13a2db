"""The copy stream from the stdio relay process to mcptap: its format and its reader.

The relay process (``relay_child``) sends a copy of every forwarded chunk, in
read order, down a pipe. The stream is a sequence of items: a header
``<BBBqI`` (kind, direction, flag, t_us, n) then, for ``CHUNK``, n bytes (for
``SPILLED``, a u64 spill file offset). ``t_us`` is the recorder's clock,
taken when the relay read the chunk.

``read_items`` (a thread in mcptap) parses it back. A chunk may be as large as
the relay's read buffer (``forward.MAX_CHUNK``, 256 KiB in a flood), so one
item often spans two reads of the pipe: the reader then reads the
chunk's missing bytes in place and joins them once, instead of re-copying
the bytes it already has on every read.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable

from mcptap.transport import trickle

HEADER = struct.Struct("<BBBqI")
OFFSET = struct.Struct("<Q")
#: item kinds. END: the direction ended (EOF); FAILED: a write failed (flag: the
#: chunk was sent anyway); SPILLED: n bytes at a u64 file offset (after the
#: header) of the spill file; LOST: n bytes forwarded whose copy could not be kept (flag 1:
#: the spill file was at its bound, 0: it could not be written); RAW: the unsent rest of an item (never on the wire);
#: THROUGH: every chunk read before t_us is in the stream before this item
#: (asked for by mcptap, ``relay_child``)
CHUNK, END, FAILED, LOST, SPILLED, RAW, THROUGH = 1, 2, 3, 4, 5, 6, 7
C2S, S2C = 0, 1
COPY_PIPE_SIZE = 1 << 20
#: a small item split between two reads waits for the next read to complete it
BATCH_BELOW = 64 << 10


class CopyCursor:
    """A reader's place in the copy stream: bytes read but not parsed yet
    (``buf``), ``eof``, and the lock one reader holds while it reads, so a
    reader can hand the stream to another thread (``read_items``)."""

    __slots__ = ("buf", "eof", "lock")

    def __init__(self) -> None:
        self.buf = b""
        self.eof = False
        self.lock = threading.Lock()


def _read(fd: int, n: int) -> bytes:
    """Up to ``n`` bytes (b"" at EOF or on a read error: the relay is gone)."""
    while True:
        try:
            return os.read(fd, n)
        except InterruptedError:
            continue
        except OSError:
            return b""


def _rest_of_chunk(copy_r: int, have: bytes, n: int) -> bytes | None:
    """The chunk whose first bytes are ``have``, completed to ``n`` bytes
    from the pipe (blocking: the relay always writes an item whole), or None
    at EOF (the relay process ended mid-item)."""
    parts = [have]
    need = n - len(have)
    while need:
        data = _read(copy_r, min(need, COPY_PIPE_SIZE))
        if not data:
            return None
        parts.append(data)
        need -= len(data)
    return b"".join(parts)


def read_items(copy_r: int, on_chunk: Callable[[int, int, bytes], None], on_event: Callable[[int, int, int, int, int], None],
               cursor: CopyCursor | None = None, yield_when: Callable[[], bool] | None = None,
               hold: Callable[[], bool] | None = None) -> bool:
    """Read the copy stream until EOF (the relay process ended), calling
    ``on_chunk(direction, t_us, data)`` and ``on_event(kind, direction, flag,
    t_us, n)`` in order (for SPILLED, ``flag`` is the spill file offset;
    blocking, run it in a thread). A trickle of copies is held back while it
    goes on and handed over in the session's pauses (``trickle.gather``; ``hold()``
    false: no longer). Returns True at EOF, False as soon as
    ``yield_when()`` (asked before each read) is true: ``cursor`` then holds
    the place for the next reader."""
    cur = cursor or CopyCursor()
    hsize = HEADER.size
    unpack = HEADER.unpack_from
    while True:
        with cur.lock:
            if cur.eof:
                return True
            if yield_when is not None and yield_when():
                return False
            data = _read(copy_r, COPY_PIPE_SIZE)
            if not data:
                cur.eof = True
                return True
            if len(data) < trickle.TRICKLE_BELOW:
                data = trickle.gather(copy_r, data, lambda n: _read(copy_r, min(n, COPY_PIPE_SIZE)), hold)
            buf = cur.buf + data if cur.buf else data
            pos = 0
            end = len(buf)
            while end - pos >= hsize:
                kind, d, flag, t, n = unpack(buf, pos)
                if kind == CHUNK:
                    if end - pos - hsize < n:
                        if n < BATCH_BELOW:
                            break                     # a small item: the next read completes it
                        chunk = _rest_of_chunk(copy_r, buf[pos + hsize:end], n)
                        if chunk is None:
                            cur.eof = True
                            return True
                        on_chunk(d, t, chunk)
                        pos = end
                        break
                    on_chunk(d, t, buf[pos + hsize:pos + hsize + n])
                    pos += hsize + n
                elif kind == SPILLED:
                    if end - pos - hsize < OFFSET.size:
                        break
                    on_event(kind, d, OFFSET.unpack_from(buf, pos + hsize)[0], t, n)
                    pos += hsize + OFFSET.size
                else:
                    on_event(kind, d, flag, t, n)
                    pos += hsize
            cur.buf = buf[pos:]
            # let this read's bytes go before the next read blocks: else they were held
            # through every pause (up to 2 MiB after a flood: the read and a chunk joined)
            data = buf = b""
            chunk = None
