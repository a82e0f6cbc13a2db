"""One client connection of the HTTP mock (trio + h11, level 4): requests in, events out.

    c = Conn(stream, cid)
    got = await c.next_request()     # (h11.Request, body bytes), TOO_LARGE, or None (closed)
    await c.send(h11.Response(...), h11.Data(...), h11.EndOfMessage())

The transport errors a client that goes away can raise are ``IO_ERRORS``.
"""

from __future__ import annotations

from typing import Any

import h11
import trio

CHUNK = 64 * 1024
#: bytes: a request body beyond this is refused (413)
MAX_BODY = 64 * 1024 * 1024
IO_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError, h11.ProtocolError)
#: ``next_request``'s answer for a body over MAX_BODY
TOO_LARGE = "too large"


class Conn:
    """An h11 server connection on ``stream``; ``id``: its number in the mock's capture."""

    def __init__(self, stream: trio.abc.Stream, cid: int) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER)
        self.id = cid

    async def next_event(self) -> Any:
        while True:
            ev = self.h11.next_event()
            if ev is h11.NEED_DATA:
                self.h11.receive_data(bytes(await self.stream.receive_some(CHUNK)))
                continue
            return ev

    async def next_request(self) -> tuple[h11.Request, bytes] | str | None:
        """The next request and its whole body; TOO_LARGE (the body is over MAX_BODY);
        None when the client closed the connection (or sent no request). Raises IO_ERRORS."""
        ev = await self.next_event()
        if isinstance(ev, h11.ConnectionClosed) or not isinstance(ev, h11.Request):
            return None
        body = bytearray()
        while True:
            e = await self.next_event()
            if isinstance(e, h11.Data):
                body += e.data
                if len(body) > MAX_BODY:
                    return TOO_LARGE
            elif isinstance(e, h11.EndOfMessage):
                return ev, bytes(body)
            elif isinstance(e, h11.ConnectionClosed):
                return None

    async def send(self, *events: Any) -> None:
        data = b"".join(self.h11.send(e) or b"" for e in events)
        await self.stream.send_all(data)
