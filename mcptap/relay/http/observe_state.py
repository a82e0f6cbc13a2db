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
  (analysis only: the forwarded bytes stay encoded); another coding sets
  ``undecodable`` and the body is counted but not analysed.

Times (``t0``, ``req_end_t``) are recorder clock values in µs. Nothing here
raises on peer input; a corrupt compressed stream raises ``zlib.error`` from
``decoder``, which the observer turns into ``undecodable``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from mcptap.model import Finding
from mcptap.protocol.http_fields import Headers, header, media_type
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.sse import SSEParser
from mcptap.protocol.sse_canonical import LAZY_DATA_ABOVE
from mcptap.relay.http.body_buffer import BodyBuffer


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
    mode: str = "none"               # json | sse | other
    decoder: Any = None
    undecodable: bool = False
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
            self.decoder = content_decoder(enc)
            self.undecodable = self.decoder is None
        if mt == "text/event-stream":
            self.mode, self.parser = "sse", SSEParser(LAZY_DATA_ABOVE)
        elif mt == "application/json" or mt.endswith("+json"):
            self.mode = "json"
        else:
            self.mode = "other"


def content_decoder(enc: str) -> Any:
    """A zlib decompressor for content coding ``enc`` (lower case), or None
    when the coding is not one the observer decodes."""
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj()
    return None
