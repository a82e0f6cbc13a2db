"""An SSE event as the SDKs write it, and the payload of a large event (pure).

* ``canonical_event`` / ``is_canonical``: does an event's ``raw`` equal what
  the SDKs write for its fields (then the capture need not store ``raw``)?
* ``big_data``: the JSON payload of an event whose one data line the parser
  left undecoded (``SSEParser(lazy_above=…)``, ``SSEEvent.data_span``), taken
  out of the event's own buffer without a second copy of a 64 MiB event.
"""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Iterator

from mcptap.protocol.sse import SSEEvent
from mcptap.protocol.utf8 import LazyText, is_utf8

#: a data line longer than this (bytes) is left undecoded by the tap's parser (``SSEParser(lazy_above=…)``)
LAZY_DATA_ABOVE = 1 << 20
#: bytes decoded for an event's quote (40 characters need at most 160 bytes, plus an unfinished sequence)
_QUOTE_BYTES = 164


def canonical_event(ev: SSEEvent) -> bytes:
    """The event as the SDKs write it (id, event, data lines, retry; LF ends)."""
    lines = []
    if ev.id is not None:
        lines.append(f"id: {ev.id}")
    if ev.type != "message" or b"event:" in ev.raw[:64]:
        lines.append(f"event: {ev.type}")
    lines.extend(f"data: {d}" for d in ev.data.split("\n"))
    if ev.retry is not None:
        lines.append(f"retry: {ev.retry}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


_PIECE = 256 << 10
#: parts of a non-canonical multi-line event's text shorter than this are joined (``_bulk_data``)
_GROUP = 64 << 10
_VIEW = 4 << 10


def is_canonical(ev: SSEEvent) -> bool:
    """``ev.raw == canonical_event(ev)``, without building the canonical bytes
    of a large event (a 64 MiB event is compared in 256 KiB pieces)."""
    raw = ev.raw
    if len(raw) <= _PIECE:
        return raw == canonical_event(ev)
    head = []
    if ev.id is not None:
        head.append(f"id: {ev.id}\n")
    if ev.type != "message" or b"event:" in raw[:64]:
        head.append(f"event: {ev.type}\n")
    tail = f"retry: {ev.retry}\n\n" if ev.retry is not None else "\n"
    pos = 0
    for piece in _pieces("".join(head), ev.data, tail):
        if not raw.startswith(piece, pos):        # compared in place (memcmp), no slice
            return False
        pos += len(piece)
    return pos == len(raw)


def _pieces(head: str, data: str, tail: str) -> Iterator[bytes]:
    yield head.encode("utf-8")
    for line in data.split("\n"):
        yield b"data: "
        for k in range(0, len(line), _PIECE):
            yield line[k:k + _PIECE].encode("utf-8")
        yield b"\n"
    yield tail.encode("utf-8")


def _head_tail(ev: SSEEvent, first: bytes | bytearray) -> tuple[bytes, bytes]:
    """The canonical bytes before the data lines and after them (``first``: the event's first 64 bytes)."""
    head = []
    if ev.id is not None:
        head.append(f"id: {ev.id}\n")
    if ev.type != "message" or b"event:" in first:
        head.append(f"event: {ev.type}\n")
    tail = f"retry: {ev.retry}\n\n" if ev.retry is not None else "\n"
    return "".join(head).encode("utf-8"), tail.encode("utf-8")


def big_data(ev: SSEEvent) -> tuple[bytes, str, LazyText | None] | None:
    """For an event with ``data_bytes``: (payload, quote, raw text or None).
    ``payload``: ``data_bytes`` itself (equal to ``ev.data.encode()`` of a
    fully decoding parser); ``quote``: its first 40 characters; raw text: the
    event's bytes decoded (U+FFFD for bad bytes) when they are not canonical,
    for the record's ``sse.raw``, else None: a ``LazyText`` (``str()`` makes
    it; the recorder writes it in pieces, so a 64 MiB CR LF event, as
    sse-starlette writes them, is never held again as text). None when the line is not valid
    UTF-8 (the caller decodes it as a fully decoding parser would: ``decoded``)."""
    data, at, raw = ev.data_bytes, ev.data_at, ev.raw
    assert data is not None
    if not data.isascii() and not is_utf8(data):
        return None
    with memoryview(data) as view, view[:_QUOTE_BYTES] as q:
        quote = codecs.getincrementaldecoder("utf-8")("replace").decode(q, len(data) <= _QUOTE_BYTES)[:40]
    if ev.data_cuts:
        return _bulk_data(ev, data, quote)
    head, tail = _head_tail(ev, (raw[:at] + data[:64] + raw[at:at + 64])[:64])
    if at == len(head) + 6 and raw == head + b"data: \n" + tail:
        return data, quote, None
    # the cuts are next to ASCII line syntax and data is UTF-8: decoding the parts is decoding the whole
    return data, quote, LazyText((raw[:at], data, raw[at:]))


def _values(data: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each LF-separated value in ``data``."""
    pos = 0
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            yield pos, len(data)
            return
        yield pos, end
        pos = end + 1


def _block_parts(ev: SSEEvent, data: bytes) -> Iterator[bytes | bytearray | memoryview]:
    """The bytes of an event with ``data_cuts``, in parts: ``raw``'s and views of the values in turn."""
    raw, pos = ev.raw, 0
    view = memoryview(data)      # not released here: the parts are views of it
    for cut, (a, b) in zip(ev.data_cuts, _values(data), strict=True):
        yield raw[pos:cut]
        yield view[a:b]
        pos = cut
    yield raw[pos:]


def _bulk_data(ev: SSEEvent, data: bytes, quote: str) -> tuple[bytes, str, LazyText | None]:
    """``big_data`` of an event with ``data_cuts`` (several data lines, their values cut out of ``raw``)."""
    raw, cuts = ev.raw, ev.data_cuts
    first = b""
    for p in _block_parts(ev, data):
        first += bytes(p[:64 - len(first)])
        if len(first) >= 64:
            break
    head, tail = _head_tail(ev, first)
    k = len(cuts)
    if raw == head + b"data: \n" * k + tail and cuts == tuple(range(len(head) + 6, len(head) + 7 * k, 7)):
        return data, quote, None
    # the cuts are next to ASCII line syntax and data is UTF-8: decoding the parts is decoding the whole.
    # A value of ``_VIEW`` bytes or more stays a view of ``data`` (held once); shorter parts are joined
    # into pieces of ``_GROUP`` bytes (a part costs its own object and decoding: 64 MiB of 200-byte lines was 670,000)
    out: list[bytes | bytearray | memoryview] = []
    group: list[bytes | bytearray | memoryview] = []
    size = 0
    for p in _block_parts(ev, data):
        if len(p) >= _VIEW:
            if group:
                out.append(b"".join(group))
                group, size = [], 0
            out.append(p)
            continue
        group.append(p)
        size += len(p)
        if size >= _GROUP:
            out.append(b"".join(group))
            group, size = [], 0
    if group:
        out.append(b"".join(group))
    return data, quote, LazyText(tuple(out))


def decoded(ev: SSEEvent) -> SSEEvent:
    """``ev`` (with ``data_bytes``) as a fully decoding parser makes it."""
    data, at, raw = ev.data_bytes, ev.data_at, ev.raw
    assert data is not None
    bad = ev.invalid_utf8
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        text, bad = str(data, "utf-8", "replace"), True
    whole = b"".join(_block_parts(ev, data)) if ev.data_cuts else raw[:at] + data + raw[at:]
    return dataclasses.replace(ev, data=text, raw=whole, data_bytes=None, data_at=0, data_cuts=(), invalid_utf8=bad)
