"""Where a capture is read from: a file, ``-`` (standard input), and gzip
(``.jsonl.gz``, recognised by its magic bytes, from a file or stdin).

``open_input(path)`` returns a binary file object (``opened(path)``: a
regular file, as a context); ``lines(fp, path)`` its lines, where a gzip stream that ends early reads as far as it goes and then
counts as a cut last line, and a damaged one is a CaptureReadError."""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, cast

from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name

#: Yielded after the last complete line of a gzip stream that ended early:
#: not JSON and without a newline, so the reader reports a truncated capture.
CUT = b"\x00cut"


def read_once(path: str) -> bool:
    """Whether ``path`` can be read only once, as it comes: ``-`` (standard
    input), a FIFO, ``<(…)``, anything not a regular file. False for a path
    that is not there (yet) or cannot be stat'ed: the reader says why."""
    if path == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def open_input(path: str) -> IO[bytes]:
    """Open ``path`` (``-``: stdin) for reading, decompressing gzip.
    Raises CaptureReadError."""
    try:
        fp: Any = sys.stdin.buffer if path == "-" else open(path, "rb")   # the caller closes it
        if hasattr(fp, "peek"):
            magic = fp.peek(2)[:2]
        else:   # an in-memory stdin (tests, embedding): no peek, so read it whole
            fp = io.BytesIO(fp.read())
            magic = fp.getvalue()[:2]
    except OSError as exc:
        raise CaptureReadError(f"cannot open capture {escape_name(path)}: {exc.strerror or exc}") from None
    if magic == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=fp, mode="rb"))
    return cast(IO[bytes], fp)


@contextmanager
def opened(path: str) -> Iterator[IO[bytes]]:
    """The file ``path`` for reading, gzip decompressed as it is read, closed
    on leaving (for a byte search of the whole file, not stdin). A gzip
    stream cut short or damaged reads, as :func:`lines` reads it, as far as it
    goes and then ends (``read`` gives b""): a search over it sees every byte
    before the damage, and the reader reports the damage. Raises OSError."""
    with open(path, "rb") as fp:
        src: Any = fp
        if fp.peek(2)[:2] == b"\x1f\x8b":
            src = _AsFarAsItGoes(gzip.GzipFile(fileobj=fp, mode="rb"))
        with src:
            yield cast(IO[bytes], src)


class _AsFarAsItGoes:
    """A gzip file's ``read(n)`` that ends where the stream is cut or damaged,
    keeping the bytes decompressed before: ``GzipFile.read(n)`` raises there
    and drops every byte it had gathered for that call (a whole small file)."""

    def __init__(self, gz: gzip.GzipFile) -> None:
        self._gz = gz
        self._done = False

    def read(self, n: int = -1) -> bytes:
        parts: list[bytes] = []
        got = 0
        while not self._done and (n < 0 or got < n):
            try:
                part = self._gz.read1(n - got if n >= 0 else 1 << 20)     # one step: nothing decompressed is lost
            except (EOFError, gzip.BadGzipFile, zlib.error):
                part = b""
            if not part:
                self._done = True
                break
            parts.append(part)
            got += len(part)
        return b"".join(parts)

    def __enter__(self) -> _AsFarAsItGoes:
        return self

    def __exit__(self, *exc: object) -> None:
        self._gz.close()


#: a header line is a few hundred bytes (its argv may be long); beyond this the file is no capture
HEADER_LIMIT = 16 << 20


def read_line(fp: IO[bytes], path: str) -> bytes:
    """One line (the header), at most ``HEADER_LIMIT`` bytes: a file without
    a line break (``/dev/zero``, a core dump) is refused, not read into
    memory whole. Raises CaptureReadError (also for damaged gzip)."""
    try:
        line = fp.readline(HEADER_LIMIT + 1)
    except EOFError as exc:         # a gzip stream that ends before its end marker
        raise CaptureReadError(f"{escape_name(path)}:1: damaged capture: its gzip stream is cut short ({exc})") from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise CaptureReadError(f"cannot read capture {escape_name(path)}: {exc}") from None
    if len(line) > HEADER_LIMIT:
        raise CaptureReadError(f"{escape_name(path)}:1: not an mcptap capture (no line break in its first {HEADER_LIMIT >> 20} MiB)")
    return line


#: bytes of capture lines read in this process, for progress displays
#: (``cli/progress.py``); decompressed bytes for gzip input
_consumed = [0]


def bytes_read() -> int:
    """Bytes of capture lines read so far by every reader in this process."""
    return _consumed[0]


def add_bytes_read(n: int) -> None:
    """Count ``n`` more bytes of capture lines read (readers that do not use
    :func:`lines`: check's scan of byte ranges, mcptap/check/parallel.py)."""
    _consumed[0] += n


def lines(fp: IO[bytes], path: str) -> Iterator[bytes]:
    """The remaining lines of ``fp`` (see module doc)."""
    it = iter(fp)
    consumed = _consumed
    while True:
        try:
            line = next(it)
            consumed[0] += len(line)
        except StopIteration:
            return
        except EOFError:
            yield CUT
            return
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise CaptureReadError(f"{escape_name(path)}: cannot decompress: {exc}") from None
        yield line
