"""The stdio relay process: the forward path, apart from all analysis.

``start_relay`` forks a small process that only moves bytes:

    host stdin  ──► [c2s pump thread] ──► server stdin
    host stdout ◄── [s2c pump thread] ◄── server stdout
                        │ each chunk, as read, before it is written on
                        ▼
                 ordered queue ──► [feeder thread] ──► copy pipe ──► mcptap (recorder)

Why a process: CPython runs one thread's bytecode at a time (the GIL). With
analysis in the same process, a forward thread that wakes while the recorder
annotates waits for the GIL (5 ms by default, and a scheduler round trip on a
busy machine at any interval), so a flood would still be paced by analysis.
In this process the three threads only run a few bytecodes between blocking
system calls, and nothing else runs. On Linux the s2c pump moves the server's
bytes by tee/splice without copying them through Python (``tee_pump``;
``CopyQueue.chunk_from`` takes the copy from its aux pipe).

The copy stream is a sequence of items: a header ``<BBBqI`` (kind, direction,
flag, t_us, n) then, for ``CHUNK``, n bytes. The queue order is the read
order: a request is queued before it is written to the server, so it precedes
its answer (causal order). ``t_us`` is the recorder's clock (same monotonic
clock, same origin: it is inherited through fork). When mcptap falls behind
reading the copy pipe, copies queue here and, past ``SPILL_BYTES``, go to a
spill file on the capture's disk (``CopyQueue``); forwarding never waits for
the copy stream.

End: at EOF on server stdout (or the host closing ours), the s2c pump ends;
the c2s pump ends at host stdin EOF, when the server closed its stdin, or when
mcptap closes the control pipe (the server exited while the host keeps stdin
open). The process exits once both pumps ended and the queue is written out;
it also dies with mcptap (PR_SET_PDEATHSIG) and ignores terminal signals
(mcptap forwards them to the server).
"""

from __future__ import annotations

import collections
import os
import queue
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from mcptap.transport import tee_pump
from mcptap.transport.copy_stream import C2S, CHUNK, COPY_PIPE_SIZE, END, FAILED, HEADER, LOST, OFFSET, RAW, S2C, SPILLED
from mcptap.transport.forward import BROKEN, EOF, MAX_CHUNK, grow_pipe, pump
from mcptap.transport.spill import SpillFile
from mcptap.transport.tee_pump import SPLICE_F_NONBLOCK, read_exact

SPILL_BYTES = 4 << 20
ITEM_COST = 256                # bytes a queued copy costs beyond its data (a flood of tiny chunks is bounded too)


class CopyQueue:
    """The ordered copy stream of one relay process (module docstring).

    Fast path: while nothing waits, a pump writes its chunk's copy straight
    into the (non-blocking) copy pipe, under the lock that orders the stream.
    When the pipe is full (mcptap is behind), copies queue here for the feeder
    thread; past ``SPILL_BYTES`` queued, a chunk's bytes go to the spill file
    (a ``pwrite``: page cache, no waiting for mcptap) and only its place
    (``SPILLED``: offset, size) is queued, so memory stays bounded and nothing
    is lost; only if the spill file cannot be written either is its size sent
    as ``LOST``."""

    def __init__(self, clock: Callable[[], int], copy_fd: int, spill: SpillFile) -> None:
        self._clock = clock
        self._fd = copy_fd
        self._spill = spill
        self._streamed = [0, 0]               # bytes read so far per direction (stream offsets)
        self._lock = threading.Lock()
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._q: collections.deque[list[Any]] = collections.deque()
        self._queued = 0
        self._closed = False
        self._broken = False
        os.set_blocking(copy_fd, False)

    def chunk(self, direction: int, data: bytes | memoryview) -> list[Any] | None:
        """Send or keep a copy of ``data``, read in ``direction`` (a view of
        the pump's buffer, valid only during this call: what must wait is
        copied). Returns a token for ``withdraw`` (None: already sent)."""
        n = len(data)
        with self._lock:
            t = self._clock()
            offset = self._streamed[direction]
            self._streamed[direction] = offset + n
            if not self._q:
                done = self._write(HEADER.pack(CHUNK, direction, 0, t, n), data)
                if done < 0:
                    return None                               # all sent
                if done > 0:                                  # partly sent: the rest first
                    self._q.append([RAW, direction, 0, t, 0, memoryview(HEADER.pack(CHUNK, direction, 0, t, n) + bytes(data))[done:]])
                    self._bell.put(None)
                    return None
            if self._queued > SPILL_BYTES:
                at = self._spill.append(direction, t, offset, data)
                if at >= 0:
                    self._q.append([SPILLED, direction, 0, t, n, at])
                else:
                    self._q.append([LOST, direction, 0, t, n, b""])
                if len(self._q) == 1:
                    self._bell.put(None)
                return None
            item = [CHUNK, direction, 0, t, n, bytes(data)]
            self._q.append(item)
            self._queued += n + ITEM_COST
            if len(self._q) == 1:
                self._bell.put(None)
        return item

    def chunk_from(self, direction: int, fd: int, n: int) -> list[Any] | None:
        """``chunk`` for ``n`` bytes waiting in the pipe ``fd`` (the tee of a
        pump's source, ``tee_pump``); consumes exactly those n bytes: spliced
        into the copy pipe or the spill file, read only when they must wait
        in memory. Returns a token for ``withdraw`` (None: already sent)."""
        with self._lock:
            t = self._clock()
            offset = self._streamed[direction]
            self._streamed[direction] = offset + n
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
                at = self._spill.append_from(direction, t, offset, fd, n)
                self._q.append([SPILLED, direction, 0, t, n, at] if at >= 0 else [LOST, direction, 0, t, n, b""])
                if len(self._q) == 1:
                    self._bell.put(None)
                return None
            item = [CHUNK, direction, 0, t, n, read_exact(fd, n)]
            self._q.append(item)
            self._queued += n + ITEM_COST
            if len(self._q) == 1:
                self._bell.put(None)
        return item

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
            t = self._clock()
            if not self._q and self._write(HEADER.pack(kind, direction, flag, t, n), b"") < 0:
                return
            self._q.append([kind, direction, flag, t, n, b""])
            if len(self._q) == 1:
                self._bell.put(None)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._bell.put(None)

    def feed(self) -> None:
        """Write queued items to the copy pipe until closed and empty (feeder
        thread): waits for the pipe to drain, never for a pump."""
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while True:
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


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _signal(fd: int, what: bytes) -> None:
    try:
        os.write(fd, what)
    except OSError:
        pass


