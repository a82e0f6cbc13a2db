"""The stdio relay's spill file: forwarded bytes set aside on disk while
mcptap's analysis is behind (``relay_child.CopyQueue``), so memory stays
bounded and nothing is lost.

It lives beside the capture as ``<capture>.spill`` (``spill_path``), is
created on the first spilled chunk and removed once the capture has taken its
bytes. Each entry describes itself, ``ENTRY`` (direction 0 c2s / 1 s2c,
``t_us``, the chunk's offset in its direction's byte stream, size n) then the
n bytes, so if mcptap is killed before it recorded them (SIGKILL), they can
still be added to the capture: ``mcptap recover CAPTURE`` (``entries`` reads
them back). Without a capture file the spill file is an unlinked temporary
file (nothing to recover into).

Rewind (stdio): the file is not a log of the whole session but of the bytes the
capture file may still lack. ``Recorded`` is a block of shared memory, made
before the relay is forked, where mcptap's recorder thread stores per direction
the end offset of the stream bytes whose records are written to the capture
file (``Handoff``, after each flush). Before it appends an entry, the relay
(``SpillFile.append``/``append_from``, under the copy queue's lock: the only
writer) compares those two values with the end of the last entry it spilled per
direction; once both are covered it truncates the file to zero and appends from
offset 0 again, so the file's size is the largest backlog, not the session's
total. Why this is sound:

* mcptap reads an entry (a ``SPILLED`` item's offset) before its bytes are
  recorded, and publishes only after they are written, so when every spilled
  end is covered no ``SPILLED`` item is left unread; entries appended after the
  rewind come later in the copy stream, with their new offsets.
* a kill (SIGKILL) at any moment: the entries the rewind dropped are in the
  capture file (written with ``write``: the page cache keeps them when the
  process dies), where ``recover`` would have skipped them anyway; the entries
  left are the ones appended since, which ``recover`` adds as before. The
  truncation is one system call; a kill mid-append leaves a cut last entry,
  which ``entries`` skips (as without rewinds).
* the published values only grow, are each one aligned 8-byte store and load,
  and lag the truth at worst (a stale load means no rewind yet). While records
  the capture lost (disk full) have no ``gap`` record on disk, or once the
  recorder failed, they stop growing (``Recorder.stored_ends``): the file is a
  log, ``recover`` finds those bytes; once a gap record declares them lost,
  rewinds go on (as the HTTP tap's: ``recover`` fills no hole anyway).

Bound: one fill of the file (from empty or a rewind) holds at most
``spill_bound.allowance`` bytes; an append past it writes nothing and returns
``FULL`` (the caller sends the chunk's size as ``LOST``: a ``gap`` record).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import tempfile
from collections.abc import Callable

# the file's format moved to capture/spill_format.py (level 1: recover, ls and prune read it); re-exported
from mcptap.capture.spill_format import ENTRY, hold
from mcptap.capture.spill_format import NAME_MAX as NAME_MAX
from mcptap.capture.spill_format import SUFFIX as SUFFIX
from mcptap.capture.spill_format import entries as entries
from mcptap.capture.spill_format import is_spill_file as is_spill_file
from mcptap.capture.spill_format import spill_path as spill_path
from mcptap.transport import spill_bound

#: disk space reserved ahead of the writes (``fallocate`` with FALLOC_FL_KEEP_SIZE:
#: the file's size, and so what ``entries`` reads, stays that of its entries).
#: A flood writes ~100 MB here from the forwarding thread; into reserved blocks
#: ext4 spends less per page (no delayed-allocation reservation per block):
#: 37 -> 29 ms of CPU per 100 MiB in 256 KiB writes (micro-benchmark, 3 runs)
RESERVE = 8 << 20
#: file size kept by ``rewind`` (beyond it the file is truncated): a spill of up to this
#: size rewrites page-cache pages the last one left (64 MiB fresh: 16-39 ms of the relay's
#: CPU on the round-10 VM; rewritten: 5.6 ms), a larger one gives its disk space back
KEEP_BYTES = 64 << 20
_KEEP_SIZE = 1
#: what an append returns when the entry would take the file past its bound (``spill_bound``)
FULL = -2


def _fallocate_fn() -> Callable[[int, int, int], bool] | None:
    """``fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length)`` from libc
    (True on success), or None where libc has none."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fn.restype = ctypes.c_int
    return lambda fd, offset, length: fn(fd, _KEEP_SIZE, offset, length) == 0


