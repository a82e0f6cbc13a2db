"""Resuming a Streamable HTTP response stream (trio, level 4): 2025-11-25 polling
(SEP-1699). A server may end a POST's event stream after an event with an id (its
priming event, with a ``retry``) and before the answer; the client then sends
``GET`` with ``Last-Event-ID`` and the answer comes on that stream (which may end the
same way again). ``HttpLink`` calls ``resume`` when a POST's stream ended owing
answers after an event id, as the SDK clients do (Python: ``_handle_reconnection``,
its 1 s default delay and 2 attempts); each GET is an exchange of the new capture
(``http.stream_resumed``), its answers delivered and recorded as the tap records them.
"""

from __future__ import annotations

from typing import Any

import trio

from mcptap.replay.http_conn import IO_ERRORS, StreamState, close
from mcptap.replay.http_session import get_headers, send_get
from mcptap.replay.peer_text import failure

#: ms before resuming an event stream whose server gave no ``retry`` (the Python SDK client's default)
RESUME_DELAY_MS = 1000
#: resumptions in a row that bring no new event before the answers are given up (the SDK's MAX_RECONNECTION_ATTEMPTS)
RESUME_FAILURES = 2


async def resume(link: Any, session: Any, sid: str, owed: set[Any], stream: StreamState) -> None:
    """Resume, for ``link`` (the ``HttpLink``: its connections, recorder and ``_body``;
    not imported, which would make the two modules one), a POST's event stream that ended owing the answers ``owed`` (request id keys):
    after its ``retry`` (default ``RESUME_DELAY_MS``), GET with ``Last-Event-ID``, as often
    as it ends again owing them, until ``RESUME_FAILURES`` tries in a row bring no new event
    (a refusal, not an event stream, a broken connection)."""
    failures = 0
    while owed and failures < RESUME_FAILURES:
        await trio.sleep((stream.retry_ms if stream.retry_ms is not None else RESUME_DELAY_MS) / 1000)
        link._exchanges += 1
        ex = link._exchanges
        last, stream.answered, stream.cut = stream.last_id, set(), False
        headers = get_headers(link, session, sid, last)
        try:
            c = await link._conn()
            resp, ctype, transport = await send_get(link, c, ex, headers, sid)
            await link._body(c, resp.status_code, ctype, None, session, sid, transport, stream, owed)
            if stream.cut:
                link.off.call(link.rec.http, event="end", exchange=ex, conn=c.id, how="client_closed",
                              detail="closed by replay once the answers it was resumed for had come (as the SDK clients do)")
                await close(c)
            else:
                link.off.call(link._end, ex, c.id, resp.status_code)
                await link._release(c)
        except IO_ERRORS as exc:
            link.off.call(link.rec.http, event="end", exchange=ex, how="failed", detail=failure(exc))
        owed -= stream.answered
        failures = 0 if stream.last_id != last or stream.answered else failures + 1

