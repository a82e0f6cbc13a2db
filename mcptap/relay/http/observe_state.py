"""What the HTTP observer keeps per exchange, and how it reads a response body (pure).

``ObservedExchange`` is the observer's record of one request/response exchange
from ``RequestStarted`` to ``ResponseEnded``: ids, the request head, the
``http_rules.Exchange`` facts the rules look at, the buffered POST body, the
deferred ``initialize`` frame, byte/chunk/SSE-event counters and the response
body state chosen by ``start_body``:

* ``mode``: ``"sse"`` (``text/event-stream``: an ``SSEParser`` reads events as
  chunks arrive), ``"json"`` (``application/json`` or ``+json``: the body is
  buffered and framed at the end), ``"other"``; ``"none"`` before the head;
* ``decoder``: a zlib decompressor for ``Content-Encoding`` gzip/x-gzip/deflate
  (analysis only: the forwarded bytes stay encoded); another coding (br, zstd,
  an unknown token), or a body that does not decode under its label, sets
  ``undecodable`` (``undecoded`` says why) and the body is not analysed: its
  bytes as relayed are kept in ``raw`` (from ``raw_offset`` on, at most
  ``RAW_KEEP`` bytes, the rest counted in ``raw_dropped``) for a
  ``response_body`` record, so the capture holds what the client got.

``feed(chunk)`` returns a response body chunk's decoded bytes (None: not
analysable); ``json_body()`` the buffered JSON body, decoded (None: it did not
decode, ``raw`` holds it); ``decode_tail()`` what the decoder held back at the end.

Times (``t0``, ``req_end_t``) are recorder clock values in µs. Nothing here
raises on peer input: a corrupt compressed stream sets ``undecodable``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from mcptap.capture.format import encode_bytes
from mcptap.model import Finding
from mcptap.protocol.http_fields import Headers, header, media_type
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.sse import SSEParser
from mcptap.protocol.sse_canonical import LAZY_DATA_ABOVE
from mcptap.relay.http.body_buffer import BodyBuffer

#: encoded body bytes kept for a body that cannot be decoded (an endless br event stream must not grow
#: the capture without bound; a JSON body that size is already far past what a client accepts)
RAW_KEEP = 64 << 20


@dataclass(slots=True)
class ObservedExchange:
    """One exchange as the observer follows it (see module doc)."""
    id: int
    conn: int
    method: str
    target: str
    host: str | None
    facts: Exchange
    t0: int
    body: BodyBuffer = field(default_factory=BodyBuffer)
    req_end_t: int = 0
    req_ended: bool = False          # RequestEnded came: the client sent the whole request
    deferred: tuple[bytes, Any, list[Finding]] | None = None
    from_response: bool = False      # an initialize sent without Mcp-Session-Id, its session the answer's
    refused: str = ""                # the tap refused it on its head (RequestStarted.refused): it never reached the server
    mode: str = "none"               # json | sse | other
    decoder: Any = None
    undecodable: bool = False
    coding: str = ""                 # the response's Content-Encoding (lower case), "" for none/identity
    undecoded: str | None = None     # why the body is not analysed (an unsupported coding, a decoding error)
    raw: BodyBuffer = field(default_factory=BodyBuffer)     # the encoded bytes: see module doc
    raw_offset: int = 0              # body offset (as relayed) of raw's first byte
    raw_dropped: int = 0             # encoded bytes past RAW_KEEP, counted only
    parser: SSEParser | None = None
    resp_body: BodyBuffer = field(default_factory=BodyBuffer)
    resp_bytes: int = 0
    req_bytes: int = 0
    chunks: int = 0
    events: int = 0
    ids: list[str] = field(default_factory=list)
    rewrites: list[tuple[str, str]] = field(default_factory=list)
    response_started: bool = False
    assigned: str | None = None      # a different Mcp-Session-Id the response assigned
    cr_seen: bool = False
    #: a POST off the MCP endpoint whose body is not JSON-RPC: recorded as HTTP, never framed
    plain: bool = False
    #: the response ended before the request did (an early answer): the end waits for the request
    held_end: Any = None
    location_sent: str | None = None     # the Location the tap rewrote the upstream's to
    informational: int = 0           # 1xx responses seen (``INFORMATIONAL_RECORDED`` at most are recorded)
    #: relay facts of this exchange were not recorded (``observe_gap``): its end is judged without them
    gap: bool = False
    req_gap: bool = False            # ... while its request was under way: its body is not framed
    resp_gap: bool = False           # ... while its response body was: a JSON body is not framed
    resync: bool = False             # SSE: the first block after the hole is taken off
    sse_base: int = 0                # SSE: stream offset of the current parser's first byte (bytes recorded)
    sse_fed: int = 0                 # SSE: bytes the current parser was given

    @property
    def session(self) -> Any:
        return self.facts.session

    @property
    def stream(self) -> str:
        return "get" if self.method == "GET" else "post"

    def start_body(self, resp_headers: Headers) -> None:
        """Choose ``mode``, ``decoder``/``undecodable`` and the SSE parser from
        a final response head's Content-Type and Content-Encoding."""
        mt, _ = media_type(header(resp_headers, "content-type"))
        enc = (header(resp_headers, "content-encoding") or "").strip().lower()
        if enc and enc != "identity":
            self.coding = enc
            self.decoder = content_decoder(enc)
            if self.decoder is None:
                self.undecodable = True
                self.undecoded = f"Content-Encoding {enc} is not one mcptap decodes"
        if mt == "text/event-stream":
            self.mode, self.parser = "sse", SSEParser(LAZY_DATA_ABOVE)
        elif mt == "application/json" or mt.endswith("+json"):
            self.mode = "json"
        else:
            self.mode = "other"


    def raw_record(self) -> dict[str, Any]:
        """The fields of the ``response_body`` record of a body mcptap could not
        decode (docs/http-tap.md); takes ``raw``."""
        fields: dict[str, Any] = {"event": "response_body", "exchange": self.id, "conn": self.conn,
                                  "content_encoding": self.coding, "undecoded": self.undecoded}
        encode_bytes(self.raw.take(), "body", fields)
        if self.raw_offset:
            fields["offset"] = self.raw_offset
        if self.raw_dropped:
            fields["dropped"] = self.raw_dropped
        return fields

    def keep_raw(self, data: bytes) -> None:
        """Keep ``data`` (encoded, as relayed) for the ``response_body`` record, up to ``RAW_KEEP``."""
        room = RAW_KEEP - len(self.raw)
        if room >= len(data):
            self.raw += data
        else:
            if room > 0:
                self.raw += data[:room]
            self.raw_dropped += len(data) - max(room, 0)

    def _failed(self, exc: Exception, at: int) -> None:
        self.undecodable = True
        self.undecoded = f"the {self.coding} body does not decode ({exc})"
        self.raw_offset = at

    def feed(self, data: bytes) -> bytes | None:
        """The decoded bytes of response body chunk ``data`` (``resp_bytes``
        already counts it); None when the body is not analysable (kept raw).
        A JSON body with a coding is kept encoded and decoded whole at the end."""
        if self.undecodable:
            self.keep_raw(data)
            return None
        if self.decoder is None:
            return data
        if self.mode == "json" and not self.facts.is_ack:
            self.keep_raw(data)
            return None
        try:
            return bytes(self.decoder.decompress(data))
        except zlib.error as exc:
            self._failed(exc, self.resp_bytes - len(data))
            self.keep_raw(data)
            return None

    def decode_tail(self, complete: bool) -> bytes:
        """What the decoder still holds at the body's end (``complete``: the
        body ended as framed, so an unfinished compressed stream is a fault)."""
        if self.decoder is None or self.undecodable:
            return b""
        try:
            tail = bytes(self.decoder.flush())
        except zlib.error as exc:
            self._failed(exc, self.resp_bytes)
            return b""
        if complete and not self.decoder.eof and self.resp_bytes:
            self._failed(ValueError("the compressed stream is unfinished"), self.resp_bytes)
        return tail

    def json_body(self, complete: bool = True) -> bytes | None:
        """The buffered JSON body, decoded; None when its coding is not
        decodable or it does not decode (then ``raw`` holds it, encoded), or,
        not ``complete`` (the client went away inside it), when its compressed
        stream is merely unfinished: a cut body, not a fault (``undecodable`` stays False)."""
        if self.undecodable:
            return None
        if self.decoder is None:
            return self.resp_body.take()
        if self.raw_dropped:
            self._failed(ValueError(f"the body is larger than {RAW_KEEP} bytes"), 0)
            return None
        out, why = decode_whole(self.coding, self.raw.value())
        if out is None and not complete and why is not None and why.endswith(UNFINISHED):
            return None
        if out is None:
            self.undecodable, self.undecoded, self.raw_offset = True, why, 0
            return None
        self.raw = BodyBuffer()
        return out


UNFINISHED = "(the compressed stream is unfinished)"


def decode_whole(enc: str, data: bytes) -> tuple[bytes | None, str | None]:
    """``(decoded, None)`` for a whole body ``data`` of content coding ``enc``
    (lower case, "" or identity: as is), or ``(None, why)`` when mcptap does not
    decode that coding or the body does not decode."""
    if not enc or enc == "identity":
        return data, None
    d = content_decoder(enc)
    if d is None:
        return None, f"Content-Encoding {enc} is not one mcptap decodes"
    try:
        out = bytes(d.decompress(data)) + bytes(d.flush())
    except zlib.error as exc:
        return None, f"the {enc} body does not decode ({exc})"
    if not d.eof:
        return None, f"the {enc} body does not decode {UNFINISHED}"
    return out, None


def content_decoder(enc: str) -> Any:
    """A zlib decompressor for content coding ``enc`` (lower case), or None
    when the coding is not one the observer decodes."""
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj()
    return None
