"""Whether a capture's text holds ``chunk`` records (stdio bytes stored
unframed): a fast byte search over the whole text, confirmed by parsing (pure:
the caller opens the file, ``reader.has_chunks``)."""

from __future__ import annotations

import re
from typing import Any

import orjson

#: a record's ``type`` member saying ``chunk``, however the writer spaced it (key order is
#: free: a hit is confirmed by parsing its line)
_CHUNK_TYPE = re.compile(rb'"type"[ \t\r\n]{0,16}:[ \t\r\n]{0,16}"chunk"')
_CHUNK_OVERLAP = 64        # longer than any match: a hit cut by a block boundary is seen whole
_CHUNK_BLOCK = 1 << 20
#: a line with a hit this long is not parsed to confirm it (taken as a chunk record: re-framing
#: a capture without one costs time, missing one makes scrub refuse a file)
_CHUNK_LINE_MAX = 64 << 20


def find_chunk_record(src: Any) -> bool:
    """True when the capture text read from ``src`` (``read(n)`` gives bytes)
    holds a ``chunk`` record: a ``"type": "chunk"`` member in any spacing (a
    capture rewritten by another JSON encoder), each hit confirmed by parsing
    its line (the text may sit in a payload); blocks of 1 MiB, a test for the
    literal ``"chunk"`` first (as fast as the plain byte search was)."""
    prev = b""              # the block before (a hit's line usually starts there or in this one)
    prev_at_start = True    # prev begins at the file's first byte
    pending: list[bytes] | None = None      # the line of a hit, until its end is read
    size = 0
    while block := src.read(_CHUNK_BLOCK):
        pos = 0
        if pending is not None:
            nl = block.find(b"\n")
            if nl < 0:
                pending.append(block)
                size += len(block)
                if size > _CHUNK_LINE_MAX:
                    return True
                prev, prev_at_start = b"", False
                continue
            if _is_chunk_line(b"".join(pending) + block[:nl]):
                return True
            pending, pos = None, nl
        edge = prev[-_CHUNK_OVERLAP:]
        if b'"chunk"' in block or b'"chunk"' in edge + block[:_CHUNK_OVERLAP]:      # the cheap test first
            buf = prev + block
            at = max(len(prev) - _CHUNK_OVERLAP, 0) if pos == 0 else len(prev) + pos
            while (m := _CHUNK_TYPE.search(buf, at)) is not None:
                if m.end() <= len(prev):        # wholly in the block before: seen there
                    at = m.end()
                    continue
                start = buf.rfind(b"\n", 0, m.start()) + 1
                if start == 0 and not prev_at_start:
                    return True                 # the line began before what is kept: not confirmed, taken
                end = buf.find(b"\n", m.end())
                if end < 0:
                    pending, size = [buf[start:]], len(buf) - start
                    break
                if _is_chunk_line(buf[start:end]):
                    return True
                at = end
        prev, prev_at_start = block, prev_at_start and not prev
    return pending is not None and _is_chunk_line(b"".join(pending))


def _is_chunk_line(line: bytes) -> bool:
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False            # a cut or corrupt line: the reader reports it
    return isinstance(rec, dict) and rec.get("type") == "chunk"
