"""One client connection of the HTTP mock (trio + h11, level 4): requests in, events out.

    c = Conn(stream, cid, idle_timeout=300.0, request_timeout=30.0, seen=None)
    got = await c.next_request()     # (h11.Request, body bytes), TOO_LARGE, TOO_SLOW, or None (closed)
    await c.send(h11.Response(...), h11.Data(...), h11.EndOfMessage())

    await accept_loop(listener, handle, nursery, limit)   # connection cap: 503 beyond it (transport/limits.py)

The same client protections as the tap's (transport/limits.py, relay/http/timeouts.py),
so a mock left listening on a developer's machine cannot be held by a few
idle or dribbling clients: a connection without a request in progress is
closed after ``idle_timeout`` seconds; a request not received whole within
``request_timeout`` seconds of its first byte (slowloris) is answered 408 and
the connection closed; beyond ``limit.max_connections`` open connections new
ones get 503; out of file descriptors, one rate-limited line and a short pause
(never a traceback).

The transport errors a client that goes away can raise are ``IO_ERRORS``.

``seen(direction, data)`` is told every byte the connection reads (C2S) and writes (S2C), heads,
bodies and SSE framing included, as the tap's recorder is told what it forwards: the mock's own
capture counts and digests them in its end record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h11
import trio

from mcptap.model import Direction
from mcptap.transport.limits import Limit as Limit  # re-exported: the mock's names for the shared accept loop
from mcptap.transport.limits import Notices
from mcptap.transport.limits import accept_loop as accept_loop

CHUNK = 64 * 1024
#: bytes: a request body beyond this is refused (413)
MAX_BODY = 64 * 1024 * 1024
IO_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError, h11.ProtocolError)
#: ``next_request``'s answer for a body over MAX_BODY
TOO_LARGE = "too large"
#: ``next_request``'s answer for a request not received whole within the request timeout
TOO_SLOW = "too slow"
SLOW_ANSWER = (b"HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\nConnection: close\r\n"
               b"Content-Length: 47\r\n\r\nmcptap serve: the request did not arrive whole\n")


class Conn:
    """An h11 server connection on ``stream``; ``id``: its number in the mock's capture."""

    def __init__(self, stream: trio.abc.Stream, cid: int, idle_timeout: float = 300.0, request_timeout: float = 30.0,
                 seen: Callable[[Direction, bytes], None] | None = None) -> None:
        self.stream = stream
        self.seen = seen or (lambda direction, data: None)
        self.origin = ""            # ``http://host:port`` the client reached the mock at (set per request)
        self.h11 = h11.Connection(h11.SERVER)
        self.id = cid
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        #: how it ends, for the ``conn_close`` record: a request is being answered; ``next_request`` gave None
        #: after ``idle_timeout``; the mock closed it as the recorded server closed its exchange (no record then,
        #: as the tap writes none for a connection whose upstream closed it mid-exchange)
        self.busy = False
        self.idled = False
        self.closed_as_recorded = False

    async def next_event(self) -> Any:
        while True:
            ev = self.h11.next_event()
            if ev is h11.NEED_DATA:
                self.received(bytes(await self.stream.receive_some(CHUNK)))
                continue
            return ev

    async def next_request(self) -> tuple[h11.Request, bytes] | str | None:
        """The next request and its whole body; TOO_LARGE (the body is over MAX_BODY);
        TOO_SLOW (not whole within ``request_timeout`` s of its first byte); None when
        the client closed the connection, sent no request, or none for ``idle_timeout``
        s. Raises IO_ERRORS."""
        if not self.h11.trailing_data[0] and not self.h11.trailing_data[1]:
            data = b""
            with trio.move_on_after(self.idle_timeout) as idle:
                data = bytes(await self.stream.receive_some(CHUNK))
                self.received(data)
            if not data:
                self.idled = idle.cancelled_caught
                return None
        got: tuple[h11.Request, bytes] | str | None = TOO_SLOW
        with trio.move_on_after(self.request_timeout):
            got = await self._request()
        return got

    async def _request(self) -> tuple[h11.Request, bytes] | str | None:
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

    async def answer_slow(self, notices: Notices) -> None:
        """408 for a request that did not arrive whole in time (the connection is then closed)."""
        notices.note("request", f"a client did not send its request whole within {self.request_timeout:g} s: answered 408")
        self.seen(Direction.S2C, SLOW_ANSWER)
        await self.stream.send_all(SLOW_ANSWER)

    async def send(self, *events: Any) -> None:
        data = b"".join(self.h11.send(e) or b"" for e in events)
        self.seen(Direction.S2C, data)
        await self.stream.send_all(data)

    def received(self, data: bytes) -> None:
        """Bytes read from the client (b"": it closed), counted and handed to h11."""
        if data:
            self.seen(Direction.C2S, data)
        self.h11.receive_data(data)
