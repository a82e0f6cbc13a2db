"""Socket reads and writes on the HTTP tap's forward path (trio), with as few
trips through trio's scheduler as correctness allows.

trio's ``SocketStream.receive_some``/``send_all`` and ``Lock`` each end with a
checkpoint that yields to the scheduler even when the operation completed at
once; on a loopback round trip those extra scheduler passes (each an
``epoll_wait`` and a run of the scheduler loop) cost more than the relay's own
work. For a plain TCP ``SocketStream`` these helpers therefore

* ``receive``: read with ``os.read`` on the non-blocking socket and wait for
  readability only when nothing is there (or first, when the caller's last
  read was short: see ``receive``; cancellable, and
  ``ClosedResourceError`` when another task closes the stream meanwhile, like
  ``receive_some``);
* ``send``: write with one ``os.write`` (``writev`` for pieces) when no other
  task holds the stream's lock (so bytes never interleave with a write in
  progress); what does not fit is written under the lock as the socket drains,
  a ``wait_writable`` and a ``writev`` at a time (trio's ``Lock`` and
  ``send_all`` each passed through the scheduler once more for each piece: a
  64 MiB SSE event to a client reading slower than the upstream writes took
  ~550 scheduler passes in the relay, now ~280).

Other streams (TLS) go through the trio methods unchanged. The file descriptor
is read from the socket at each call, never kept: a stream closed by another
task reads as -1 (``ClosedResourceError``), never as a reused descriptor.
Errors are those of the trio methods or ``OSError`` (the caller treats both as
a broken connection).

``coalesce`` joins the consecutive writes of one relay batch into one send
(a large body stays apart from its framing: one ``writev``).
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import termios
from typing import Any

import trio

CHUNK = 64 * 1024
#: reads after a full one (``next_size``). 64 MiB SSE event, same run (3 runs, load 2-3.7):
#: relay CPU 150-160 ms reading 256 KiB, 130-210 reading 1 MiB (whose peak RSS was 2-3 MiB higher
#: in the relay and in the recorder process), 250-330 before (64 KiB reads through h11's copies)
BIG_CHUNK = 256 << 10
_INT = bytes(4)      # ioctl's int argument (FIONREAD)
#: reads in a row ``ReadAhead`` takes at once (the mark's bytes queued) before one goes through the
#: wait anyway: a pass through trio's scheduler, so a body that streams on (the upstream and the
#: client both fast) does not keep the other tasks (connections, the recorder link) waiting
UNWAITED = 8
#: longest wait (s) for ``ReadAhead``'s low-water mark before reading what is there
LOWAT_WAIT = 0.002
#: writes of one batch that together reach this many bytes are sent with writev, not joined
VECTOR_FROM = 16 << 10
#: at most this many pieces in one writev (IOV_MAX is 1024; many small pieces are cheaper joined)
MAX_PIECES = 16


def _fd(stream: trio.abc.Stream) -> int | None:
    """The socket's descriptor for a plain TCP stream, None for any other stream."""
    if type(stream) is not trio.SocketStream:
        return None
    fd = stream.socket.fileno()
    if fd < 0:
        raise trio.ClosedResourceError("the stream was closed")
    return fd


async def receive(stream: trio.abc.Stream, size: int = CHUNK, wait: bool = False) -> bytes:
    """Up to ``size`` bytes from ``stream`` (``b""``: the peer closed).

    ``wait``: wait for readability before the first read: the caller's last
    read came back short, so the socket is most likely empty and a read now
    would only fail (a syscall and an exception saved per message on a
    request/response connection; when bytes are there the wait returns at
    the scheduler's next pass)."""
    if type(stream) is not trio.SocketStream:
        return bytes(await stream.receive_some(size))
    if wait:
        fd = _fd(stream)
        assert fd is not None
        await trio.lowlevel.wait_readable(fd)
    while True:
        fd = _fd(stream)
        assert fd is not None
        try:
            return os.read(fd, size)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(fd)


def _queued(fd: int) -> int:
    """Bytes waiting in socket ``fd``'s receive queue (``FIONREAD``; 0 where unknown)."""
    try:
        return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, _INT), sys.byteorder)
    except OSError:
        return 0


def next_size(size: int, got: int) -> int:
    """The size of the next read after one of ``size`` bytes brought ``got``:
    ``BIG_CHUNK`` after a full read (a large body streaming: fewer reads,
    less of the relay's per-read work), else ``CHUNK``."""
    return BIG_CHUNK if got >= size else CHUNK


