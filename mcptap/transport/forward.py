"""The stdio forward path: one blocking byte pump per direction, in its own thread.

A pump reads what is there (into a buffer of its own), hands it to ``seen``
and writes it on, then calls ``after`` (the relay: ``CopyQueue.take`` and
``put``, the copy for the recorder), with plain blocking reads and writes on
the raw fds: nothing on this path parses, annotates, waits for the recorder
or touches the disk, and no trio scheduling sits between a read and its
write. ``seen`` runs *before* the write, so a request has its place in the
copy stream before the server can answer it and the capture keeps causal
order; the copy itself is sent by ``after``, once the chunk was written on
(a round trip does not wait for it).

The buffer starts at ``CHUNK`` (64 KiB) and grows once to ``MAX_CHUNK``
(256 KiB) when a read fills it (a flood): a quarter of the reads, writes and
copies, and no new buffer per read (a large ``os.read`` maps and faults in
fresh pages every time). 1 MiB measured no less relay CPU and raised mcptap's
peak memory in floods (1 MiB chunk records, framed 10,000 messages at a time).
That read also grows the pipes on both sides to ``MAX_CHUNK`` (``grow_pipe``:
never shrinks one): the host's are 64 KiB as a rule, so a 256 KiB chunk went
out in four waits for the host to drain it (and the server's stdin, filled by
256 KiB writes, woke the pump for each 8 KiB its reader took). Only a flood
grows them: every pipe page counts against the user's pipe quota
(/proc/sys/fs/pipe-user-pages-soft). 1M-notification floods, same runs, CPU
medians: host 235 -> 172 ms and relay 74 -> 63 ms s2c, relay 320 -> 227 ms
both directions; the host's context switches 1,589 -> 484 per flood
(docs/internals.md, stop 40).

Blocking fds are never switched to O_NONBLOCK (a terminal's or a shared pipe's
open file description stays as the host left it); if the host hands us a
non-blocking fd, EAGAIN is waited out with ``poll``.
"""

from __future__ import annotations

import errno
import io
import os
import select
from collections.abc import Callable
from typing import Any

CHUNK = 64 * 1024
MAX_CHUNK = 256 << 10

EOF = "eof"            # the source ended (or failed: EIO from a hung-up terminal, …)
BROKEN = "broken"      # the destination refused a write (EPIPE, …)
STOPPED = "stopped"    # ``stop`` fd became readable
FULL = "full"          # a read filled the first buffer (``until_full``): a flood, the caller takes over


def _wait(fd: int, events: int) -> None:
    p = select.poll()
    p.register(fd, events)
    p.poll()


def pump(src: int, dst: int, seen: Callable[[memoryview], Any], stop: int | None = None,
         until_full: bool = False, after: Callable[[Any, int], Any] | None = None) -> tuple[str, Any, int]:
    """Copy ``src`` to ``dst`` until EOF, a failed write, or ``stop`` (an fd
    that becomes readable when the pump must end; polled before each read,
    so a pump blocked on a host that never closes its stdin can be ended).
    ``seen`` gets each chunk as a view of the pump's buffer, valid only until
    it returns (copy what must be kept), or, with ``after``, until
    ``after(token, sent)`` returns: ``seen`` is called before the write,
    ``after`` once the chunk was written on (``sent``: its bytes written, fewer
    than all when the write failed; for ``BROKEN``, ``token`` is then what
    ``after`` returned).

    Returns ``(EOF, None, 0)``, ``(STOPPED, None, 0)``, ``(FULL, None, 0)``
    (``until_full``: after forwarding a chunk that filled the first buffer,
    instead of growing it) or ``(BROKEN, token, undelivered)``: ``token`` is
    what ``seen`` returned for the chunk whose write failed and ``undelivered`` its bytes not written. Never raises for
    I/O errors."""
    poller = None
    if stop is not None:
        poller = select.poll()
        poller.register(src, select.POLLIN)
        poller.register(stop, select.POLLIN)
    readinto, write = _reader(src), os.write
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    full = CHUNK                             # a read of this size fills the first buffer (-1: grown)
    while True:
        if poller is not None:
            ready = poller.poll()
            if len(ready) > 1 or ready[0][0] == stop:
                return STOPPED, None, 0
        try:
            size = readinto(view)
        except BlockingIOError:
            size = None
        except OSError:
            size = 0
        if size is None:                     # EAGAIN: a non-blocking fd the host gave us
            if poller is None:
                _wait(src, select.POLLIN)
            continue
        if not size:
            return EOF, None, 0
        data = view[:size]
        token = seen(data)
        done = 0
        while done < size:
            try:
                done += write(dst, data if done == 0 else data[done:])
            except BlockingIOError:
                _wait(dst, select.POLLOUT)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                if after is not None:
                    token = after(token, done)
                return BROKEN, token, size - done
        if after is not None:
            after(token, size)
        del data
        if size == full:                     # a full read: more is coming, take it in bigger bites
            grow_pipe(src, MAX_CHUNK)
            grow_pipe(dst, MAX_CHUNK)
            if until_full:
                return FULL, None, 0
            buf = bytearray(MAX_CHUNK)
            view = memoryview(buf)
            full = -1


def _reader(fd: int) -> Callable[[memoryview], int | None]:
    """``readinto(view)`` of ``fd``: bytes read into ``view``, None at EAGAIN;
    raises OSError. A FileIO's ``readinto`` (never closing ``fd``): ``os.readv``
    built a list and an iovec array per read, ~450 more instructions a chunk."""
    try:
        return io.FileIO(fd, "rb", closefd=False).readinto
    except (OSError, ValueError):
        bufs: list[Any] = []

        def readv(view: memoryview) -> int:
            bufs[:] = [view]
            return os.readv(fd, bufs)

        return readv


def grow_pipe(fd: int, size: int) -> int:
    """Ask for a pipe buffer of at least ``size`` bytes (Linux; refused beyond
    /proc/sys/fs/pipe-max-size or a user's pipe page quota, or for an fd that
    is not a pipe: then as it is). Never shrinks it: a host's pipe may be
    larger already. Returns the buffer's size after (0: not a pipe, or unknown)."""
    try:
        import fcntl

        have = int(fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032)))
    except (OSError, ValueError):
        return 0
    if have >= size:
        return have
    try:
        return int(fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size))
    except (OSError, ValueError):
        return have


def detach_fd(fd: int) -> None:
    """Point ``fd`` at /dev/null: the host sees EOF / EPIPE on its end while
    our process keeps a valid fd 0/1 (Python may still touch them). Never raises."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass
