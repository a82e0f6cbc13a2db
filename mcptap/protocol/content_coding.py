"""The content codings the HTTP tap decodes for analysis, and what it says when a body does not decode (pure).

``BodyDecoder(enc, limit)`` decodes a body of content coding ``enc`` (lower case:
``gzip``/``x-gzip``, every member of it, RFC 1952 §2.2 and RFC 9110 §8.4.1.3;
``deflate``, one zlib stream, RFC 1950) as its bytes arrive: ``decompress(data)``
returns the decoded bytes; ``flush()`` those still held at the body's end;
``eof``: the coded data ended (the last member finished, no byte after it
pending). ``limit``: decoded bytes at most (None: no bound), checked without ever
holding more than ``limit + 1`` decoded bytes of one call; ``call_limit``: the
same for the output of one ``decompress`` call (an event stream, unbounded in
length, whose one chunk must not inflate a thousandfold into memory). Always:
no more than ``BOMB_RATIO`` times the coded bytes given so far, beyond
``BOMB_FLOOR`` decoded bytes (a decompression bomb).

Both raise ``DecodeError`` (``why``: one line; ``at``: the body offset, as
relayed, of the first byte not decoded; ``rest``: the bytes from ``at`` the call
had, to be kept as relayed; ``trailing``: the bytes after the end of the coded
data are not a further gzip member, everything before ``at`` decoded, the
call's part of it in ``decoded``). Nothing
else escapes on peer input.

``undecoded_code(why, enc)``: the finding code for a body kept undecoded for
reason ``why`` (``http.content_too_large_to_decode``, ``http.content_decompression_bomb``: more
than ``BOMB_FLOOR`` bytes at more than ``BOMB_RATIO`` times the coded bytes, ``http.content_decoding_failed``
or None: a coding mcptap does not decode, which the head's finding already named),
and the words on what was analysed; the reason strings are the only record of
the kind, so live and ``check --full`` classify them alike.
"""

from __future__ import annotations

import zlib
from typing import Any

#: decoded bytes of a body mcptap holds (a JSON body, a POST body): the bound of one SSE event
#: (protocol/sse.py MAX_BLOCK), so a 64 MiB message still decodes and a gzip bomb is stopped there
MAX_DECODED = 128 << 20
UNFINISHED = "(the compressed stream is unfinished)"
#: a body decoding to more than ``BOMB_FLOOR`` bytes and ``BOMB_RATIO`` times the coded bytes given so
#: far is a decompression bomb: not decoded further (its coded bytes are kept as relayed), so a 436 KB
#: gzip body never becomes a 100 MB capture nor 100 MB of the tap's memory. JSON text compresses 5 to
#: 20 times; gzip's most is about 1030 times (runs of one byte)
BOMB_FLOOR = 16 << 20
BOMB_RATIO = 100
#: the words of the reasons that classify them (``undecoded_code``)
TOO_LARGE = "decodes to more than"
BOMB = "times its compressed size"
TRAILING = "after the end of its compressed data"
_GZIP_MAGIC = b"\x1f\x8b\x08"       # ID1 ID2 CM=deflate: how every gzip member starts (RFC 1952 §2.3)


class DecodeError(Exception):
    """A body that does not decode from ``at`` on (see module doc)."""

    def __init__(self, why: str, at: int, rest: bytes, trailing: bool = False, decoded: bytes = b"") -> None:
        super().__init__(why)
        self.why, self.at, self.rest, self.trailing, self.decoded = why, at, rest, trailing, decoded


def _new(enc: str) -> Any:
    return zlib.decompressobj(16 + zlib.MAX_WBITS if enc != "deflate" else zlib.MAX_WBITS)