class ReadAhead:
    """Reads of a large body in pieces of ``BIG_CHUNK`` (a plain TCP stream).

    The relay reads whatever the socket holds when it wakes up: inside a
    64 MiB SSE event that was ~48 KiB a read on loopback (the peer's segments),
    ~1,400 reads, each a pass through trio, the relay core, the recorder
    hand-off and a send. While the relay knows that at least ``BIG_CHUNK``
    more body bytes follow (``expect(ahead)``, from the HTTP framing), the
    socket's low-water mark (``SO_RCVLOWAT``) is raised so it is readable only
    once ``BIG_CHUNK`` are there. A peer that sends such a body slowly is not
    held back: after ``LOWAT_WAIT`` s what is there is read, and the mark stays
    down until that body ends (``expect(0)``). A read never returns less than
    before, only later by at most ``LOWAT_WAIT``, and only inside a body the
    peer announced as large; TLS streams are read as before."""

    __slots__ = ("stream", "lowat", "slow", "_sock", "_unwaited")

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.lowat = 1
        self.slow = False
        self._unwaited = 0          # reads in a row taken without the wait (``UNWAITED``)
        self._sock = stream.socket if type(stream) is trio.SocketStream and hasattr(socket, "SO_RCVLOWAT") else None

    async def receive(self, size: int, wait: bool) -> bytes:
        """``receive(stream, size, wait)``, waiting for the low-water mark first when it is raised."""
        if self.lowat > 1:
            fd = _fd(self.stream)
            assert fd is not None
            self._unwaited += 1
            if self._unwaited > UNWAITED or _queued(fd) < self.lowat:
                # (when the mark's bytes are there already, as while the relay is behind the
                # upstream, the wait would return at once: its cancel scope and scheduler pass,
                # ~28 us a read here, are skipped, though not more than UNWAITED times in a row)
                self._unwaited = 0
                with trio.move_on_after(LOWAT_WAIT) as scope:
                    await trio.lowlevel.wait_readable(fd)
                if scope.cancelled_caught:
                    self.slow = True                    # a slow body: its bytes go on as they come
                    self._set(1)
            return await receive(self.stream, max(size, BIG_CHUNK), False)
        return await receive(self.stream, size, wait)

    def expect(self, ahead: int) -> None:
        """``ahead``: body bytes the next bytes of the stream are known to start with."""
        if not ahead:
            self.slow = False
        want = BIG_CHUNK if ahead >= BIG_CHUNK and not self.slow and self._sock is not None else 1
        if want != self.lowat:
            self._set(want)

    def _set(self, lowat: int) -> None:
        try:
            if self._sock is not None:
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, lowat)
                self.lowat = lowat
        except OSError:
            self._sock, self.lowat = None, 1        # refused here: plain reads from now on


async def send(stream: trio.abc.Stream, lock: trio.Lock, data: bytes | list[bytes]) -> None:
    """Write all of ``data`` to ``stream``; ``lock`` orders writes of several
    tasks. A list (``coalesce``: a large body and its framing) is written with
    ``writev``, its pieces never joined."""
    fd = _fd(stream)
    if fd is None or lock.locked():
        # TLS, or another task's write in progress: after it, through trio
        async with lock:
            for piece in data if isinstance(data, list) else [data]:
                await stream.send_all(piece)
        return
    if isinstance(data, list):
        n = _write(fd, data)
        if n == sum(map(len, data)):
            return
        rest = _written(data, n)
    else:
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            n = 0
        if n == len(data):
            return
        rest = [memoryview(data)[n:]]
    # what the socket did not take (the peer reads slower than the bytes come): written
    # here as the socket drains, under the lock, one wait and one write a time (trio's
    # ``Lock`` and ``send_all`` each passed through the scheduler again for every piece)
    lock.acquire_nowait()
    try:
        while rest:
            await trio.lowlevel.wait_writable(fd)
            fd = _fd(stream)
            assert fd is not None
            rest = _written(rest, _write(fd, rest))
    finally:
        lock.release()


def _write(fd: int, pieces: list[Any]) -> int:
    """Bytes of ``pieces`` one ``writev`` took (0: the socket is full)."""
    try:
        return os.writev(fd, pieces)
    except BlockingIOError:
        return 0


def _written(pieces: list[Any], n: int) -> list[Any]:
    """What is left of ``pieces`` after their first ``n`` bytes (no copy)."""
    rest: list[Any] = []
    for p in pieces:
        if n >= len(p):
            n -= len(p)
            continue
        rest.append(memoryview(p)[n:] if n else p)
        n = 0
    return rest


def coalesce(items: list[Any], i: int, data: bytes, kind: type, gen: int | None,
             commands: tuple[type, ...]) -> tuple[bytes | list[bytes], int]:
    """``data`` joined with the data of the ``kind`` commands (same upstream
    ``gen`` when given) that follow from ``items[i]`` up to the next other
    command of ``commands`` (facts in between are only recorded, never
    executed); returns (bytes, index after the last command taken). From
    ``VECTOR_FROM`` bytes together the pieces are returned as a list instead
    (for ``send``'s vectored write: a large body is not copied to be joined)."""
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
    if parts is None:
        return data, i
    return (parts if len(parts) <= MAX_PIECES and sum(map(len, parts)) >= VECTOR_FROM else b"".join(parts)), end
