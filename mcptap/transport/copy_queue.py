"""The ordered copy stream of the stdio relay process (``relay_child``):
``CopyQueue`` turns the chunks its pumps read into the copy stream
(``copy_stream``'s items) on the copy pipe to mcptap, in read order, without
ever making a pump wait: the pipe when it has room, memory up to
``SPILL_BYTES``, the spill file (``spill``) beyond.

A pump takes a chunk's place when it read it (``take``: the stamp and stream
offset) and sends the copy once the chunk was written on (``put``), so the
round trip does not wait for the copy; a place still open when a later chunk
or an event is sent is sent first, from its pump's buffer or aux pipe (that
pump waits on a write: to a server that does not read its stdin, say), so
the stream is in read order whatever the threads do.
"""

from __future__ import annotations

import collections
import os
import queue
import select
import threading
from collections.abc import Callable
from typing import Any

from mcptap.transport.copy_stream import CHUNK, HEADER, LOST, OFFSET, RAW, SPILLED
from mcptap.transport.spill import FULL, SpillFile
from mcptap.transport.tee_pump import SPLICE_F_NONBLOCK, read_exact

#: copies queued in memory before the spill file takes them: a queued copy costs a read out
#: of the aux pipe and a write into the copy pipe, a spilled one the kernel's copy into the
#: page cache; 1 MiB against 4 MiB, 3M-notification floods (2 same-run series of 6 and 4): tap
#: peak memory (both processes) <= 45.0/47.1 vs 52.7/55.7 MiB s2c, 50.0/49.4 vs 53.5/54.2 both
#: directions; relay CPU 167 vs 187 ms; wall within the noise (1.90x vs 2.12x the threaded relay)
SPILL_BYTES = 1 << 20
ITEM_COST = 256                # bytes a queued copy costs beyond its data (a flood of tiny chunks is bounded too)
OPEN, SENT = 0, 1              # a ticket's state (``CopyQueue.take``)
LOST_MAX = (1 << 32) - 1       # the most one LOST item counts (its n is a u32, ``copy_stream.HEADER``)


