"""Fake HTTP upstreams for tests, server side of one connection with h11:
:func:`requests` reads them, :func:`answer` writes a whole response."""

from __future__ import annotations

from collections.abc import AsyncIterator

import h11
import trio


async def requests(stream: trio.abc.Stream, conn: h11.Connection) -> AsyncIterator[tuple[h11.Request, bytes]]:
    """Each request ``conn`` (``h11.Connection(h11.SERVER)``) reads from
    ``stream``, with its whole body, until the client closes (then it
    returns). The caller answers each on ``conn`` before taking the next (the
    connection is then made ready for it, keep-alive); one that leaves it
    unanswered ends the iteration."""
    req: h11.Request | None = None
    body = bytearray()
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data:
                return
            conn.receive_data(data)
        elif isinstance(ev, h11.Request):
            req, body = ev, bytearray()
        elif isinstance(ev, h11.Data):
            body += ev.data
        elif isinstance(ev, h11.EndOfMessage):
            assert req is not None
            yield req, bytes(body)
            if conn.our_state is not h11.DONE:
                return
            conn.start_next_cycle()
        elif isinstance(ev, h11.ConnectionClosed):
            return


def answer(conn: h11.Connection, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    """The bytes of a whole response: ``headers`` and ``body`` (without a
    Content-Length among ``headers``, the body goes chunked)."""
    return conn.send(h11.Response(status_code=status, headers=headers)) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
