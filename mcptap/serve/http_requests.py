"""How the HTTP mock answers each Streamable HTTP request (trio + h11, level 4; a mixin of
``serve.http.HttpMock``, which reads the request and picks the method's handler here):

* ``_post``: the live session the POST belongs to (``_session_for``: minted at ``initialize``,
  400 without the header, 404 for an unknown one), the core's outputs for its JSON-RPC
  payload (``_receive``), and the answer as JSON or an SSE stream, or the recorded POST's
  ending when it carried no answer;
* ``_get``: the session's GET stream, or the recorded refusal of that kind;
* ``_delete``: the session's end, answered as recorded.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import h11
import orjson
import trio

from mcptap.model import UNPARSED, Direction
from mcptap.protocol.excerpt import cut
from mcptap.protocol.jsonparse import exact_json
from mcptap.serve.core import ServeCore
from mcptap.serve.http_conn import Conn
from mcptap.serve.http_legacy import LegacyServing
from mcptap.serve.http_streams import MockSession
from mcptap.serve.live import Out
from mcptap.serve.script_http import HttpEnding, refusal_key
from mcptap.serve.wire import encode, hkey, valid_id

if TYPE_CHECKING:
    from mcptap.recorder import Recorder

C2S, S2C = Direction.C2S, Direction.S2C


class Requests(LegacyServing):
    """POST, GET and DELETE of Streamable HTTP (see module docstring)."""

    if TYPE_CHECKING:
        core: ServeCore
        rec: Recorder | None
        say: Callable[[str], None]
        stateless: MockSession
        nursery: trio.Nursery
        _told_raw: bool
        _header: Callable[[h11.Request, bytes], str | None]
        _backlogged: Callable[[MockSession, Out], None]

    def _receive(self, ms: MockSession, value: Any) -> list[Out]:
        """The core's outputs for ``value``, without the recorded lines that are not messages
        (a stdio server's banner): HTTP has no byte stream to put them in, so each is left out
        with a ``serve`` note in the mock's capture (said once on stderr)."""
        outs = self.core.receive(ms.live, value)
        if not ms.opened and ms.live.group is not None:
            # what the recorded server wrote before any client message: a Streamable HTTP server can
            # send nothing before the session's first request, so it comes first then (docs/serve.md)
            ms.opened = True
            outs = self.core.opening(ms.live, ms.live.group) + outs
        for o in outs:
            if o.raw is not None:
                line = (f"a recorded server line that is not a JSON-RPC message is not sent over HTTP: "
                        f"{cut(o.raw.decode('utf-8', 'backslashreplace'), 60)!r}")     # a note the -o capture keeps: never a secret's piece
                if not self._told_raw:
                    self._told_raw = True
                    self.say(line + " (and any more: see the -o capture's serve notes)")
                if self.rec is not None:
                    self.rec.note("serve", message=line, session=ms.key)
        return [o for o in outs if o.raw is None]

    @staticmethod
    def _ending(ms: MockSession) -> HttpEnding | None:
        """How the recorded POST of what the core just matched ended without an answer, if it did."""
        return next((r.ending for r in ms.live.matched if r.ending is not None), None)

    def _session_for(self, req: h11.Request, value: Any) -> tuple[MockSession | None, int, bytes]:
        if not self.script.stateful:
            return self.stateless, 0, b""
        sid = self._header(req, b"mcp-session-id")
        first = value[0] if isinstance(value, list) and value else value
        if isinstance(first, dict) and first.get("method") == "initialize" and sid is None:
            sid = secrets.token_hex(16)
            new = self.sessions[sid] = MockSession(self.core.open(), sid=sid, on_backlog=self._backlogged,
                                                   get_stream=self.script.get_stream)
            return new, 0, b""
        if sid is None:
            return None, 400, b"Bad Request: Mcp-Session-Id header is required"
        ms = self.sessions.get(sid)
        if ms is None:
            return None, 404, b"Not Found: unknown session"
        return ms, 0, b""

    async def _post(self, c: Conn, ex: int, req: h11.Request, body: bytes) -> None:
        value = exact_json(body)
        if value is UNPARSED:
            err = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            await self._plain(c, 400, orjson.dumps(err), ex, ctype="application/json")
            return
        ms, status, why = self._session_for(req, value)
        if ms is None:
            await self._plain(c, status, why, ex)
            return
        self._exchange_session(ex, ms.key)
        self._record_msg(C2S, body, ms, ex, "post")
        extra = [("Mcp-Session-Id", ms.sid)] if ms.sid is not None else []
        bad = self.core.invalid(value) if not isinstance(value, list) else None
        if bad:                                       # an invalid request: 400 and its JSON-RPC error, as an SDK server answers
            self._record_msg(S2C, encode(bad[0].value), ms, ex, "post")
            await self._plain(c, 400, encode(bad[0].value), ex, extra, ctype="application/json")
            return
        items = value if isinstance(value, list) else [value]
        ids = [v["id"] for v in items if isinstance(v, dict) and isinstance(v.get("method"), str) and valid_id(v.get("id"))]
        if not ids:
            outs = self._receive(ms, value) if bad is None else []
            ms.dispatch([o for o in outs if not o.rejected], self.nursery)
            rejected = [o.value for o in outs if o.rejected]      # a batch's invalid members: their errors
            if rejected:
                self._record_msg(S2C, encode(rejected), ms, ex, "post")
            elif (ending := self._ending(ms)) is not None:           # the recorded server did not answer 202
                await self._ended(c, ex, ms, ending, extra, requests=False)
                return
            await self._plain(c, 200 if rejected else 202, encode(rejected) if rejected else b"", ex, extra, ctype="application/json")
            return
        st = ms.open_post(ids)
        try:
            outs = self._receive(ms, value)
            rejected = [o for o in outs if o.rejected and (o.answers is None or hkey(o.answers) not in st.ids)]
            outs = [o for o in outs if not any(o is r for r in rejected)]
            mine = [o for o in outs if o.answers is not None and hkey(o.answers) in st.ids]
            # (an answer the recording shows on another stream, the GET one, goes there: not the mock's own error)
            ending = self._ending(ms) if not rejected and not any(o.seq is None for o in mine) else None
            if ending is not None:
                # the recorded POST carried no answer (refused, 202, connection closed): it ends so again, and
                # what the server sent because of it goes where it went (the GET stream)
                ms.dispatch(outs, self.nursery)
                await self._ended(c, ex, ms, ending, extra)
                return
            mode = next((o.mode for o in mine if o.mode), None)
            status = next((o.status for o in mine if o.status), None) or 200
            if mode is None:
                # (with no GET stream to wait for, what the server wrote at start goes on this stream too)
                mode = "sse" if any(o.answers is None and (o.via is not None and hkey(o.via) in st.ids
                                                           or o.cause is None and o.seq is not None and not ms.get_stream)
                                    for o in outs) else "json"
            # (a stream the recorded server ended without the answer is one, a batch's too)
            st.sse = not (mode == "json" or isinstance(value, list)) or any(o.ends is not None and hkey(o.via) in st.ids for o in outs)
            ms.dispatch(outs, self.nursery)
            if not st.sse:
                await self._json_answer(c, ex, ms, st, status, extra, isinstance(value, list), rejected)
            else:
                # the events the recorded stream began with (a priming event: its id lets the client resume)
                primes = next((r.priming for r in ms.live.matched if r.priming), ())
                await self._sse(c, ex, ms, st, status, extra, "post", priming=primes)
        finally:
            ms.close_post(st)

    async def _no_session(self, c: Conn, ex: int, key: str, sent: bool, status: int, why: bytes) -> None:
        """A GET or DELETE with no live session (``status``: the mock's 400 or 404): without the session
        header (``sent`` False), the refusal recorded for that kind if any (a server's own 400)."""
        answer = self._turn(key) if not sent else None
        if answer is not None and not answer.stream:
            # a JSON body: a message, as the tap frames it
            await self._send_ending(c, ex, answer.ending, [], frame=True, stream="get" if key.startswith("GET ") else "post")
        else:
            await self._plain(c, status, why, ex)

    async def _get(self, c: Conn, ex: int, req: h11.Request) -> None:
        target = req.target.decode("latin-1")
        sent = self._header(req, b"mcp-session-id") is not None
        key = refusal_key("get", target, sent)
        ms, status, why = self._session_for(req, None)
        if ms is None:
            await self._no_session(c, ex, key, sent, status, why)
            return
        # the recorded answers of this kind in turn (a 401, then the stream; a GET /mcp/x beside the stream its 405)
        answer = self._turn(key, ms)
        if answer is not None and not answer.stream or answer is None and not self.script.get_stream:
            await self._refused_as_recorded(c, ex, answer, "get", 405)
            return
        extra = [("Mcp-Session-Id", ms.sid)] if ms.sid else []
        resumed = self.script.resume_of.get(self._header(req, b"last-event-id") or "")
        lid = ms.live.live_ids.get(resumed) if resumed is not None else None
        if lid is not None:
            # the resumption of a request's event stream: its messages and answer only (MockSession.open_resumption)
            st = ms.open_resumption(lid)
            try:
                await self._sse(c, ex, ms, st, 200, extra, "get", priming=answer.priming if answer is not None else (), resumed=True)
            finally:
                ms.close_post(st)
            return
        st = ms.open_standalone()
        try:
            await self._sse(c, ex, ms, st, 200, extra, "get", priming=answer.priming if answer is not None else (), ends=answer)
        finally:
            ms.close_standalone(st)

    async def _delete(self, c: Conn, ex: int, req: h11.Request, target: str) -> None:
        sid = self._header(req, b"mcp-session-id")
        key = refusal_key("delete", target, sid is not None)
        ms = self.sessions.get(sid or "")
        if ms is None:
            await self._no_session(c, ex, key, sid is not None, 404, b"")
            return
        answer = self._turn(key, ms) or next(iter(self.script.kind_answers.get("delete", ())), None)
        if answer is None or 200 <= (answer.ending.status or 0) < 300:
            self.sessions.pop(ms.sid or "", None)            # (a recorded 405: the server kept the session)
            ms.end()
        await self._refused_as_recorded(c, ex, answer, "delete", 200)
