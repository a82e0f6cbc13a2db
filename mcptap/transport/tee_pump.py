"""The s2c pump of the stdio relay without copies through Python (Linux).

``forward.pump`` reads each chunk of the server's stdout into its buffer
(a copy), writes it to the host (a second copy, into pages the host's pipe
allocates) and, when mcptap is behind, writes it to the spill file as well. In
a flood that is ~100 MB through user space twice. Here the bytes stay in the
kernel's pipe pages:

    n = tee(server stdout -> aux pipe)     duplicates page references, consumes nothing
    token = seen(aux_r, n)                 the copy's place in the stream
    splice(server stdout -> host stdout)   moves those n bytes on (page references)
    after(token, n)                        the copy: consumes exactly n bytes of aux
                                           (without ``after``, ``seen`` does)

Only floods come here (``pump_s2c``): the pump starts as ``forward.pump``
and switches to tee/splice once a read fills its buffer, and back once a tee
brings less than ``SMALL`` bytes: for a round trip's small message the four
system calls here (one through ctypes) cost more than the copies they save
(added p50 +15 µs measured).

``seen`` runs before the bytes move on and ``after`` once they moved, as in
``forward.pump`` (causal order: a chunk has its place in the copy stream
before the peer can answer it). The copy queue takes the n bytes from the aux
pipe by ``splice`` into the copy pipe or into the spill file, and reads them
only when they must wait in memory (``relay_child.CopyQueue.take_from`` and
``put``, or ``chunk_from``).

Where the host's stdout refuses ``splice`` (a terminal, some character
devices: EINVAL), the bytes of that chunk are read and written as
``forward.pump`` would, and ``FALLBACK`` tells the caller to go on with
``forward.pump``. Where ``tee`` itself is missing, ``tee_fn`` returns None and
the caller never comes here.
"""

from __future__ import annotations

import errno
import os
import select
from collections.abc import Callable
from typing import Any

from mcptap.transport.forward import BROKEN, EOF, FULL, MAX_CHUNK, grow_pipe, pump

FALLBACK = "fallback"     # the destination refused splice: go on with forward.pump
SMALL_CHUNK = "small"     # a tee brought less than ``small`` bytes: the flood is over
SMALL = 4096
SPLICE_F_NONBLOCK = 2
_NOT_SPLICEABLE = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ESPIPE, errno.EBADF)

Tee = Callable[[int, int, int, int], int]


