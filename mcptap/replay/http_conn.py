"""The replay links' HTTP/1.1 client connections (trio + h11, level 4): what
``http_client.HttpLink`` (Streamable HTTP) and ``sse_link.SseLink`` (legacy
HTTP+SSE) share below the link.

* :class:`Conn` — one client connection: ``await conn.next_event()`` is the
  next h11 event from the server, reading as needed (``seen``: called with
  every chunk read, for digests of what crossed the wire);
* :func:`close` — close a connection, ignoring I/O errors;
* :func:`stale` — whether an idle kept-alive connection was closed by the server
  meanwhile (readable while idle: its FIN, or bytes no request asked for);
* :data:`IO_ERRORS` — the exceptions that mean the connection or the peer
  failed (the links turn them into failed exchanges, never raise them);
* :func:`has_request` — whether a JSON-RPC value (message or batch) holds a
  request (its POST is started, not awaited, so requests overlap again);
* :func:`unanswered`, :func:`refused_text` — an HTTP error's requests left
  without an answer, and what to tell of it (its body's start); :func:`came`, what
  to tell of a 2xx response that answered nothing.

The request heads themselves are built by ``replay/http_heads.py`` (pure).
"""

from __future__ import annotations

import select
import ssl
from collections.abc import Callable
from typing import Any

import h11
import trio

from mcptap.protocol.jsonrpc import id_key as jsonrpc_id_key
from mcptap.replay.peer_text import said, said_body
from mcptap.replay.steps import read_id

#: bytes read at a time
CHUNK = 64 * 1024
#: a connection or peer failure (trio stream errors, timeouts, OS and TLS errors, bad HTTP from the server)
IO_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError, ssl.SSLError, h11.ProtocolError)


class Conn:
    """One client connection. ``seen``: called with every chunk read off the
    wire (``sse_link`` digests what crossed it, heads and framing included)."""

    __slots__ = ("stream", "h11", "id", "seen", "received")

    def __init__(self, stream: trio.abc.Stream, cid: int) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)
        self.id = cid
        self.seen: Callable[[bytes], None] | None = None
        #: bytes read off the wire so far (a request that got none may be sent again elsewhere)
        self.received = 0

    async def next_event(self) -> Any:
        while True:
            ev = self.h11.next_event()
            if ev is h11.NEED_DATA:
                data = bytes(await self.stream.receive_some(CHUNK))
                self.received += len(data)
                if self.seen is not None:
                    self.seen(data)
                self.h11.receive_data(data)
                continue
            return ev


async def close(c: Conn) -> None:
    """Close ``c``'s stream; a failure to close is not an error of the replay."""
    try:
        await c.stream.aclose()
    except IO_ERRORS:
        pass


class StreamState:
    """What a response body left for resuming it (Streamable HTTP): ``last_id``, the event
    stream's last-event-id buffer ("" before any id); ``retry_ms``, its last ``retry``; and
    ``answered``, the id keys (``id_key``) of the responses it carried; ``cut``, it was
    left before its end (a resumed stream, once its answers had come)."""

    __slots__ = ("last_id", "retry_ms", "answered", "cut", "came")

    def __init__(self) -> None:
        self.last_id = ""
        self.retry_ms: int | None = None
        self.answered: set[Any] = set()
        self.cut = False
        #: a 2xx body, in words (``came``), for the requests it did not answer
        self.came = ""

    def saw(self, last_id: str, retry: int | None) -> None:
        if last_id:
            self.last_id = last_id
        if retry is not None:
            self.retry_ms = retry


def id_key(v: Any) -> Any:
    """A JSON-RPC id as a set member (an id may be any JSON value, a ``1e400`` fragment): the
    runner's key (``protocol.jsonrpc.id_key``: ``1`` answers ``1.0``), so the link and the
    runner agree on which requests a body answered."""
    if type(v) is int or type(v) is str:
        return v
    return jsonrpc_id_key(read_id(v))


def request_ids(value: Any) -> set[Any]:
    """The id keys of the requests in a JSON-RPC message or batch."""
    return {id_key(v["id"]) for v in (value if isinstance(value, list) else (value,)) if isinstance(v, dict) and "method" in v and "id" in v}


def unanswered(value: Any, answered: set[Any]) -> list[Any]:
    """The requests of a JSON-RPC message or batch whose id keys are not in ``answered``."""
    return [v for v in (value if isinstance(value, list) else (value,))
            if isinstance(v, dict) and "method" in v and "id" in v and id_key(v["id"]) not in answered]


#: characters of a body's start quoted in what replay says of it
GIST_CHARS = 120


def refused_text(status: int, got_json: bool, body: bytes) -> str:
    """What an HTTP error that answered no request says: the status, whether a
    JSON payload came (``got_json``), the ``body``'s start as one printable line
    (``peer_text.said_body``: redacted, whitespace runs as one space, controls
    escaped, at most GIST_CHARS characters)."""
    gist = said_body(body, GIST_CHARS)
    return f"HTTP {status} without a JSON-RPC {'answer' if got_json else 'body'}" + (f": {gist}" if gist else "")


def came(status: int, ctype: str, body: bytes, messages: int) -> str:
    """What a 2xx response that left a request unanswered was, in one printable line:
    an event stream that ended (``messages``: the JSON-RPC messages it carried), an empty
    body (a ``202``, which is for notifications and responses only), or a body, JSON or
    not, whose start is quoted (``peer_text.said_body``): ``HTTP 200 application/json
    without the answer: {}``."""
    if ctype == "text/event-stream":
        return f"HTTP {status} event stream ended without the answer" + (f" ({messages} other message{'s' * (messages != 1)})" if messages else "")
    if not body:
        return f"HTTP {status} with an empty body, not the answer"
    return f"HTTP {status} {said(ctype, 60) or 'without Content-Type'} without the answer: {said_body(body, GIST_CHARS)}"


def response_ids(value: Any) -> set[Any]:
    """The id keys of the responses (results and errors) in a JSON-RPC message or batch."""
    return {id_key(v.get("id")) for v in (value if isinstance(value, list) else (value,))
            if isinstance(v, dict) and "method" not in v and ("result" in v or "error" in v)}


def stale(c: Conn) -> bool:
    """``c``, idle between exchanges, can no longer carry one: its socket is readable
    (the server's FIN after its keep-alive timeout, uvicorn's 5 s, or bytes no request
    asked for). As httpx/httpcore check a pooled connection before reusing it; without
    the check the request was written into a closed connection and lost."""
    stream: Any = c.stream
    if isinstance(stream, trio.SSLStream):
        stream = stream.transport_stream
    sock = getattr(stream, "socket", None)
    if sock is None:
        return False
    try:
        return bool(select.select([sock.fileno()], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def has_request(value: Any) -> bool:
    """``value`` (a JSON-RPC message or batch) holds a request (``method`` and ``id``)."""
    items = value if isinstance(value, list) else (value,)
    return any(isinstance(v, dict) and "method" in v and "id" in v for v in items)

