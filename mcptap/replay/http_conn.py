"""The replay links' HTTP/1.1 client connections (trio + h11, level 4): what
``http_client.HttpLink`` (Streamable HTTP) and ``sse_link.SseLink`` (legacy
HTTP+SSE) share below the link.

* :class:`Conn` — one client connection: ``await conn.next_event()`` is the
  next h11 event from the server, reading as needed (``seen``: called with
  every chunk read, for digests of what crossed the wire);
* :func:`close` — close a connection, ignoring I/O errors;
* :data:`IO_ERRORS` — the exceptions that mean the connection or the peer
  failed (the links turn them into failed exchanges, never raise them);
* :func:`has_request` — whether a JSON-RPC value (message or batch) holds a
  request (its POST is started, not awaited, so requests overlap again).

The request heads themselves are built by ``replay/http_heads.py`` (pure).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import h11
import trio

#: bytes read at a time
CHUNK = 64 * 1024
#: a connection or peer failure (trio stream errors, timeouts, OS and TLS errors, bad HTTP from the server)
IO_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError, ssl.SSLError, h11.ProtocolError)


class Conn:
    """One client connection. ``seen``: called with every chunk read off the
    wire (``sse_link`` digests what crossed it, heads and framing included)."""

    __slots__ = ("stream", "h11", "id", "seen")

    def __init__(self, stream: trio.abc.Stream, cid: int) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)
        self.id = cid
        self.seen: Callable[[bytes], None] | None = None

    async def next_event(self) -> Any:
        while True:
            ev = self.h11.next_event()
            if ev is h11.NEED_DATA:
                data = bytes(await self.stream.receive_some(CHUNK))
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


def has_request(value: Any) -> bool:
    """``value`` (a JSON-RPC message or batch) holds a request (``method`` and ``id``)."""
    items = value if isinstance(value, list) else (value,)
    return any(isinstance(v, dict) and "method" in v and "id" in v for v in items)