def tee_fn() -> Tee | None:
    """``tee(fd_in, fd_out, len, flags)`` from libc (ctypes), raising OSError
    like ``os`` functions; None where libc has no ``tee``."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.tee
    except (OSError, AttributeError, ImportError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    fn.restype = ctypes.c_ssize_t
    get_errno = ctypes.get_errno

    def tee(fd_in: int, fd_out: int, n: int, flags: int) -> int:
        got = int(fn(fd_in, fd_out, n, flags))
        if got < 0:
            e = get_errno()
            raise OSError(e, os.strerror(e))
        return got

    return tee


def read_exact(fd: int, n: int) -> bytes:
    """Exactly ``n`` bytes from ``fd`` (a pipe known to hold them)."""
    parts = []
    while n:
        try:
            data = os.read(fd, n)
        except InterruptedError:
            continue
        if not data:
            raise OSError(errno.EIO, "pipe ended early")
        parts.append(data)
        n -= len(data)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _wait(fd: int, events: int) -> None:
    p = select.poll()
    p.register(fd, events)
    p.poll()


def tee_pump(tee: Tee, src: int, dst: int, aux_r: int, aux_w: int, chunk: int,
             seen: Callable[[int, int], Any], small: int = 0,
             after: Callable[[Any, int], Any] | None = None) -> tuple[str, Any, int]:
    """Move ``src`` (a pipe) to ``dst`` in pieces of up to ``chunk`` bytes
    until EOF or a failed write; ``seen(aux_r, n)`` must consume exactly the n
    bytes that ``tee`` put in the empty aux pipe (``aux_w`` holds at least
    ``chunk`` bytes), or, with ``after``, ``after(token, sent)`` (called once
    the chunk moved on, ``sent`` its bytes moved) must. Returns like ``forward.pump`` (``(EOF, None, 0)``,
    ``(BROKEN, token, undelivered)``), or ``(FALLBACK, None, 0)`` once
    ``dst`` refused splice (the chunk in hand was written whole; nothing is
    left in the aux pipe), or ``(SMALL_CHUNK, None, 0)`` after moving a chunk
    of fewer than ``small`` bytes. Never raises for I/O errors."""
    while True:
        try:
            n = tee(src, aux_w, chunk, 0)
        except InterruptedError:
            continue
        except BlockingIOError:
            _wait(src, select.POLLIN)
            continue
        except OSError:
            n = 0
        if not n:
            return EOF, None, 0
        token = seen(aux_r, n)
        done = 0
        while done < n:
            try:
                moved = os.splice(src, dst, n - done)
            except BlockingIOError:
                _wait(dst, select.POLLOUT)
                continue
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno in _NOT_SPLICEABLE and done == 0:
                    return _write_plain(src, dst, n, token, after)
                if after is not None:
                    token = after(token, done)
                return BROKEN, token, n - done
            if not moved:                # cannot happen: the n bytes are in src
                if after is not None:
                    after(token, done)
                return EOF, None, 0
            done += moved
        if after is not None:
            after(token, n)
        if n < small:
            return SMALL_CHUNK, None, 0


def _write_plain(src: int, dst: int, n: int, token: Any, after: Callable[[Any, int], Any] | None) -> tuple[str, Any, int]:
    """The chunk in hand, read and written (``dst`` refused splice)."""
    try:
        data = memoryview(read_exact(src, n))
    except OSError:
        if after is not None:
            after(token, 0)
        return EOF, None, 0
    done = 0
    while done < n:
        try:
            done += os.write(dst, data[done:])
        except BlockingIOError:
            _wait(dst, select.POLLOUT)
        except InterruptedError:
            continue
        except OSError:
            if after is not None:
                token = after(token, done)
            return BROKEN, token, n - done
    if after is not None:
        after(token, n)
    return FALLBACK, None, 0


class Aux:
    """The aux pipe of one pump (grown to ``MAX_CHUNK``) and libc's tee;
    ``ok`` is False where either is missing."""

    def __init__(self) -> None:
        self.tee = tee_fn()
        self.fds: tuple[int, int] | None = None
        self.room = 1 << 16
        if self.tee is None:
            return
        try:
            self.fds = os.pipe()
        except OSError:
            return
        self.room = min(MAX_CHUNK, grow_pipe(self.fds[1], MAX_CHUNK)) or self.room

    @property
    def ok(self) -> bool:
        return self.tee is not None and self.fds is not None

    def close(self) -> None:
        if self.fds is not None:
            for fd in self.fds:
                os.close(fd)
            self.fds = None


def pump_s2c(src: int, dst: int, seen_view: Callable[[memoryview], Any],
             seen_pipe: Callable[[int, int], Any], after: Callable[[Any, int], Any] | None = None,
             after_pipe: Callable[[Any, int], Any] | None = None) -> tuple[str, Any, int]:
    """``forward.pump`` (``seen_view``, ``after``) that hands floods to
    ``tee_pump`` (``seen_pipe``, ``after_pipe``) and takes them back (module
    docstring); returns like ``forward.pump``."""
    aux: Aux | None = None
    try:
        while True:
            how, token, undelivered = pump(src, dst, seen_view, until_full=aux is None or aux.ok, after=after)
            if how != FULL:
                return how, token, undelivered
            if aux is None:
                aux = Aux()
            if not aux.ok or aux.tee is None or aux.fds is None:
                continue
            how, token, undelivered = tee_pump(aux.tee, src, dst, aux.fds[0], aux.fds[1], aux.room, seen_pipe, SMALL, after_pipe)
            if how == FALLBACK:
                aux.close()
                aux.tee = None
            elif how != SMALL_CHUNK:
                return how, token, undelivered
    finally:
        if aux is not None:
            aux.close()
