"""The two ends of a capture file, read without reading it whole (level 1;
for :mod:`mcptap.catalog`): its header line (is it a capture?) and its last
line (the end record, found by seeking back from the end), from a plain file
or a gzip stream, which cannot be read backwards and is decompressed as a
stream; a gzip stream cut short still gives what it holds before the cut.
Functions take open binary files; they open nothing."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import orjson

HEADER_PREFIX = b'{"type":"header","format":"mcptap-capture"'
HEAD_SCAN = 64 * 1024           # bytes read from the start to find the revision
_TAIL_STEP = 64 * 1024
_TAIL_MAX = 64 * 1024 * 1024    # an end record is small; a last line longer than this is not one


def last_line(fp: Any, size: int) -> bytes | None:
    """The last line of the file without its newline, read backwards from the
    end; None when the file is empty or does not end with a newline (the last
    record was cut short) or the line is implausibly long for an end record."""
    if size == 0:
        return None
    fp.seek(size - 1)
    if fp.read(1) != b"\n":
        return None
    pos = size - 1                 # the final newline's offset; the line ends here
    buf: bytes = b""
    while pos > 0 and len(buf) < _TAIL_MAX:
        step = min(_TAIL_STEP, pos)
        pos -= step
        fp.seek(pos)
        buf = fp.read(step) + buf
        nl = buf.rfind(b"\n")
        if nl >= 0:
            return buf[nl + 1:]
    return buf if pos == 0 else None


def _gunzip(fp: Any, damaged: list[bool]) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file, in pieces. A stream cut short or
    damaged yields what could be decompressed before the fault (``gzip.GzipFile``
    drops the last piece) and appends True to ``damaged``."""
    d = zlib.decompressobj(31)
    pending = False                 # the current member has had input but not its end
    while raw := fp.read(_TAIL_STEP):
        while raw:
            if not pending:
                raw = raw.lstrip(b"\0")     # zeros padding the file after a member (tape blocks), as gzip skips them
                if not raw:
                    break
            pending = True
            try:
                out = d.decompress(raw)
            except zlib.error:
                damaged.append(True)
                return
            if out:
                yield out
            raw = b""
            if d.eof:               # the next member (gzip files concatenated)
                raw, pending, d = d.unused_data, False, zlib.decompressobj(31)
    if pending:
        damaged.append(True)


def gzip_ends(fp: Any) -> tuple[bytes, bytes | None] | None:
    """(first HEAD_SCAN bytes, last line or None) of a gzip-compressed
    capture, decompressed as a stream; None when its first line is complete
    and not a capture header. A damaged or cut-short stream has no last line
    (as a cut plain file); its head is what could be decompressed."""
    damaged: list[bool] = []
    head = b""
    last: bytes | None = None
    partial = b""                   # bytes after the last newline so far
    checked = False
    for chunk in _gunzip(fp, damaged):
        if len(head) < HEAD_SCAN:
            head += chunk[:HEAD_SCAN - len(head)]
        if not checked and (b"\n" in head or len(head) >= HEAD_SCAN):
            if not is_header(head):
                return None
            checked = True
        data = partial + chunk
        nl = data.rfind(b"\n")
        if nl < 0:
            partial = data[-_TAIL_MAX:]          # a line this long is no end record anyway
        else:
            last = data[data.rfind(b"\n", 0, nl) + 1:nl]
            partial = data[nl + 1:]
    return head, None if partial or damaged else last


def cut_header(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, no whole line) is a capture
    header cut short: the writer's header beginning, or a longer piece of it."""
    return b"\n" not in head and bool(head) and (HEADER_PREFIX.startswith(head) or head.startswith(HEADER_PREFIX))


def is_header(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts with a capture header:
    as the writer writes it (``HEADER_PREFIX``), or any JSON object of type
    header and format mcptap-capture on the first line (a capture rewritten by
    another JSON tool, with spaces or other key order, is still one). The
    header line must be whole: its newline within ``head``, or ``head`` all of
    ``HEAD_SCAN`` bytes (a header line longer than that); a file that ends
    inside its header line is a cut header (:func:`cut_header`), not a capture
    whose header can be read."""
    if head.startswith(HEADER_PREFIX):
        return b"\n" in head or len(head) >= HEAD_SCAN
    first, nl, _ = head.partition(b"\n")
    if not nl or not first.lstrip().startswith(b"{"):
        return False
    try:
        rec = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return isinstance(rec, dict) and rec.get("type") == "header" and rec.get("format") == "mcptap-capture"