class CopyQueue:
    """The ordered copy stream of one relay process (module docstring).

    A pump calls ``take`` (``take_from``: bytes in its aux pipe) before it
    writes a chunk on and ``put`` after; ``chunk``/``chunk_from`` do both at
    once. Fast path: while nothing waits, a chunk's copy is written straight
    into the (non-blocking) copy pipe, under the lock that orders the stream.
    When the pipe is full (mcptap is behind), copies queue here for the feeder
    thread; past ``SPILL_BYTES`` queued, a chunk's bytes go to the spill file
    (a ``pwrite``: page cache, no waiting for mcptap) and only its place
    (``SPILLED``: offset, size) is queued, so memory stays bounded and nothing
    is lost; only if the spill file cannot take it either (disk full, or past
    its bound: ``spill_bound``) is its size sent as ``LOST``."""

    def __init__(self, clock: Callable[[], int], copy_fd: int, spill: SpillFile) -> None:
        self._clock = clock
        self._fd = copy_fd
        self._spill = spill
        self._streamed = [0, 0]               # bytes read so far per direction (stream offsets)
        self._lock = threading.Lock()
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._q: collections.deque[list[Any]] = collections.deque()
        self._open: collections.deque[list[Any]] = collections.deque()   # tickets taken, not sent yet (read order)
        self._queued = 0
        self._closed = False
        self._broken = False
        os.set_blocking(copy_fd, False)

    # -- tickets: a chunk's place in the stream is taken when it is read, its
    # copy is sent after it was written on (off the round trip's path); a
    # ticket still open when a later one is sent (its pump waits on a write) is
    # sent first, from its pump's buffer or aux pipe, so the stream keeps the
    # read order and never waits for a pump.

    def take(self, direction: int, data: memoryview) -> list[Any]:
        """The place of ``data`` (a view of a pump's buffer, read in
        ``direction``) in the stream, stamped now; the pump writes it on, then
        calls ``put``. The view must stay valid until ``put`` returns."""
        return self._ticket(direction, len(data), data)

    def take_from(self, direction: int, fd: int, n: int) -> list[Any]:
        """``take`` for ``n`` bytes waiting in the pipe ``fd`` (a pump's aux
        pipe, ``tee_pump``); ``put`` consumes exactly those n bytes."""
        return self._ticket(direction, n, fd)

    def _ticket(self, direction: int, n: int, source: memoryview | int) -> list[Any]:
        with self._lock:
            offset = self._streamed[direction]
            self._streamed[direction] = offset + n
            ticket = [OPEN, direction, self._clock(), offset, n, source]
            self._open.append(ticket)
        return ticket

    def put(self, ticket: list[Any], sent: int) -> bool:
        """Send the copy of a ``take``n chunk once ``sent`` of its bytes were
        written on (fewer than all: the write failed; the bytes sent are
        copied). Returns True when the whole chunk was in the stream already
        (a later chunk or event sent it while its write waited)."""
        with self._lock:
            return self._put(ticket, sent)

    def _put(self, ticket: list[Any], sent: int) -> bool:
        """``put`` with the lock held."""
        if ticket[0] != OPEN:
            return True
        if self._open[0] is ticket:
            self._open.popleft()
        else:
            self._send_open(ticket)
        _, d, t, offset, n, src = ticket
        ticket[0], ticket[5] = SENT, None
        if sent == n and not self._q and type(src) is memoryview:
            head = HEADER.pack(CHUNK, d, 0, t, n)           # the round trip's case, inline
            done = self._write(head, src)
            if done < 0:
                return False
            if done > 0:                                    # partly sent: the rest first
                self._q.append([RAW, d, 0, t, 0, memoryview(head + bytes(src))[done:]])
                self._bell.put(None)
                return False
        if isinstance(src, int):
            if sent == n:
                self._send_from(d, t, offset, src, n)
                return False
            data: bytes | memoryview = read_exact(src, n)[:sent]
        else:
            data = src[:sent] if sent < n else src
        if sent:
            self._send(d, t, offset, data)
        return False

    def _rest(self, d: int, t: int, offset: int, data: memoryview, item: bytes, done: int) -> None:
        """The copy of ``data`` whose one write took ``done`` bytes of ``item`` (its
        header and bytes: ``copy_fast``; lock held): the rest goes first, or, when
        nothing went (the pipe is full), the copy is queued or spilled."""
        if done:
            self._q.append([RAW, d, 0, t, 0, memoryview(item)[done:]])
            self._bell.put(None)
        else:
            self._send(d, t, offset, data)

    def _send_open(self, upto: list[Any] | None = None) -> None:
        """Send the open tickets taken before ``upto`` (all: None), whole and in order (lock held)."""
        q = self._open
        while q:
            ticket = q.popleft()
            if ticket is upto:
                return
            _, d, t, offset, n, src = ticket
            ticket[0], ticket[5] = SENT, None
            if isinstance(src, int):
                self._send_from(d, t, offset, src, n)
            else:
                self._send(d, t, offset, src)

    def chunk(self, direction: int, data: bytes | memoryview) -> list[Any] | None:
        """Send or keep a copy of ``data``, read in ``direction``, now (a view
        of the caller's buffer, valid only during this call: what must wait
        is copied). Returns a token for ``withdraw`` (None: already sent)."""
        n = len(data)
        with self._lock:
            self._send_open()
            offset = self._streamed[direction]
            self._streamed[direction] = offset + n
            return self._send(direction, self._clock(), offset, data)

    def chunk_from(self, direction: int, fd: int, n: int) -> list[Any] | None:
        """``chunk`` for ``n`` bytes waiting in the pipe ``fd`` (the tee of a
        pump's source, ``tee_pump``); consumes exactly those n bytes: spliced
        into the copy pipe or the spill file, read only when they must wait
        in memory. Returns a token for ``withdraw`` (None: already sent)."""
        with self._lock:
            self._send_open()
            offset = self._streamed[direction]
            self._streamed[direction] = offset + n
            return self._send_from(direction, self._clock(), offset, fd, n)

    def _send(self, direction: int, t: int, offset: int, data: bytes | memoryview) -> list[Any] | None:
        """A chunk into the stream (lock held): written now, queued (copied
        out of ``data``) or spilled; returns the queued item, or None."""
        n = len(data)
        if not self._q:
            done = self._write(HEADER.pack(CHUNK, direction, 0, t, n), data)
            if done < 0:
                return None                               # all sent
            if done > 0:                                  # partly sent: the rest first
                self._q.append([RAW, direction, 0, t, 0, memoryview(HEADER.pack(CHUNK, direction, 0, t, n) + bytes(data))[done:]])
                self._bell.put(None)
                return None
        if self._queued > SPILL_BYTES:
            self._set_aside(direction, t, n, self._spill.append(direction, t, offset, data))
            return None
        item = [CHUNK, direction, 0, t, n, bytes(data)]
        self._q.append(item)
        self._queued += n + ITEM_COST
        if len(self._q) == 1:
            self._bell.put(None)
        return item

    def _send_from(self, direction: int, t: int, offset: int, fd: int, n: int) -> list[Any] | None:
        """``_send`` for n bytes waiting in the pipe ``fd`` (lock held)."""
        if self._broken:
            read_exact(fd, n)                                 # mcptap is gone: forwarding goes on
            return None
        if not self._q:
            head = HEADER.pack(CHUNK, direction, 0, t, n)
            try:
                os.write(self._fd, head)                      # < PIPE_BUF: all or nothing
            except BlockingIOError:
                pass
            except OSError:
                self._broken = True
                read_exact(fd, n)
                return None
            else:
                done = self._splice_copy(fd, n)
                if done < n:                                  # partly sent: the rest first
                    self._q.append([RAW, direction, 0, t, 0, memoryview(read_exact(fd, n - done))])
                    self._bell.put(None)
                return None
        if self._queued > SPILL_BYTES:
            self._set_aside(direction, t, n, self._spill.append_from(direction, t, offset, fd, n))
            return None
        item = [CHUNK, direction, 0, t, n, read_exact(fd, n)]
        self._q.append(item)
        self._queued += n + ITEM_COST
        if len(self._q) == 1:
            self._bell.put(None)
        return item

    def _set_aside(self, direction: int, t: int, n: int, at: int) -> None:
        """Queue the place of a chunk the spill file took at ``at``, or, where
        it could not (``at`` < 0), its size as ``LOST`` (flag 1: past the
        file's bound, ``spill.FULL``). A LOST item still queued last for the
        same direction and cause takes the size instead (the stamp stays its
        first chunk's): a flood past the bound costs no memory per chunk."""
        q = self._q
        if at >= 0:
            q.append([SPILLED, direction, 0, t, n, at])
        else:
            flag = int(at == FULL)
            last = q[-1] if q else None
            if last is not None and last[0] == LOST and last[1] == direction and last[2] == flag and last[4] + n <= LOST_MAX:
                last[4] += n
                return
            q.append([LOST, direction, flag, t, n, b""])
        if len(q) == 1:
            self._bell.put(None)

    def _splice_copy(self, fd: int, n: int) -> int:
        """Move up to ``n`` bytes of ``fd`` into the copy pipe without
        waiting; the bytes moved (the rest is still in ``fd``)."""
        done = 0
        while done < n:
            try:
                moved = os.splice(fd, self._fd, n - done, flags=SPLICE_F_NONBLOCK)
            except InterruptedError:
                continue
            except BlockingIOError:
                break
            except OSError:
                self._broken = True                               # mcptap is gone: drop the rest
                read_exact(fd, n - done)
                return n
            if not moved:
                break
            done += moved
        return done

    def _write(self, head: bytes, data: bytes | memoryview) -> int:
        """Try to write one item now: -1 all written, else the bytes written."""
        if self._broken:
            return -1
        total = len(head) + len(data)
        try:
            n = os.writev(self._fd, [head, data]) if data else os.write(self._fd, head)
        except BlockingIOError:
            return 0
        except OSError:
            self._broken = True                                # mcptap is gone: forwarding goes on
            return -1
        return -1 if n == total else n

    def withdraw(self, item: list[Any] | None) -> bool:
        """Take back a queued chunk whose write failed; False if already sent."""
        if item is None:
            return False
        with self._lock:
            for i, x in enumerate(self._q):
                if x is item:
                    del self._q[i]
                    self._queued -= item[4] + ITEM_COST
                    return True
        return False

    def event(self, kind: int, direction: int, flag: int = 0, n: int = 0) -> None:
        with self._lock:
            self._send_open()
            t = self._clock()
            if not self._q and self._write(HEADER.pack(kind, direction, flag, t, n), b"") < 0:
                return
            self._q.append([kind, direction, flag, t, n, b""])
            if len(self._q) == 1:
                self._bell.put(None)

    def close(self) -> None:
        """End the stream once what is queued is written (``feed``); a place
        still open (a pump blocked on its write) is sent first, whole."""
        with self._lock:
            self._send_open()
            self._closed = True
        self._bell.put(None)

    def feed(self) -> None:
        """Write queued items to the copy pipe until closed and empty (feeder
        thread): waits for the pipe to drain, never for a pump."""
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        item: list[Any] | None = None
        data: Any = None
        body: Any = None
        while True:
            # the last item's bytes are let go before the wait: else held through every pause
            item = data = body = None
            self._bell.get()
            while True:
                with self._lock:
                    if not self._q:
                        if self._closed:
                            return
                        break
                    item = self._q[0]
                    kind, d, flag, t, n, data = item
                    if kind == RAW:
                        head, body = b"", data
                    elif kind == CHUNK:
                        head, body = HEADER.pack(kind, d, flag, t, n), data
                    else:
                        head, body = HEADER.pack(kind, d, flag, t, n), (OFFSET.pack(data) if kind == SPILLED else b"")
                    done = self._write(head, body) if head else self._write_raw(body)
                    if done < 0:
                        self._q.popleft()
                        if kind == CHUNK:
                            self._queued -= n + ITEM_COST
                        continue
                    if done > 0:                                 # keep the unsent rest at the head
                        item[0], item[5] = RAW, memoryview(head + bytes(body))[done:] if head else body[done:]
                        if kind == CHUNK:
                            self._queued -= n + ITEM_COST
                if self._broken:
                    continue
                poller.poll(1000)

    def _write_raw(self, body: Any) -> int:
        if self._broken:
            return -1
        try:
            n = os.write(self._fd, body)
        except BlockingIOError:
            return 0
        except OSError:
            self._broken = True
            return -1
        return -1 if n == len(body) else n
