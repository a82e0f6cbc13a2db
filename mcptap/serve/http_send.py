"""How the HTTP mock answers (trio + h11, level 4; a mixin of ``serve.http.HttpMock``):
plain responses, a JSON-mode POST's answers, SSE streams, and the mock's own capture of
what it sent (``http`` response records, a ``message`` record per JSON-RPC payload).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import h11
import trio

from mcptap.model import Direction, Finding
from mcptap.protocol.http_replay import HttpReplay
from mcptap.protocol.jsonparse import exact_json
from mcptap.records.base import encode_bytes
from mcptap.records.events import Http
from mcptap.relay.http.auth import PREFIX as FRONTED
from mcptap.relay.http.observe import ACK_BODY_KEEP
from mcptap.serve.http_conn import CHUNK, IO_ERRORS, Conn
from mcptap.serve.http_streams import MockSession, ResponseStream
from mcptap.serve.live import Out
from mcptap.serve.script_auth import MOCK_ORIGIN, NOT_REPLAYED
from mcptap.serve.script_http import HttpEnding, KindAnswer, sse_bytes, wire_headers
from mcptap.serve.wire import encode, hkey

if TYPE_CHECKING:
    from mcptap.recorder import Recorder
    from mcptap.serve.script_model import Script

S2C = Direction.S2C


@dataclass(slots=True)
class OpenExchange:
    """What the records of an exchange of the mock's own capture carry after its ``request`` record, as
    the tap's do: its connection's number, its request body's size (bytes), the recorder's clock at the
    request (µs: the ``end`` record's ``duration_us`` runs from it), and its session (a minted one from
    its ``initialize`` on, as the tap takes it from the response head)."""

    conn: int
    request_bytes: int
    t0: int
    session: str | None = None


class Answering:
    """The mock's ways of answering (see module docstring); ``rec``: its Recorder or None."""

    if TYPE_CHECKING:
        rec: Recorder | None
        script: Script
        _turns: dict[str, int]
        #: exchange -> its facts, from its request record to its end record (``_record_http``)
        open_exchanges: dict[int, OpenExchange]
    _judged: tuple[Recorder, HttpReplay] | None = None

    # -- responses ----------------------------------------------------------------------
    async def _plain(self, c: Conn, status: int, body: bytes, ex: int | None = None, headers: list[tuple[str, str]] | None = None,
                     ctype: str = "text/plain", ack: bool = False) -> None:
        """A whole response of the mock's own (a JSON answer its caller recorded as messages, a 202, a refusal
        of its own), recorded as the tap records one: response, a body that is no JSON (``ctype`` not JSON:
        a refusal's text, the legacy ``Accepted``) as a ``response_body``, and the exchange's ``end`` (``ack``: with
        the body's first bytes, as the tap's end of a legacy POST's answer)."""
        hs = [("Content-Length", str(len(body))), *(headers or [])]
        if body:
            hs.append(("Content-Type", ctype))
        self._record_response(ex, status, hs)
        if body and ctype != "application/json" and ex is not None:
            self._record_body(ex, body)
        await c.send(h11.Response(status_code=status, headers=wire_headers(hs)), *([h11.Data(data=body)] if body else []), h11.EndOfMessage())
        self._record_end(ex, body, ack=ack)

    async def _ended(self, c: Conn, ex: int, ms: MockSession, ending: HttpEnding, extra: list[tuple[str, str]],
                     requests: bool = True) -> None:
        """End a live POST as its recorded one ended without a JSON-RPC answer (serve/script_http.py):
        the recorded status, headers and body, or the connection closed with no response.
        ``requests`` False: the POST carried none (an acknowledgement's body is no message)."""
        if ending.status is None:
            c.closed_as_recorded = True
            if self.rec is not None:
                self.rec.note("serve", message="the connection is closed with no response, as the recorded server closed it",
                              session=ms.key, exchange=ex)
            self._record_end(ex, b"", "upstream_closed")
            return                                   # nothing sent: the connection is closed (HttpMock._handle)
        await self._send_ending(c, ex, ending, extra, ms if requests else None)

    async def _oauth(self, c: Conn, ex: int, method: str, path: str) -> bool:
        """Answer a request off the MCP endpoint that belongs to OAuth (serve/script_auth.py): a
        discovery document the capture holds, ``501`` for the authorization server's exchanges, ``404``
        for any other well-known document. False: not OAuth's (served as before)."""
        sc = self.script
        doc = sc.auth_docs.get(path) if method == "GET" else None
        if doc is not None:
            status, headers, body = doc
            await self._send_ending(c, ex, HttpEnding(status, headers, body.replace(MOCK_ORIGIN.encode(), c.origin.encode())), [], ack=False)
        elif path in sc.auth_paths or path.startswith(FRONTED):
            await self._plain(c, 501, NOT_REPLAYED, ex)
        elif path.startswith("/.well-known/"):
            await self._plain(c, 404, b"mcptap serve: the capture holds no such document\n", ex)
        else:
            return False
        return True

    def _turn(self, key: str, ms: MockSession | None = None) -> KindAnswer | None:
        """The next recorded answer of request kind ``key`` (serve/script_http.refusal_key): the recorded ones
        in recorded order, then the last again, as equal POSTed requests get their recorded answers
        (docs/serve.md); None: the capture has none of that kind. Of live session ``ms``: those of the recorded
        session it plays (``live.group``, bound at its ``initialize``), in its own turn, when that session has
        any (two clients served at once used to take turns in one list: each got the other's); else the
        capture's, in the mock's turn."""
        group = ms.live.group if ms is not None else None
        own = self.script.session_answers.get(group, {}).get(key) if group is not None else None
        got, turns = (own, ms.turns) if own and ms is not None else (self.script.kind_answers.get(key), self._turns)
        if not got:
            return None
        n = turns.get(key, 0)
        turns[key] = n + 1
        return got[min(n, len(got) - 1)]

    async def _refused_as_recorded(self, c: Conn, ex: int, answer: KindAnswer | None, what: str, default: int) -> None:
        """A GET or DELETE answered as the recorded one was: ``answer`` (its kind's turn: ``_turn``), else the
        first recorded answer of ``what`` ("get" / "delete"), else ``default`` (the status): its status,
        headers (a 405's ``Allow``) and body."""
        answer = answer or next(iter(self.script.kind_answers.get(what, ())), None)
        await self._send_ending(c, ex, answer.ending if answer is not None else HttpEnding(default), [], frame=True,
                                stream="get" if what == "get" else "post")

    async def _send_ending(self, c: Conn, ex: int, ending: HttpEnding, extra: list[tuple[str, str]], ms: MockSession | None = None,
                           frame: bool | None = None, ack: bool | None = None, stream: str = "post") -> None:
        """Send ``ending`` (its status is not None) as the answer of exchange ``ex``. A JSON body is recorded as the
        tap frames one (a ``message`` record on ``stream``, "get" for a GET's, in ``ms``'s session or the exchange's)
        when ``frame`` (default: ``ms`` given): a POST with requests, a GET or DELETE; else, as on an acknowledgement's
        or a legacy POST's, and any other body, as a ``response_body``. ``ack`` (default: not ``frame``): the end
        record keeps the body's first bytes, as the tap's does for an acknowledgement's or a legacy POST's answer."""
        assert ending.status is not None
        frame = ms is not None if frame is None else frame
        ack = not frame if ack is None else ack
        body = b"" if ending.status in (204, 304) else ending.body
        # a URL the recording pointed at the tap (or named on the upstream) names the mock (serve/script_auth.py)
        headers = [(n, v.replace(MOCK_ORIGIN, c.origin)) for n, v in ending.headers]
        hs = [*(() if ending.status in (204, 304) else [("Content-Length", str(len(body)))]), *headers, *extra]
        self._record_response(ex, ending.status, hs)
        if ending.json_body and frame:
            self._record_msg(S2C, body, ms, ex, stream, status=ending.status)     # as the tap frames a JSON body
        elif body:
            # a body that is no message (a refusal's text, a notification's JSON error): kept as the tap keeps
            # it (relay/http/observe.py), never judged as JSON-RPC; it is the capture's, already scrubbed
            self._record_body(ex, body)
        await c.send(h11.Response(status_code=ending.status, headers=wire_headers(hs)), *([h11.Data(data=body)] if body else []), h11.EndOfMessage())
        self._record_end(ex, body, ack=ack)

    def _judge(self) -> HttpReplay:
        """The judge of the mock's own HTTP records: the one ``check --full`` re-annotates them with
        (``protocol/http_replay.py``, on the recorder's annotator), so the ``-o`` capture's findings
        are those ``check --full`` gives (the client's POST ``Accept``, media types, version header…);
        they used to be left out live. A new one for each Recorder (the CLI sets ``rec`` late)."""
        assert self.rec is not None
        if self._judged is None or self._judged[0] is not self.rec:
            self._judged = (self.rec, HttpReplay(self.rec.annotator))
        return self._judged[1]

    def _exchange_opened(self, ex: int, conn: int, request_bytes: int, session: str | None) -> None:
        if self.rec is not None:
            self.open_exchanges[ex] = OpenExchange(conn, request_bytes, self.rec.clock(), session)

    def _exchange_session(self, ex: int, session: str | None) -> None:
        """The session exchange ``ex`` belongs to once the mock knows it (a minted one, a legacy stream's)."""
        x = self.open_exchanges.get(ex)
        if x is not None and session is not None:
            x.session = session

    def _record_http(self, **fields: Any) -> None:
        """An ``http`` record of the mock's own traffic, with the findings re-annotation gives it: an
        exchange's records after its request with the fields the tap's carry (relay/http/observe.py):
        ``conn``; on its response and end its ``session``; on its end ``request_bytes`` and ``duration_us``."""
        if self.rec is not None:
            ex, event = fields.get("exchange"), fields.get("event")
            x = None
            if isinstance(ex, int) and event != "request":
                x = self.open_exchanges.pop(ex, None) if event == "end" else self.open_exchanges.get(ex)
            if x is not None:
                fields.setdefault("conn", x.conn)
                if event in ("response", "end") and x.session is not None:
                    fields.setdefault("session", x.session)
                if event == "end":
                    fields.update(request_bytes=x.request_bytes, duration_us=max(0, self.rec.clock() - x.t0))
            judged = self._judge().record(Http(0, 0, fields).to_json())     # as re-annotation reads it back
            self.rec.http(findings=[Finding.from_json(d) for d in judged.get("findings", ())], **fields)

    def _record_response(self, ex: int | None, status: int, headers: list[tuple[str, str]]) -> None:
        if ex is not None:
            self._record_http(event="response", exchange=ex, status=status, headers=[list(h) for h in headers])

    def _record_body(self, ex: int, body: bytes) -> None:
        """A ``response_body`` record of a body that is no message, as the tap keeps one."""
        if self.rec is not None:
            fields: dict[str, Any] = {"event": "response_body", "exchange": ex}
            encode_bytes(body, "body", fields)
            self._record_http(**fields)

    def _record_end(self, ex: int | None, body: bytes | int, how: str = "complete", ack: bool = True, events: int = 0) -> None:
        """The ``end`` record of an exchange (``body``: all its response, or its length; ``how``: as the tap's,
        "complete", "client_closed", "upstream_closed" where the recorded server closed it; ``ack``: keep
        the body's first bytes, judged only on an acknowledgement; ``events``: SSE events sent), as the tap
        writes one for every exchange: the judge ends the exchange there, so a POST's requests refused as
        recorded (an error status, no JSON-RPC answer) are ``http.request_refused`` as in the tap's capture,
        not pending until the capture's end (``jsonrpc.unanswered_request``), and ``check``/``show`` read
        the mock's capture as the tap's."""
        if ex is not None:
            size = body if isinstance(body, int) else len(body)
            fields: dict[str, Any] = {"how": how, "response_bytes": size, **({"sse_events": events} if events else {})}
            if ack and isinstance(body, bytes) and body:
                fields["ack_body"] = body[:ACK_BODY_KEEP].decode("utf-8", "replace")
            self._record_http(event="end", exchange=ex, **fields)

    def _record_msg(self, direction: Direction, raw: bytes, ms: MockSession | None, ex: int, stream: str, out: Out | None = None,
                    status: int | None = None) -> None:
        """A ``message`` record of the mock's traffic, in ``ms``'s session (None: the exchange's, if any); ``status``: the
        HTTP status its body travelled with, in its transport facts as the tap records it (a body on an error status
        is judged by it)."""
        if self.rec is not None:
            x = self.open_exchanges.get(ex)
            transport: dict[str, Any] = {"exchange": ex, **({"conn": x.conn} if x is not None else {}), "stream": stream,
                                         **({"status": status} if status is not None else {})}
            extra = [out.finding] if out is not None and out.finding is not None else []
            if direction is Direction.C2S:
                # the POST's request findings, as re-annotation judges them at its body (HttpReplay.message)
                extra += self._judge().message({"transport": transport}, direction, exact_json(raw), raw) or []
            session = ms.key if ms is not None else x.session if x is not None else None
            self.rec.frame(direction, raw, session=session, transport=transport, extra=extra)

    async def _json_answer(self, c: Conn, ex: int, ms: MockSession, st: ResponseStream, status: int,
                           extra: list[tuple[str, str]], batch: bool, rejected: list[Out] | None = None) -> None:
        answers = list(rejected or ())
        while st.ids:
            out = await st.receive()
            if out.answers is not None and hkey(out.answers) in st.ids:
                st.ids.discard(hkey(out.answers))
                answers.append(out)
            else:
                ms.aside(out)             # a JSON-mode POST has no stream for anything else: the GET stream's
        for out in answers:
            self._record_msg(S2C, encode(out.value), ms, ex, "post", out)
        body = encode([o.value for o in answers] if batch else answers[0].value)
        await self._plain(c, status, body, ex, extra, ctype="application/json")

    async def _sse(self, c: Conn, ex: int, ms: MockSession, st: ResponseStream, status: int, extra: list[tuple[str, str]],
                   stream: str, first: bytes = b"", priming: tuple[dict[str, Any], ...] = (), ends: KindAnswer | None = None,
                   first_record: dict[str, Any] | None = None, resumed: bool = False) -> None:
        """An event stream: ``stream`` "post" (it ends once ``st`` has its answers) or "get"; ``first``: bytes
        sent first (the legacy endpoint event, whose ``sse`` record's fields are ``first_record``: under its
        session, as the tap records it, so the judge takes the session's POSTs for legacy ones); ``priming``: events sent before any message; ``ends``: the
        recorded GET stream this one plays, which the server ended (``ends.how``) after its last message
        (``ends.last``; None: at once, after its priming events): so does this one. ``resumed``: a GET resuming
        a request's stream (``MockSession.open_resumption``): it ends once ``st`` has its answer."""
        how = ends.how if ends is not None else None
        until = ends.last if ends is not None and how is not None else -1
        hs = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), *extra]
        self._record_response(ex, status, hs)
        await c.send(h11.Response(status_code=status, headers=wire_headers(hs)))
        if first_record is not None:
            self._record_http(event="sse", exchange=ex, **first_record)
            self._exchange_session(ex, first_record.get("session"))      # the stream's end is the session's, as the tap's
        for prime in priming:
            data = sse_bytes(prime)
            self._record_http(event="sse", exchange=ex, sse={**prime, "bytes": len(data), "terminated": True})
            first += data
        if first:
            await c.send(h11.Data(data=first))
        sent, events = len(first), first.count(b"\n\n")
        closed = False
        over = how is not None and until is None      # the recorded server ended it with no message on it: so does this one
        ended = how if over and how is not None else "complete"

        async def watch(n: trio.Nursery) -> None:
            # a client that leaves mid-stream: stop; a pipelined next request: keep it for later
            nonlocal closed
            try:
                data = await c.stream.receive_some(CHUNK)
            except IO_ERRORS:
                data = b""
            if data:
                c.received(bytes(data))
                return
            closed = True
            n.cancel_scope.cancel()

        async with trio.open_nursery() as n:
            n.start_soon(watch, n)
            while not over and (stream == "get" and not resumed or st.ids):
                try:
                    out = await st.receive()
                except trio.EndOfChannel:
                    # the session ended (a DELETE: MockSession.end), so this one ends cleanly
                    break
                if out.ends is not None:
                    # the recorded server ended this stream without the answer: so does the mock (its request
                    # stays open; an answer the recording has goes where it went, the GET stream)
                    ended = out.ends
                    break
                if out.answers is not None:
                    st.ids.discard(hkey(out.answers))
                data = encode(out.value)
                self._record_msg(S2C, data, ms, ex, stream, out)
                eid = b"id: " + out.event_id.encode("utf-8") + b"\n" if out.event_id else b""      # as the recorded event had it
                event = b"event: message\n" + eid + b"data: " + data + b"\n\n"
                await c.send(h11.Data(data=event))
                sent, events = sent + len(event), events + 1
                if how is not None and out.seq is not None and out.seq == until:
                    ended = how                 # the last message the recorded stream carried: it ended there
                    break
            n.cancel_scope.cancel()
        if closed:
            self._record_end(ex, sent, "client_closed", events=events)
            raise trio.ClosedResourceError("the client closed the stream")
        if ended != "complete":
            c.closed_as_recorded = True
            if self.rec is not None:
                self.rec.note("serve", message="the event stream is closed mid-stream, as the recorded server closed it", session=ms.key,
                              exchange=ex)
            self._record_end(ex, sent, "upstream_closed", events=events)
            raise trio.ClosedResourceError("the recorded server closed the stream mid-way")
        await c.send(h11.EndOfMessage())
        self._record_end(ex, sent, events=events)
