"""Socket reads and writes on the HTTP tap's forward path (trio), with as few
trips through trio's scheduler as correctness allows.

trio's ``SocketStream.receive_some``/``send_all`` and ``Lock`` each end with a
checkpoint that yields to the scheduler even when the operation completed at
once; on a loopback round trip those extra scheduler passes (each an
``epoll_wait`` and a run of the scheduler loop) cost more than the relay's own
work. For a plain TCP ``SocketStream`` these helpers therefore

* ``receive``: read with ``os.read`` on the non-blocking socket and wait for
  readability only when nothing is there (cancellable, and
  ``ClosedResourceError`` when another task closes the stream meanwhile, like
  ``receive_some``);
* ``send``: write with one ``os.write`` when no other task holds the stream's
  lock (so bytes never interleave with a write in progress); what does not fit
  is sent under the lock with ``send_all``.

Other streams (TLS) go through the trio methods unchanged. The file descriptor
is read from the socket at each call, never kept: a stream closed by another
task reads as -1 (``ClosedResourceError``), never as a reused descriptor.
Errors are those of the trio methods or ``OSError`` (the caller treats both as
a broken connection).

``coalesce`` joins the consecutive writes of one relay batch into one send.
"""

from __future__ import annotations

import os
from typing import Any

import trio

CHUNK = 64 * 1024


def _fd(stream: trio.abc.Stream) -> int | None:
    """The socket's descriptor for a plain TCP stream, None for any other stream."""
    if type(stream) is not trio.SocketStream:
        return None
    fd = stream.socket.fileno()
    if fd < 0:
        raise trio.ClosedResourceError("the stream was closed")
    return fd


async def receive(stream: trio.abc.Stream) -> bytes:
    """Up to ``CHUNK`` bytes from ``stream`` (``b""``: the peer closed)."""
    if type(stream) is not trio.SocketStream:
        return bytes(await stream.receive_some(CHUNK))
    while True:
        fd = _fd(stream)
        assert fd is not None
        try:
            return os.read(fd, CHUNK)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(fd)


async def send(stream: trio.abc.Stream, lock: trio.Lock, data: bytes) -> None:
    """Write all of ``data`` to ``stream``; ``lock`` orders writes of several tasks."""
    if not lock.locked():
        fd = _fd(stream)
        if fd is not None:
            try:
                n = os.write(fd, data)
            except BlockingIOError:
                n = 0
            if n == len(data):
                return
            data = data[n:]
    async with lock:
        await stream.send_all(data)


def coalesce(items: list[Any], i: int, data: bytes, kind: type, gen: int | None, commands: tuple[type, ...]) -> tuple[bytes, int]:
    """``data`` joined with the data of the ``kind`` commands (same upstream
    ``gen`` when given) that follow from ``items[i]`` up to the next other
    command of ``commands`` (facts in between are only recorded, never
    executed); returns (bytes, index after the last command taken)."""
    parts: list[bytes] | None = None
    j, n, end = i, len(items), i
    while j < n:
        u = items[j]
        tu = type(u)
        j += 1
        if tu is kind and (gen is None or u.gen == gen):
            if parts is None:
                parts = [data]
            parts.append(u.data)
            end = j
        elif tu in commands:
            break
    return (data, i) if parts is None else (b"".join(parts), end)
