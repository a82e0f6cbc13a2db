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
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Callable, Iterator

ENTRY = struct.Struct("<BqQI")
SUFFIX = ".spill"
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


def _fallocate_fn() -> Callable[[int, int, int], bool] | None:
    """``fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length)`` from libc
    (True on success), or None where libc has none."""
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError, ImportError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fn.restype = ctypes.c_int
    return lambda fd, offset, length: fn(fd, _KEEP_SIZE, offset, length) == 0


def spill_path(capture_path: str) -> str:
    """Where the spill file of the capture at ``capture_path`` goes."""
    return capture_path + SUFFIX


class SpillFile:
    """One spill file. ``path``: created on the first ``append`` (truncating
    a stale one: its capture was overwritten too); None: an unlinked
    temporary file in ``tmp_dir``, opened now (so a fork shares it)."""

    def __init__(self, path: str | None, tmp_dir: str | None = None) -> None:
        self.path = path
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
        self.used = True
        return self._fd

    def _reserve(self, fd: int, end: int) -> None:
        """Reserve disk space up to ``end`` at least (``RESERVE`` at a time)."""
        if 0 <= self._reserved < end:
            if self._fallocate is None:
                self._fallocate = _fallocate_fn() or (lambda fd, offset, length: False)
            while self._reserved < end:
                if not self._fallocate(fd, self._reserved, RESERVE):
                    self._reserved = -1          # not supported here, or the disk is full: plain writes
                    return
                self._reserved += RESERVE

    def append(self, direction: int, t_us: int, offset: int, data: bytes | memoryview) -> int:
        """Write one entry (relay process); returns the file offset of its
        data, or -1 if it could not be written whole (disk full, …)."""
        try:
            fd = self._open(True)
            self._reserve(fd, self._end + ENTRY.size + len(data))
            head = ENTRY.pack(direction, t_us, offset, len(data))
            n = os.pwritev(fd, [head, data], self._end)
        except OSError:
            return -1
        if n != ENTRY.size + len(data):
            return -1
        at = self._end + ENTRY.size
        self._end += n
        return at

    def append_pieces(self, pieces: list[bytes | memoryview]) -> int:
        """``append`` of the pieces one after the other as one entry (one
        ``pwritev``, direction 0, t_us and offset 0: for the HTTP tap's fact
        stream, whose spill file is never recovered from); returns like ``append``."""
        try:
            fd = self._open(True)
            size = sum(len(p) for p in pieces)
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
        done = 0
        try:
            wfd = self._open(True)
            at = self._end + ENTRY.size
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
        Not for a named file: ``entries``/``recover`` read it as a log."""
        if self.path is not None:
            raise ValueError("only an unlinked spill file is rewound")
        self._end = 0
        if self._fd < 0:
            return
        try:
            if os.fstat(self._fd).st_size > KEEP_BYTES:
                os.ftruncate(self._fd, KEEP_BYTES)       # frees the blocks reserved beyond it too
                self._reserved = min(self._reserved, KEEP_BYTES)
        except OSError:
            pass

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


def entries(path: str) -> Iterator[tuple[int, int, int, bytes]]:
    """``(direction, t_us, stream offset, data)`` of each whole entry of the
    spill file at ``path``, in the order the relay read them (a cut last
    entry is skipped). Raises OSError if it cannot be read."""
    with open(path, "rb") as fp:
        while True:
            head = fp.read(ENTRY.size)
            if len(head) < ENTRY.size:
                return
            direction, t_us, offset, n = ENTRY.unpack(head)
            data = fp.read(n)
            if len(data) < n or direction > 1:
                return
            yield direction, t_us, offset, data
