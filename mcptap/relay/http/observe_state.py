"""What the HTTP observer keeps per exchange, and how it reads a response body (pure).

``ObservedExchange`` is the observer's record of one request/response exchange
from ``RequestStarted`` to ``ResponseEnded``: ids, the request head, the
``http_rules.Exchange`` facts the rules look at, the buffered POST body, the
deferred ``initialize`` frame, byte/chunk/SSE-event counters and the response
body state chosen by ``start_body``:

* ``mode``: ``"sse"`` (``text/event-stream``: an ``SSEParser`` reads events as
  chunks arrive), ``"json"`` (``application/json`` or ``+json``: the body is
  buffered and framed at the end), ``"other"``; ``"none"`` before the head;
* ``decoder``: a ``protocol/content_coding.BodyDecoder`` for ``Content-Encoding``
  gzip/x-gzip (every member)/deflate (analysis only: the forwarded bytes stay
  encoded; a JSON body's decoded size bounded by ``MAX_DECODED``); another coding (br, zstd,
  an unknown token), or a body that does not decode under its label (bytes
  after the end of its compressed data included), or a JSON body larger decoded, sets
  ``undecodable`` (``undecoded`` says why) and the body is not analysed: its
  bytes as relayed are kept in ``raw`` (from ``raw_offset`` on, at most
  ``RAW_KEEP`` bytes, the rest counted in ``raw_dropped``) for a
  ``response_body`` record, so the capture holds what the client got.

A body that is neither framed as a message nor an event stream (a 401's ``unauthorized`` text, an HTML
403, a JSON error body on a notification's POST) is kept in ``kept`` (decoded, at most ``KEPT_BODY``
bytes, the rest counted in ``kept_past``) for a ``response_body`` record, so a mock can send it again;
not a ``2xx`` acknowledgement's (``202 Accepted``: its first bytes are the end record's ``ack_body``),
a legacy HTTP+SSE POST's whatever it is (JSON too: the 2024-11-05 transport carries messages on the SSE
stream only, so it is no message of the session; its first bytes are the end record's ``ack_body`` too),
nor the body of a request the tap refused itself or of a plain (non-MCP) POST.

``feed(chunk)`` returns a response body chunk's decoded bytes (None: not
analysable); ``json_body()`` the JSON body, decoded as it came (None: it did not
decode, ``raw`` holds it; bytes after its compressed data: the body before them,
``raw`` holding them); ``decode_tail()`` what the decoder held back at the end.

Times (``t0``, ``req_end_t``) are recorder clock values in µs. Nothing here
raises on peer input: a corrupt compressed stream sets ``undecodable``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.capture.format import encode_bytes
from mcptap.model import Finding
from mcptap.protocol.content_coding import MAX_DECODED, TOO_LARGE, UNFINISHED, BodyDecoder, DecodeError, content_decoder, decode_whole
from mcptap.protocol.http_fields import Headers, header, media_type
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.sse import SSEParser
from mcptap.protocol.sse_canonical import LAZY_DATA_ABOVE
from mcptap.relay.http.body_buffer import BodyBuffer

#: encoded body bytes kept for a body that cannot be decoded (an endless br event stream must not grow
#: the capture without bound; a JSON body that size is already far past what a client accepts)
RAW_KEEP = 64 << 20
#: decoded bytes kept of a response body that is no message (``kept``): an error page, not a stream
KEPT_BODY = 64 * 1024


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
    decoder: BodyDecoder | None = None
    undecodable: bool = False
    coding: str = ""                 # the response's Content-Encoding (lower case), "" for none/identity
    undecoded: str | None = None     # why the body is not analysed (an unsupported coding, a decoding error)
    raw: BodyBuffer = field(default_factory=BodyBuffer)     # the encoded bytes: see module doc
    raw_offset: int = 0              # body offset (as relayed) of raw's first byte
    raw_dropped: int = 0             # encoded bytes past RAW_KEEP, counted only
    partial: bool = False            # a JSON body decoded whole but for bytes after its compressed data (kept raw)
    parser: SSEParser | None = None
    resp_body: BodyBuffer = field(default_factory=BodyBuffer)
    kept: BodyBuffer = field(default_factory=BodyBuffer)     # a body that is no message: see module doc
    kept_past: int = 0               # its decoded bytes past KEPT_BODY, counted only
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
    sse_cr: bool = False             # SSE: the last event ended with a CR (an LF next is that line end's)
    sse_lone_lf: bool = False        # SSE: and that LF came in a read of its own (``observe_sse.own_bytes``)

    def keep(self, data: bytes) -> None:
        """Keep decoded body bytes that are no message (module doc), up to ``KEPT_BODY``."""
        st = self.facts.status or 0
        if self.plain or self.refused or (self.facts.is_ack and 200 <= st < 300):
            return
        room = KEPT_BODY - len(self.kept)
        self.kept += data[:max(room, 0)]
        self.kept_past += max(len(data) - max(room, 0), 0)

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
        if mt == "text/event-stream":
            self.mode, self.parser = "sse", SSEParser(LAZY_DATA_ABOVE)
        elif mt == "application/json" or mt.endswith("+json"):
            self.mode = "json"
        else:
            self.mode = "other"
        enc = (header(resp_headers, "content-encoding") or "").strip().lower()
        if enc and enc != "identity":
            self.coding = enc
            # a JSON body is held whole: its decoded size is bounded (a gzip bomb stops there, flagged); a
            # stream's length is not, what one chunk decodes to is
            held = self._holds_body()
            self.decoder = content_decoder(enc, MAX_DECODED if held else None, None if held else MAX_DECODED)
            if self.decoder is None:
                self.undecodable = True
                self.undecoded = f"Content-Encoding {enc} is not one mcptap decodes"

    def _holds_body(self) -> bool:
        return self.mode == "json" and not self.facts.is_ack and not self.facts.legacy

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

    def _failed(self, exc: DecodeError) -> None:
        """The body does not decode from ``exc.at`` on. An event stream (or other
        body) was analysed up to there: the bytes from there on are kept. A JSON
        body, whose encoded bytes are kept from its start: with bytes after the end
        of its compressed data (``trailing``) what came before is still its message
        and the bytes from ``at`` are kept; else it is kept whole, nothing analysed."""
        self.undecodable, self.undecoded = True, exc.why
        if not self._holds_body():
            self.raw_offset = exc.at
            self.keep_raw(exc.rest)
        elif exc.trailing:
            self.partial = True
            kept = self.raw.take()
            self.raw = BodyBuffer()
            self.raw += kept[exc.at:]
            self.raw_dropped -= max(exc.at - len(kept), 0)
            self.raw_offset = exc.at
        else:
            self.raw_offset = 0
            self.resp_body = BodyBuffer()

    def feed(self, data: bytes) -> bytes | None:
        """The decoded bytes of response body chunk ``data`` (``resp_bytes``
        already counts it); None when the body is not analysable (kept raw).
        A JSON body with a coding is also kept encoded until it decoded whole."""
        if self.undecodable:
            self.keep_raw(data)
            return None
        if self.decoder is None:
            if len(self.resp_body) + len(data) > MAX_DECODED and self._holds_body():
                # a plain JSON body is held whole too: past the bound it is kept as relayed, as a compressed one
                self.undecodable, self.undecoded, self.raw_offset = True, f"the body {TOO_LARGE} {MAX_DECODED} bytes, what mcptap holds of a body", 0
                held, self.resp_body = self.resp_body.take(), BodyBuffer()
                self.keep_raw(held)
                del held
                self.keep_raw(data)
                return None
            return data
        if self._holds_body():
            self.keep_raw(data)
        try:
            return self.decoder.decompress(data)
        except DecodeError as exc:
            self._failed(exc)
            return exc.decoded or None      # (bytes after the compressed data: what decoded before them is the body's)

    def decode_tail(self, complete: bool) -> bytes:
        """What the decoder still holds at the body's end (``complete``: the
        body ended as framed, so an unfinished compressed stream is a fault)."""
        if self.decoder is None or self.undecodable:
            return b""
        try:
            tail = self.decoder.flush()
        except DecodeError as exc:
            self._failed(exc)
            return b""
        if complete and not self.decoder.eof and self.resp_bytes:
            self._failed(DecodeError(f"the {self.coding} body does not decode {UNFINISHED}", self.resp_bytes, b""))
        return tail

    def json_body(self, complete: bool = True) -> bytes | None:
        """The buffered JSON body, decoded; None when its coding is not
        decodable or it does not decode (then ``raw`` holds it, encoded), or,
        not ``complete`` (the client went away inside it), when its compressed
        stream is merely unfinished: a cut body, not a fault (``undecodable``
        stays False). Bytes after the end of its compressed data leave
        ``undecodable`` set and ``raw`` holding them, and the body before them is returned."""
        if self.decoder is None:
            return None if self.undecodable else self.resp_body.take()
        if not self.undecodable:
            tail = self.decode_tail(complete)
            if not complete and not self.undecodable and not self.decoder.eof:
                return None
            self.resp_body += tail
        if self.undecodable and not self.partial:
            return None
        if not self.undecodable:
            self.raw = BodyBuffer()
        return self.resp_body.take()


__all__ = ["RAW_KEEP", "ObservedExchange", "decode_whole"]