def _detach(fd: int) -> None:
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass


def child_main(host_in: int, host_out: int, child_in: int, child_out: int, copy_w: int, ctl_r: int,
               spill: SpillFile, status_w: int, clock: Callable[[], int], parent: int) -> None:
    """The relay process body (after fork); never returns."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
            signal.signal(s, signal.SIG_IGN)
        _die_with_parent()
        if os.getppid() != parent:
            os._exit(0)
        q = CopyQueue(clock, copy_w, spill)

        def c2s() -> None:
            how, token, undelivered = pump(host_in, child_in, lambda data: q.chunk(C2S, data), ctl_r)
            if how == BROKEN:
                # the server closed its stdin: stop reading, so the host gets
                # EPIPE on its next write, as it would talking to the server directly
                q.event(FAILED, C2S, 0 if q.withdraw(token) else 1, undelivered)
                _detach(host_in)
            elif how == EOF:
                q.event(END, C2S)
            os.close(child_in)               # the server sees EOF on its stdin
            if how == EOF:
                _signal(status_w, b"i")

        def s2c() -> None:
            how, token, undelivered = tee_pump.pump_s2c(child_out, host_out, lambda data: q.chunk(S2C, data),
                                                        lambda fd, n: q.chunk_from(S2C, fd, n))
            if how == BROKEN:
                # the host closed our stdout: close the server's, so it gets
                # EPIPE/SIGPIPE like a direct pipe would give it
                q.event(FAILED, S2C, 0 if q.withdraw(token) else 1, undelivered)
            else:
                q.event(END, S2C)
            os.close(child_out)
            _detach(host_out)                # the host sees EOF on its stdin now
            _signal(status_w, b"o")

        feeder = threading.Thread(target=q.feed, name="mcptap-copy")
        feeder.start()
        t_c2s = threading.Thread(target=c2s, name="mcptap-c2s", daemon=True)
        t_c2s.start()
        s2c()
        t_c2s.join()
        q.close()
        feeder.join()
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        code = 70
    os._exit(code)


def start_relay(host_in: int, host_out: int, child_in: int, child_out: int, clock: Callable[[], int],
                spill: SpillFile) -> tuple[int, int, int, int]:
    """Fork the relay process. Returns ``(pid, copy_r, ctl_w, status_r)``:
    the copy stream to read, the control pipe to close when the c2s pump must
    end, and the status pipe (``i``: host stdin ended, ``o``: the server's
    stdout ended; sent at once, ahead of the copy stream). SPILLED items are
    read from ``spill`` (``spill.SpillFile``; beside the capture, so a flood
    fills the disk the capture is on, not memory). The caller must close its own copies of
    ``child_in`` and ``child_out`` and point fds 0/1 elsewhere, so that only
    the relay holds them. Call it before starting threads (fork copies only
    the calling thread)."""
    copy_r, copy_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    status_r, status_w = os.pipe()
    grow_pipe(copy_w, COPY_PIPE_SIZE)
    # the server's stdout (our pipe): a flooding server writes a whole read's
    # worth per wake-up and the s2c pump moves it with one read, one write and
    # one copy (a 64 KiB pipe: four of each, and four times the wake-ups)
    grow_pipe(child_out, MAX_CHUNK)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(copy_r)
        os.close(ctl_w)
        os.close(status_r)
        child_main(host_in, host_out, child_in, child_out, copy_w, ctl_r, spill, status_w, clock, parent)
    os.close(copy_w)
    os.close(ctl_r)
    os.close(status_w)
    return pid, copy_r, ctl_w, status_r
