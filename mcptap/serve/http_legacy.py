"""The legacy HTTP+SSE transport of the HTTP mock (trio + h11, level 4; a mixin of
``serve.http.HttpMock``): ``GET`` on the recorded SSE path opens a session whose
``endpoint`` event names the recorded POST path with a fresh ``session_id``; POSTs there
get ``202`` and every answer travels on the SSE stream; a POST the recorded server refused (a 401
with its text) is refused so again, and an SSE stream it refused (none recorded open) likewise.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import trio

from mcptap.model import UNPARSED, Direction
from mcptap.protocol.jsonparse import exact_json
from mcptap.redact import placeholder
from mcptap.relay.http.credentials import record_target
from mcptap.serve.core import ServeCore
from mcptap.serve.http_conn import Conn
from mcptap.serve.http_send import Answering
from mcptap.serve.http_streams import MockSession
from mcptap.serve.live import Out
from mcptap.serve.script_http import KindAnswer, refusal_key

if TYPE_CHECKING:
    from mcptap.serve.script_model import Script

C2S = Direction.C2S


class LegacyServing(Answering):
    """Legacy HTTP+SSE sessions (see module docstring)."""

    if TYPE_CHECKING:
        core: ServeCore
        script: Script
        sessions: dict[str, MockSession]
        nursery: trio.Nursery
        _receive: Callable[[MockSession, Any], list[Out]]

    # -- legacy HTTP+SSE ------------------------------------------------------------------
    def _legacy_session(self, method: str, target: str) -> str | None:
        """The live legacy session a request's target names (a POST's ``session_id``) as the capture
        names it (``MockSession.key``: its keyed placeholder), or None."""
        if method != "POST" or not self.script.legacy_sse:
            return None
        q = parse_qs(urlsplit(target).query)
        ms = self.sessions.get((q.get("session_id") or q.get("sessionId") or [""])[0])
        return ms.key if ms is not None else None

    async def _legacy_stream(self, c: Conn, ex: int, answer: KindAnswer | None) -> None:
        """A legacy session's SSE stream; ``answer``: the recorded stream it plays (ended where that was)."""
        sid = secrets.token_hex(16)
        # recorded as its keyed placeholder, as the tap records it (the POST targets are scrubbed alike)
        ms = self.sessions[sid] = MockSession(self.core.open(), sid=sid, key=placeholder(sid))
        endpoint = f"{self.script.endpoint_path}?session_id={sid}"
        st = ms.open_standalone()
        first = f"event: endpoint\ndata: {endpoint}\n\n".encode()
        try:
            await self._sse(c, ex, ms, st, 200, [], "get", first=first,
                            first_record={"sse": {"event": "endpoint", "offset": 0, "bytes": len(first)}, "session": ms.key,
                                          "endpoint": {"data": record_target(endpoint), "resolved": record_target(c.origin + endpoint)}},
                            ends=answer)
        finally:
            ms.close_standalone(st)
            if ms.sid is not None:
                self.sessions.pop(ms.sid, None)

    async def _legacy_post(self, c: Conn, ex: int, target: str, body: bytes) -> None:
        q = parse_qs(urlsplit(target).query)
        sid = (q.get("session_id") or q.get("sessionId") or [""])[0]
        ms = self.sessions.get(sid)
        if ms is None:
            answer = self._turn(refusal_key("post", target))
            if answer is not None:       # as the recorded server refused this kind (400 with no session_id)
                await self._send_ending(c, ex, answer.ending, [])
            else:
                await self._plain(c, 404, b"Could not find session", ex)
            return
        value = exact_json(body)
        if value is UNPARSED:
            await self._plain(c, 400, b"Could not parse message", ex)
            return
        self._record_msg(C2S, body, ms, ex, "post")
        outs = self._receive(ms, value)
        ending = next((r.ending for r in ms.live.matched if r.ending is not None), None)
        if ending is not None and not (ending.status is not None and 200 <= ending.status < 300):
            # the recorded server refused this POST (a 401, a 403…) or closed its connection: so does the mock
            ms.dispatch(outs, self.nursery)
            await self._ended(c, ex, ms, ending, [], requests=False)      # (its body is no message: only the SSE stream carries them)
            return
        await self._plain(c, 202, b"Accepted", ex, ack=True)
        ms.dispatch(outs, self.nursery)
