"""Byte ranges of a capture file for the two processes of `check` (check/parallel.py):
line starts, the middle, the balanced split point, and lines read in batches. Offsets
are bytes from the start of the file (int); ``fp`` is a binary file open for reading
(seekable). Raises what the file object raises (OSError)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO

BATCH = 1 << 18         # bytes of lines read at a time (progress and a look at the child between them)


def balanced(fp: IO[bytes], at: int, size: int, mid: int, sampled: int, took: float, spent: float) -> int:
    """Where the child's lines start so that both processes end together:
    this process has read up to ``at`` and ``spent`` CPU seconds so far
    (start, imports, the lines before ``at``), and scanned ``sampled`` bytes
    in ``took`` seconds. ``mid`` (the middle) when nothing was timed. Any
    line start gives the same report (Scan.absorb); this only moves work."""
    if sampled <= 0 or took <= 0:
        return mid
    rate = sampled / took                                   # bytes scanned per CPU second
    line = line_start(fp, max(at, int((at + size - rate * spent) / 2)))
    return line if line < size else mid                     # (a long last line: the middle then)


def middle(fp: IO[bytes], start: int, size: int) -> int | None:
    """The first line start at or after the middle of the records, or None."""
    mid = line_start(fp, start + (size - start) // 2)
    fp.seek(start)
    return mid if start < mid < size else None


def line_start(fp: IO[bytes], at: int) -> int:
    """The first line start at or after byte ``at`` (> 0) of ``fp``."""
    fp.seek(at - 1)
    return fp.tell() + len(fp.readline())


def batches(fp: IO[bytes], start: int, end: int, progress: Callable[[int], None]) -> Iterator[list[bytes]]:
    """The lines in bytes [start, end) of ``fp`` (both line boundaries), in
    lists of about ``BATCH`` bytes (split by the file object, in C);
    ``progress(bytes)`` after each list."""
    fp.seek(start)
    pos = start
    while pos < end:
        batch = fp.readlines(BATCH)
        if not batch:
            return
        after = fp.tell()
        if after > end:                 # the last list reaches past the range: cut it at ``end``
            for i, line in enumerate(batch):
                pos += len(line)
                if pos >= end:
                    del batch[i + 1:]
                    break
        else:
            pos = after
        progress(pos - start)
        yield batch