class Recorded:
    """Per direction (``c2s``, ``s2c``: ``ctypes.c_uint64``, stream offsets in
    bytes): the end of the bytes whose records the capture file holds,
    stored by mcptap (``publish``), loaded by the relay process (``SpillFile``).
    Anonymous shared memory (``mmap(-1)``, MAP_SHARED): make it before the
    fork. Each value is one aligned 8-byte word, so a load never sees half a
    store; both start at 0 (nothing recorded)."""

    def __init__(self) -> None:
        self._mm = mmap.mmap(-1, 16)
        self.c2s = ctypes.c_uint64.from_buffer(self._mm, 0)
        self.s2c = ctypes.c_uint64.from_buffer(self._mm, 8)

    def publish(self, c2s: int, s2c: int) -> None:
        """The capture file holds every byte before ``c2s``/``s2c`` of each
        direction (call after the records were written; values never shrink)."""
        self.c2s.value = c2s
        self.s2c.value = s2c


class SpillFile:
    """One spill file. ``path``: created on the first ``append`` (truncating
    a stale one: its capture was overwritten too); None: an unlinked
    temporary file in ``tmp_dir``, opened now (so a fork shares it).
    ``recorded``: what the capture holds (stdio tap); the file is rewound
    before an append once it holds every entry (module docstring); None:
    never (the HTTP tap rewinds with ``rewind``). ``limit``: the most one fill
    of the file may hold (bytes; default ``spill_bound.configured_limit()``),
    less where the disk has less room (``spill_bound.allowance``)."""

    def __init__(self, path: str | None, tmp_dir: str | None = None, recorded: Recorded | None = None,
                 limit: int | None = None) -> None:
        self.path = path
        self.limit = spill_bound.configured_limit(strict=False) if limit is None else limit
        self._allowed = -1              # bytes this fill may hold (-1: measured at its first append)
        self._recorded = recorded
        self._spilled = [0, 0]          # per direction: stream end of the last entry appended (relay)
        self.rewinds = 0                # times the relay rewound the file (``Recorded``)
        self._fd = -1
        self._end = 0
        self._reserved = 0              # bytes reserved by fallocate; -1: it failed, not tried again
        self._fallocate: Callable[[int, int, int], bool] | None = None
        self.used = False
        self._appended = 0              # bytes of every entry ever written (``append_pieces``)
        if path is None:
            try:
                self._fd, tmp = tempfile.mkstemp(prefix=".mcptap-spill-", dir=tmp_dir)
            except OSError:
                self._fd, tmp = tempfile.mkstemp(prefix=".mcptap-spill-")
            os.unlink(tmp)

    def _open(self, create: bool) -> int:
        if self._fd < 0 and self.path is not None:
            flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0) | ((os.O_CREAT | os.O_TRUNC) if create else 0)
            self._fd = os.open(self.path, flags, 0o600)
            hold(self._fd)          # in use while open: prune leaves it, also once its capture is gone
        self.used = True
        return self._fd

    def _fits(self, fd: int, end: int) -> bool:
        """Whether this fill of the file may grow to ``end`` bytes (the free
        space is measured once a fill, at its first append)."""
        if self._allowed < 0:
            where = os.path.dirname(self.path) if self.path is not None else None
            self._allowed = spill_bound.allowance(self.limit, spill_bound.free_bytes(fd, where))
        return end <= self._allowed

    def _reserve(self, fd: int, end: int) -> None:
        """Reserve disk space up to ``end`` at least (``RESERVE`` at a time,
        never past the bound: ``end`` is within it)."""
        if 0 <= self._reserved < end:
            if self._fallocate is None:
                self._fallocate = _fallocate_fn() or (lambda fd, offset, length: False)
            while self._reserved < end:
                length = min(RESERVE, self._allowed - self._reserved)
                if not self._fallocate(fd, self._reserved, length):
                    self._reserved = -1          # not supported here, or the disk is full: plain writes
                    return
                self._reserved += length

    def append(self, direction: int, t_us: int, offset: int, data: bytes | memoryview) -> int:
        """Write one entry (relay process); returns the file offset of its
        data, ``FULL`` past the file's bound, or -1 if it could not be written
        whole (disk full, …)."""
        if self._recorded is not None and self._end:
            self._restart()
        try:
            fd = self._open(True)
            if not self._fits(fd, self._end + ENTRY.size + len(data)):
                return FULL
            self._reserve(fd, self._end + ENTRY.size + len(data))
            head = ENTRY.pack(direction, t_us, offset, len(data))
            n = os.pwritev(fd, [head, data], self._end)
        except OSError:
            return -1
        if n != ENTRY.size + len(data):
            return -1
        at = self._end + ENTRY.size
        self._end += n
        self._spilled[direction] = offset + len(data)
        return at

    def append_pieces(self, pieces: list[bytes | memoryview]) -> int:
        """``append`` of the pieces one after the other as one entry (one
        ``pwritev``, direction 0, t_us and offset 0: for the HTTP tap's fact
        stream, whose spill file is never recovered from); returns like ``append``."""
        try:
            fd = self._open(True)
            size = sum(len(p) for p in pieces)
            if not self._fits(fd, self._end + ENTRY.size + size):
                return FULL
            self._reserve(fd, self._end + ENTRY.size + size)
            n = os.pwritev(fd, [ENTRY.pack(0, 0, 0, size), *pieces], self._end)
        except OSError:
            return -1
        if n != ENTRY.size + size:
            return -1
        at = self._end + ENTRY.size
        self._end += n
        self._appended += n
        try:
            os.lseek(fd, self._appended, os.SEEK_SET)      # ``appended()`` in the forked reader
        except OSError:
            pass
        return at

    def append_from(self, direction: int, t_us: int, offset: int, fd: int, n: int) -> int:
        """``append`` for ``n`` bytes waiting in the pipe ``fd``, spliced
        into the file (no copy through user space); consumes exactly those
        n bytes whatever happens. Returns like ``append``."""
        if self._recorded is not None and self._end:
            self._restart()
        done = 0
        try:
            wfd = self._open(True)
            at = self._end + ENTRY.size
            if not self._fits(wfd, at + n):
                _discard(fd, n)
                return FULL
            self._reserve(wfd, at + n)
            if os.pwrite(wfd, ENTRY.pack(direction, t_us, offset, n), self._end) != ENTRY.size:
                raise OSError("short write")
            while done < n:
                moved = os.splice(fd, wfd, n - done, offset_dst=at + done)
                if not moved:
                    raise OSError("pipe ended early")
                done += moved
        except OSError:
            _discard(fd, n - done)
            return -1
        self._end = at + n
        self._spilled[direction] = offset + n
        return at

    def size(self) -> int:
        """Bytes in the file now (0 before the first entry or where fstat fails):
        it grows while the relay sets chunks aside."""
        fd = self._fd
        if fd < 0 and self.path is not None:
            try:
                return os.stat(self.path).st_size
            except OSError:
                return 0
        try:
            return os.fstat(fd).st_size if fd >= 0 else 0
        except OSError:
            return 0

    def appended(self) -> int:
        """Bytes ``append_pieces`` ever wrote to this file (entries, rewinds
        included; 0 where unknown), also read in the forked HTTP recorder
        process: the writer keeps it in the descriptor's file offset, which
        both processes share after the fork (``pwrite``/``pread`` never move
        it). It grows while the relay sets frames aside, where ``size`` may
        not once the file was rewound."""
        try:
            return os.lseek(self._fd, 0, os.SEEK_CUR) if self._fd >= 0 else 0
        except OSError:
            return 0

    def rewind(self) -> None:
        """Write the next entries from the start of the file again (the HTTP
        tap's unlinked spill file, once the recorder read every entry back:
        ``http_recorder``), so its disk use is the largest backlog, not all
        the bytes ever set aside, and a later backlog rewrites pages the page
        cache still holds. Beyond ``KEEP_BYTES`` the file is truncated to that.
        Not for a named file: ``entries``/``recover`` read it as a log of what
        the capture may lack, which the relay rewinds itself (``Recorded``)."""
        if self.path is not None:
            raise ValueError("only an unlinked spill file is rewound")
        self._end = 0
        self._allowed = -1
        if self._fd < 0:
            return
        try:
            if os.fstat(self._fd).st_size > KEEP_BYTES:
                os.ftruncate(self._fd, KEEP_BYTES)       # frees the blocks reserved beyond it too
                self._reserved = min(self._reserved, KEEP_BYTES)
        except OSError:
            pass

    def _restart(self) -> None:
        """Before an append (relay, under the copy queue's lock; only reached
        while spilling): if the capture holds every entry (``Recorded``: two
        loads), append from offset 0 again. A named file
        is truncated to zero first, so ``entries`` never reads a stale entry
        past the new ones (it frees the blocks reserved beyond, too); an
        unlinked one is ``rewind``-ed (it keeps its pages). If the truncation
        fails the file goes on as a log."""
        r = self._recorded
        assert r is not None
        if r.c2s.value < self._spilled[0] or r.s2c.value < self._spilled[1]:
            return
        if self.path is None:
            self.rewind()
        else:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                return
            self._end = 0
            self._allowed = -1
            self._reserved = min(self._reserved, 0)     # -1 (fallocate failed) stays
        self.rewinds += 1

    def read(self, at: int, n: int) -> bytes:
        """``n`` bytes of data at file offset ``at`` (mcptap; raises OSError)."""
        return os.pread(self._open(False), n, at)

    def close(self, remove: bool = False) -> None:
        """Close; ``remove``: also delete the file (its bytes are recorded)."""
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1
        if remove and self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _discard(fd: int, n: int) -> None:
    """Read and drop ``n`` bytes of the pipe ``fd`` (they could not be kept)."""
    while n > 0:
        try:
            data = os.read(fd, min(n, 1 << 16))
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        n -= len(data)
