"""A record line made in pieces, for a record with one very large bytes field
(a message's ``raw``/``raw_b64``): the line is byte-identical to the one
``CaptureWriter.write`` makes from the whole record, but the field is encoded
1 MiB at a time, so a 64 MiB payload is never held again as one text and one
encoded line (docs/capture-format.md: the format does not change).

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
from typing import Any

import orjson

from mcptap.protocol.utf8 import is_utf8

#: Payloads larger than this are written in pieces (bytes).
STREAM_ABOVE = 4 << 20

#: Bytes encoded per piece (text); base64 pieces are a multiple of 3 bytes.
#: 1 MiB pieces (and the skeleton's 1 MiB checks) put the HTTP recorder process's peak 4 MiB
#: higher on a 64 MiB event: each piece is held three times at once (text, JSON, slice)
PIECE = 256 << 10
_B64_PIECE = 3 << 18


def text_pieces(data: bytes | bytearray) -> Iterator[bytes]:
    """The JSON string body (no quotes) of ``data`` (valid UTF-8) in pieces:
    their concatenation equals ``orjson.dumps(data.decode())[1:-1]`` (JSON
    escapes are per character, so escaping pieces equals escaping the whole)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    n = len(data)
    with memoryview(data) as view:
        for k in range(0, n, PIECE):
            yield orjson.dumps(dec.decode(view[k:k + PIECE], k + PIECE >= n))[1:-1]


def b64_pieces(data: bytes | bytearray) -> Iterator[bytes]:
    """``base64.b64encode(data)`` in pieces (each from a multiple of 3 bytes)."""
    with memoryview(data) as view:
        for k in range(0, len(data), _B64_PIECE):
            yield base64.b64encode(view[k:k + _B64_PIECE])


class Deferred:
    """A bytes encoder for ``to_json`` (the ``encode_bytes`` signature) that
    stores a unique placeholder instead of the bytes' text or base64, and
    then makes the record's line around it with ``line``."""

    def __init__(self) -> None:
        # random: a peer cannot put this text into another field of the record
        self._mark = "\x00mcptap-deferred-" + secrets.token_hex(16)
        self._data: bytes | bytearray | None = None
        self._b64 = False

    def __call__(self, data: bytes | bytearray, key: str, rec: dict[str, Any]) -> None:
        self._data = data
        self._b64 = not is_utf8(data)
        rec[key + "_b64" if self._b64 else key] = self._mark

    def line(self, rec: dict[str, Any]) -> Iterator[bytes] | None:
        """The pieces of ``rec``'s line (newline included), or None when the
        encoder was not used or orjson cannot write the record (a peer's
        integer beyond 64 bits: the caller writes it whole, as before)."""
        data = self._data
        if data is None:
            return None
        try:
            dumped = orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError):
            return None
        mark = orjson.dumps(self._mark)
        at = dumped.find(mark)
        if at < 0:
            return None
        head, tail = dumped[:at + 1], dumped[at + len(mark) - 1:]
        self._data = None
        return _join(head, b64_pieces(data) if self._b64 else text_pieces(data), tail)


def _join(head: bytes, body: Iterator[bytes], tail: bytes) -> Iterator[bytes]:
    yield head
    yield from body
    yield tail