class BodyDecoder:
    """One body's incremental decoder (see module doc)."""

    __slots__ = ("enc", "limit", "call_limit", "fed", "out", "members", "_d", "_held", "_held_at")

    def __init__(self, enc: str, limit: int | None = None, call_limit: int | None = None) -> None:
        self.enc, self.limit, self.call_limit = enc, limit, call_limit
        self.fed = 0            # body bytes given so far
        self.out = 0            # bytes decoded so far
        self.members = 1
        self._d = _new(enc)
        self._held = b""        # bytes after a member's end, too few yet to tell whether another member starts
        self._held_at = 0

    @property
    def eof(self) -> bool:
        return bool(self._d.eof) and not self._held

    def _trailing(self, at: int, rest: bytes, decoded: bytes = b"") -> DecodeError:
        what = "nothing may follow a zlib stream, RFC 1950" if self.enc == "deflate" else "only further gzip members may, RFC 1952"
        return DecodeError(f"the {self.enc} body does not decode (bytes {TRAILING}, from body byte {at}: {what})",
                           at, rest, trailing=True, decoded=decoded)

    def decompress(self, data: bytes) -> bytes:
        start, orig = self.fed, data
        self.fed += len(data)
        pos = start
        if self._held:
            data, pos, self._held = self._held + data, self._held_at, b""
        out: list[bytes] = []
        got = 0
        while data:
            if self._d.eof:
                if self.enc == "deflate" or not _GZIP_MAGIC.startswith(data[:3]):
                    raise self._trailing(pos, data, b"".join(out))
                if len(data) < 3:
                    self._held, self._held_at = data, pos
                    break
                self._d = _new(self.enc)
                self.members += 1
            bomb = max(BOMB_FLOOR, BOMB_RATIO * self.fed) - self.out
            rooms = [n for n in (None if self.limit is None else self.limit - self.out,
                                 None if self.call_limit is None else self.call_limit - got, bomb) if n is not None]
            try:
                piece = self._d.decompress(data, min(rooms) + 1)
            except zlib.error as exc:
                raise DecodeError(f"the {self.enc} body does not decode ({exc})", start, orig) from None
            self.out += len(piece)
            got += len(piece)
            if len(piece) > bomb:
                raise DecodeError(f"the {self.enc} body inflates to more than {BOMB_RATIO} {BOMB} ({self.out} bytes from the "
                                  f"{self.fed} compressed bytes so far): a decompression bomb, not decoded further", start, orig)
            if self.limit is not None and self.out > self.limit:
                raise DecodeError(f"the {self.enc} body {TOO_LARGE} {self.limit} bytes, what mcptap holds of a body", start, orig)
            if self.call_limit is not None and got > self.call_limit:
                raise DecodeError(f"a piece of the {self.enc} body (from body byte {start}) {TOO_LARGE} {self.call_limit} "
                                  "bytes, what mcptap holds at once", start, orig)
            out.append(piece)
            if not self._d.eof:
                break           # all of data consumed (the output stayed within the bound)
            unused = self._d.unused_data
            pos += len(data) - len(unused)
            data = unused
        return b"".join(out)

    def flush(self) -> bytes:
        """What the decoder still holds at the body's end (raises ``DecodeError``)."""
        if self._held:
            raise self._trailing(self._held_at, self._held)
        try:
            return bytes(self._d.flush())
        except zlib.error as exc:
            raise DecodeError(f"the {self.enc} body does not decode ({exc})", self.fed, b"") from None


def content_decoder(enc: str, limit: int | None = None, call_limit: int | None = None) -> BodyDecoder | None:
    """A decoder for content coding ``enc`` (lower case), or None when mcptap does not decode it."""
    return BodyDecoder(enc, limit, call_limit) if enc in ("gzip", "x-gzip", "deflate") else None


def decode_whole(enc: str, data: bytes, limit: int | None = MAX_DECODED) -> tuple[bytes | None, str | None]:
    """``(decoded, None)`` for a whole body ``data`` of content coding ``enc``
    (lower case, "" or identity: as is), or ``(None, why)`` when mcptap does not
    decode that coding, the body does not decode (bytes after its end
    included) or it decodes to more than ``limit`` bytes."""
    if not enc or enc == "identity":
        return data, None
    d = content_decoder(enc, limit)
    if d is None:
        return None, f"Content-Encoding {enc} is not one mcptap decodes"
    try:
        out = d.decompress(data) + d.flush()
    except DecodeError as exc:
        return None, exc.why
    if not d.eof:
        return None, f"the {enc} body does not decode {UNFINISHED}"
    return out, None


def undecoded_code(why: str, enc: str, decodable: bool) -> tuple[str | None, str]:
    """(finding code, what became of the body) for a body kept undecoded for
    reason ``why`` under coding ``enc`` (``decodable``: one mcptap decodes)."""
    if BOMB in why:
        return "http.content_decompression_bomb", ("it is stored as relayed (compressed) from there, not analysed "
                                                   "(a client that decodes it holds all of it)")
    if TOO_LARGE in why:
        return "http.content_too_large_to_decode", ("it is stored as relayed from there, not analysed "
                                                    "(a client may decode it: the limit is mcptap's)")
    if TRAILING in why:
        return "http.content_decoding_failed", ("those bytes are stored as relayed, what came before them was analysed "
                                                "(clients ignore such bytes or fail on them)")
    return ("http.content_decoding_failed" if decodable else None), ("the body is stored as relayed, not analysed "
                                                                     "(a client decoding it as labelled fails too)")
