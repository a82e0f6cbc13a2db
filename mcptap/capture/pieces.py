"""A record line made in pieces, for a record with one very large bytes field
(a message's ``raw``/``raw_b64``, a chunk's ``data``) and maybe a large text
(an SSE event's ``transport.sse.raw``, ``utf8.LazyText``): the line is
byte-identical to the one ``CaptureWriter.write`` makes from the whole record,
but those fields are encoded a piece at a time, so a 64 MiB payload is never
held again as one text and one encoded line (docs/capture-format.md: the
format does not change). ``write_message`` chooses.

Usage (``MessageRecord.to_json`` takes the bytes encoder)::

    deferred = Deferred()
    rec = MessageRecord(msg, eol).to_json(encode=deferred)
    pieces = deferred.line(rec)          # None: write the record whole instead
    if pieces is not None:
        writer.write_pieces(pieces)
"""

from __future__ import annotations

import base64
import codecs
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from mcptap.model import Message
from mcptap.protocol.utf8 import LazyText, is_utf8
from mcptap.records import MessageRecord, encode_bytes

if TYPE_CHECKING:
    from mcptap.capture.writer import CaptureWriter

#: Payloads larger than this are written in pieces (bytes).
STREAM_ABOVE = 4 << 20

#: Bytes encoded per piece (text); base64 pieces are a multiple of 3 bytes.
#: 1 MiB pieces (and the skeleton's 1 MiB checks) put the HTTP recorder process's peak 4 MiB
#: higher on a 64 MiB event: each piece is held three times at once (text, JSON, slice)
PIECE = 256 << 10
_B64_PIECE = 3 << 18


#: bytes as one buffer, or as consecutive buffers not joined (a long line's reads)
Buffers = bytes | bytearray | list[bytes | bytearray]


def _slices(data: Buffers, size: int) -> Iterator[memoryview]:
    for buf in data if isinstance(data, list) else (data,):
        view = memoryview(buf)          # not released here: the caller may still hold a slice
        for k in range(0, len(view), size):
            yield view[k:k + size]


def buffers_len(data: Buffers) -> int:
    """Bytes in ``data``."""
    return sum(map(len, data)) if isinstance(data, list) else len(data)


def text_pieces(data: Buffers) -> Iterator[bytes]:
    """The JSON string body (no quotes) of ``data`` (valid UTF-8) in pieces:
    their concatenation equals ``orjson.dumps(data.decode())[1:-1]`` (JSON
    escapes are per character, so escaping pieces equals escaping the whole)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    for view in _slices(data, PIECE):
        text = dec.decode(view, False)
        if text:
            yield orjson.dumps(text)[1:-1]
    dec.decode(b"", True)


def lazy_pieces(lazy: LazyText) -> Iterator[bytes]:
    """The JSON string body (no quotes) of ``str(lazy)`` in pieces, each part
    decoded on its own as ``str(lazy)`` does (U+FFFD for bad bytes)."""
    for part in lazy.parts:
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        n = len(part)
        with memoryview(part) as view:
            for k in range(0, n, PIECE):
                text = dec.decode(view[k:k + PIECE], k + PIECE >= n)
                if text:
                    yield orjson.dumps(text)[1:-1]


def b64_pieces(data: Buffers) -> Iterator[bytes]:
    """``base64.b64encode(data)`` in pieces (each from a multiple of 3 bytes)."""
    carry = b""
    for view in _slices(data, _B64_PIECE):
        if carry:
            view = memoryview(carry + view)
        cut = len(view) - len(view) % 3
        if cut:
            yield base64.b64encode(view[:cut])
        carry = bytes(view[cut:])
    if carry:
        yield base64.b64encode(carry)


def _is_utf8(data: Buffers) -> bool:
    if not isinstance(data, list):
        return is_utf8(data)
    if all(b.isascii() for b in data):
        return True
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        for view in _slices(data, PIECE):
            dec.decode(view, False)
        dec.decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


def _mark() -> str:
    # random: a peer cannot put this text into another field of the record
    return "\x00mcptap-deferred-" + secrets.token_hex(16)


class Deferred:
    """A bytes encoder for ``to_json`` (the ``encode_bytes`` signature) that
    stores a unique placeholder instead of the bytes' text or base64, and
    then makes the record's line around it with ``line``. ``text(lazy)``
    gives the placeholder of one more string field (a ``LazyText``)."""

    def __init__(self) -> None:
        self._mark = _mark()
        self._data: Buffers | None = None
        self._b64 = False
        self._texts: list[tuple[str, LazyText]] = []

    def __call__(self, data: Buffers, key: str, rec: dict[str, Any]) -> None:
        self._data = data
        self._b64 = not _is_utf8(data)
        rec[key + "_b64" if self._b64 else key] = self._mark

    def text(self, lazy: LazyText) -> str:
        """The placeholder to put in the record where ``str(lazy)`` goes."""
        mark = _mark()
        self._texts.append((mark, lazy))
        return mark

    def line(self, rec: dict[str, Any]) -> Iterator[bytes] | None:
        """The pieces of ``rec``'s line (newline included), or None when the
        encoder was not used or orjson cannot write the record (a peer's
        integer beyond 64 bits: the caller writes it whole, as before)."""
        data, texts = self._data, self._texts
        if data is None and not texts:
            return None
        try:
            dumped = orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError):
            return None
        fields: list[tuple[int, int, Iterator[bytes]]] = []    # (start, end) of a placeholder's string body, its pieces
        places = [(self._mark, b64_pieces(data) if self._b64 else text_pieces(data))] if data is not None else []
        places += [(mark, lazy_pieces(lazy)) for mark, lazy in texts]
        for mark, body in places:
            quoted = orjson.dumps(mark)
            at = dumped.find(quoted)
            if at < 0:
                return None
            fields.append((at + 1, at + len(quoted) - 1, body))
        fields.sort(key=lambda f: f[0])
        self._data, self._texts = None, []
        return _join(dumped, fields)


def _join(dumped: bytes, fields: list[tuple[int, int, Iterator[bytes]]]) -> Iterator[bytes]:
    pos = 0
    for start, end, body in fields:
        yield dumped[pos:start]
        yield from body
        pos = end
    yield dumped[pos:]


def write_message(w: CaptureWriter, msg: Message, eol: bytes) -> None:
    """Queue ``msg``'s record (``MessageRecord(msg, eol)``) on ``w``: in pieces
    (``write_pieces``) when its payload is over ``STREAM_ABOVE`` bytes or its
    ``transport.sse.raw`` is a ``LazyText``, unless ``w`` rewrites records
    (``transform``, ``line_filter``); else whole (a ``LazyText`` made a str
    first, and left so in ``msg``)."""
    sse: Any = msg.transport.get("sse") if msg.transport else None
    lazy = sse.get("raw") if isinstance(sse, dict) else None
    if not isinstance(lazy, LazyText):
        lazy = None
    big = len(msg.raw) > STREAM_ABOVE
    if (big or lazy is not None) and w.transform is None and w.line_filter is None:
        # never held as one more text and one more encoded line
        deferred = Deferred()
        if lazy is not None:
            sse["raw"] = deferred.text(lazy)
        try:
            line = deferred.line(MessageRecord(msg, eol).to_json(encode=deferred if big else encode_bytes))
        finally:
            if lazy is not None:
                sse["raw"] = lazy
        if line is not None:
            w.write_pieces(line)
            return
    if lazy is not None:
        sse["raw"] = str(lazy)
    w.write(MessageRecord(msg, eol).to_json())
