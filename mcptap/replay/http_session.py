"""A Streamable HTTP session's own requests (trio, level 4), for ``HttpLink``
(``replay/http_client.py``): :func:`listen`, the session's GET stream (server
messages not tied to a POST; ``listen=True``; its GET, :func:`get_headers` and
:func:`send_get`, is also the one ``replay/http_resume.py`` resumes a stream with), and :func:`delete`, the ``DELETE``
that ends a handshake-era session at the end of the replay. Each is an exchange of
the new capture, recorded as the tap records it. The link is passed in, not
imported (which would make the two modules one), as ``replay/http_resume.py`` does.
"""

from __future__ import annotations

from typing import Any

import h11
import trio

from mcptap.replay.http_conn import IO_ERRORS, close
from mcptap.replay.peer_text import failure


async def listen(link: Any, session: Any, sid: str) -> None:
    """The session's GET stream (server requests and notifications not tied to a POST), for
    ``link`` (the ``HttpLink``: its connections, recorder and ``_body``)."""
    link._exchanges += 1
    ex = link._exchanges
    try:
        c = await link._connect()
        resp, ctype, transport = await send_get(link, c, ex, get_headers(link, session, sid), sid)
        if resp.status_code == 200 and ctype == "text/event-stream":
            await link._body(c, resp.status_code, ctype, None, session, sid, transport)
        await close(c)
    except IO_ERRORS as exc:
        link.off.call(link.rec.http, event="end", exchange=ex, how="failed", detail=failure(exc))


def get_headers(link: Any, session: Any, sid: str, last_event_id: str | None = None) -> list[tuple[str, str]]:
    """The head fields of the session's GET (with ``Last-Event-ID`` when it resumes a stream)."""
    headers = [("Host", link.authority), ("Accept", "text/event-stream"), ("Mcp-Session-Id", sid),
               *([("Last-Event-ID", last_event_id)] if last_event_id is not None else []), *link.extra]
    version = link.versions.get(session)
    if version is not None and version >= "2025-06-18":
        headers.append(("MCP-Protocol-Version", version))
    return headers


async def send_get(link: Any, c: Any, ex: int, headers: list[tuple[str, str]], sid: str) -> tuple[Any, str, dict[str, Any]]:
    """Send a GET with ``headers`` on ``c`` as exchange ``ex`` and read its response head
    (past any 1xx), both heads recorded: (the h11 Response, its media type lowercased,
    the transport facts of the messages its stream brings). Raises IO_ERRORS."""
    await c.stream.send_all(c.h11.send(h11.Request(method="GET", target=link.target, headers=headers)) + c.h11.send(h11.EndOfMessage()))
    link._record_heads("request", ex, c, method="GET", target=link.rec_target, headers=headers, session=sid)
    resp = await c.next_event()
    while isinstance(resp, h11.InformationalResponse):
        resp = await c.next_event()
    rh = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in resp.headers]
    link._record_heads("response", ex, c, status=resp.status_code, reason=resp.reason.decode("latin-1"), headers=rh, session=sid)
    ctype = next((v for n, v in rh if n.lower() == "content-type"), "").split(";")[0].strip().lower()
    transport = {"exchange": ex, "conn": c.id, "method": "GET", "path": link.rec_target, "stream": "get", "status": resp.status_code}
    return resp, ctype, transport


async def delete(link: Any, sid: str, version: str | None = None) -> None:
    """End the live session ``sid`` of ``link`` with ``DELETE`` (its answer awaited up to 5 s)."""
    c = await link._conn()
    headers = [("Host", link.authority), ("Mcp-Session-Id", sid), ("Content-Length", "0"), *link.extra]
    if version is not None and version >= "2025-06-18":
        headers.append(("MCP-Protocol-Version", version))     # (every request after initialize: MUST)
    link._exchanges += 1
    ex = link._exchanges
    await c.stream.send_all(c.h11.send(h11.Request(method="DELETE", target=link.target, headers=headers)) + c.h11.send(h11.EndOfMessage()))
    link._record_heads("request", ex, c, method="DELETE", target=link.rec_target, headers=headers, session=sid)
    with trio.move_on_after(5):
        resp = await c.next_event()
        while not isinstance(resp, h11.Response):
            resp = await c.next_event()
        link._record_heads("response", ex, c, status=resp.status_code, reason=resp.reason.decode("latin-1"), headers=[])
        while not isinstance(await c.next_event(), (h11.EndOfMessage, h11.ConnectionClosed)):
            pass
    await link._release(c)
