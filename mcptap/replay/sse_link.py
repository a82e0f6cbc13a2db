"""Replay over the legacy HTTP+SSE transport (spec 2024-11-05 basic/transports,
"HTTP with SSE"): ``SseLink`` implements the runner's link interface (runner.py).

``SseLink(url, rec, extra_headers=(), connect_timeout=10.0, endpoint_timeout=10.0, cacert=None)``;
``url``: the server's event stream (the SDK's ``/sse``), http or https
(``cacert``: PEM CA bundle to trust, as ``HttpLink``'s).

* Each recorded session gets its own event stream, opened before the
  session's first message: ``GET url`` with ``Accept: text/event-stream``. The
  server's first ``endpoint`` event names where to POST (resolved against
  ``url``; an endpoint on another origin is not followed, as the SDK client
  refuses it).
* Each c2s message is one POST of ``application/json`` to that endpoint, which
  the server answers ``202 Accepted``. A request's POST is written before the
  next message goes (requests that overlapped in the original overlap again);
  other messages' POSTs are awaited to the end (order as the client sent them).
* The server's responses, notifications and requests arrive on the stream and
  are delivered to the runner. A stream the server ends mid-replay is opened
  again (a new GET, a new endpoint event; as a browser's EventSource does) and
  the next POSTs go to its endpoint; the transport has no resumption, so the
  requests the ended stream still owed are settled unanswered with
  ``REOPEN_NOTE`` (the runner's ``lost``), and the new endpoint, a new session
  to the server, is given the session's handshake again first
  (``replay/sse_stream.py``). After ``REOPEN_FAILURES`` streams in
  a row without a message, or a reopening that gets no endpoint, the link is
  closed: nothing more can come.
* A POST whose kept-alive connection the server closed as it arrived (no
  response byte) is sent again once on a new connection, as ``HttpLink`` does
  (``retried``; the lost attempt recorded as the tap records it,
  ``http.request_lost_on_closed_connection``).
* No endpoint (the GET refused or not an event stream, no ``endpoint`` event
  within ``endpoint_timeout`` seconds, an endpoint on another origin), a POST
  answered outside 2xx, or a connection that fails: the requests concerned get
  a synthetic error (status as code; never recorded as a message), as
  ``HttpLink`` does, so the report shows ERROR-CHANGED.
* At the end every stream is closed (the transport has no DELETE).

Recording: the wire facts (request heads and bodies, response heads and body
chunks, how each exchange ended) go through the HTTP tap's own observer
(``relay/http/observe.py``), so the new capture holds what ``mcptap record
--upstream URL`` writes for the same traffic: the ``endpoint`` event's ``sse``
record binding the session key, the POSTs and the stream's messages under it,
the same findings, credentials redacted; the digests are of the bytes that
crossed the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import h11
import trio

from mcptap.capture.dumps import dumps
from mcptap.model import Direction
from mcptap.protocol import urls
from mcptap.protocol.jsonparse import exact_json, exact_value
from mcptap.protocol.sse import SSEEvent, SSEParser
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.observe import HttpObserver
from mcptap.replay.http_client import HttpLink
from mcptap.replay.http_conn import IO_ERRORS, Conn, close, has_request, id_key, response_ids
from mcptap.replay.peer_text import failure, said
from mcptap.replay.sse_stream import Again, SseStream
from mcptap.replay.steps import read_id

C2S, S2C = Direction.C2S, Direction.S2C
#: streams in a row that the server ends without a message before the link stops opening it again
REOPEN_FAILURES = 2
#: why a request whose answer was owed on a stream the server ended is unanswered
REOPEN_NOTE = ("the server ended the HTTP+SSE event stream before answering; replay opened it again (a new endpoint: a new "
               "session, initialised again), but the legacy transport has no resumption: what the server sent meanwhile is lost")


def _raw(headers: Sequence[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers]


class SseLink(HttpLink):
    """Talk legacy HTTP+SSE to ``url`` (see module docstring)."""

    def __init__(self, url: str, rec: Recorder, extra_headers: Sequence[tuple[str, str]] = (), connect_timeout: float = 10.0,
                 endpoint_timeout: float = 10.0, cacert: str | None = None) -> None:
        super().__init__(url, rec, extra_headers, connect_timeout=connect_timeout, cacert=cacert)
        self.endpoint_timeout = endpoint_timeout
        # the observer sees this link's requests as the tap sees a client's, on the server's own scheme
        self.observer = HttpObserver(rec, r.Upstream.parse(url), listen_authority=self.authority, listen_scheme="https" if self.tls else "http")
        # the observer parses each stream message to record it: the link hands on that parse
        self._parsed: dict[int, list[tuple[bytes, Any]]] = {}
        self.observer.parsed_sink = self._parsed
        self._streams: dict[Any, SseStream] = {}
        self._used: set[int] = set()        # connections that carried an exchange: the next one on it is "reused"
        self._closing = False
        self._gone = False                  # a stream the server ended could not be opened again: the link is closed
        self._again = Again()
        #: the runner's: ``lost(ids, note)`` settles the requests with these ids as unanswered
        self.lost: Callable[[list[Any], str], None] | None = None

    async def _connect(self) -> Conn:
        c = await super()._connect()
        c.seen = lambda data: self.rec.forwarded(S2C, data)
        return c

    # -- link interface (start: HttpLink's, which connects once to fail early) ---------------
    async def send(self, value: Any, session: Any = None) -> None:
        self._again.sent(value, session)
        st = await self._stream(session)
        if self._gone:
            return              # (its requests settled by the runner's ``closed``)
        if st.target is None:
            await self._synthetic(value, st.status, st.failed or "no legacy HTTP+SSE endpoint")
            return
        for v in value if isinstance(value, list) else (value,):
            if isinstance(v, dict) and "method" in v and "id" in v:
                st.owed[id_key(v["id"])] = read_id(v["id"])        # (answered on the stream: _event)
        if has_request(value):
            await self.nursery.start(self._post_to, st.target, value)
        else:
            await self._post_to(st.target, value)

    async def aclose(self) -> None:
        self._closing = True
        for st in self._streams.values():
            st.scope.cancel()
        for st in self._streams.values():
            await st.done.wait()
        for c in self._idle:
            await close(c)
        self._idle.clear()

    # -- the event stream -----------------------------------------------------------------
    async def _stream(self, session: Any) -> SseStream:
        """``session``'s stream, opened on first use; returns once its
        endpoint is known or it has failed."""
        st = self._streams.get(session)
        if st is None:
            st = self._streams[session] = SseStream()
            self.nursery.start_soon(self._read, session, st)
        with trio.move_on_after(self.endpoint_timeout):
            await st.ready.wait()
        if not st.ready.is_set():
            st.failed = f"no endpoint event on the HTTP+SSE stream within {self.endpoint_timeout:g} s"
            st.ready.set()
            st.scope.cancel()
        return st

    def _exchange(self) -> int:
        self._exchanges += 1
        return self._exchanges

    async def _read(self, session: Any, st: SseStream) -> None:
        """``session``'s event stream for as long as the link runs: one the server ends
        is opened again (as a browser's EventSource does; the SDK client gives up) until
        ``REOPEN_FAILURES`` streams in a row bring no message; the requests it still owed
        are settled unanswered (``lost``), since the legacy transport has no resumption."""
        failures, ended, reopened = 0, False, False
        try:
            with st.scope:
                while not self._closing:
                    got = await self._listen(session, st, first=not reopened)
                    if self._closing or st.target is None:
                        ended = reopened and not self._closing      # (a first GET that failed fails its session's sends)
                        break
                    failures = 0 if got else failures + 1
                    owed, st.owed = list(st.owed.values()), {}
                    if owed and self.lost is not None:
                        self.lost(owed, REOPEN_NOTE)
                    if failures >= REOPEN_FAILURES:
                        ended = True
                        break
                    st.reopening()
                    reopened = True
            # a reopened stream whose endpoint did not come in time (``_stream`` cancelled it)
            ended = ended or (st.scope.cancelled_caught and reopened and not self._closing)
        finally:
            if st.target is None and st.failed is None:
                st.failed = "the HTTP+SSE stream ended before its endpoint event"
            if ended:
                # the server ended the stream its answers come on, and it could not be opened again:
                # closed before the sends that wait for its endpoint wake (they send nothing then)
                self._gone = True
                self.closed()
            st.ready.set()
            st.done.set()

    async def _listen(self, session: Any, st: SseStream, first: bool) -> int:
        """One GET of the event stream, to its end: the messages it delivered. A
        refusal wakes the sends waiting for its endpoint only of the ``first`` GET
        (a reopening's is ``_read``'s to judge)."""
        ex, c, how, detail, head = self._exchange(), None, "complete", "", False
        got = 0
        try:
            try:
                c = await self._connect()
            except IO_ERRORS as exc:
                st.failed = f"cannot open the HTTP+SSE stream: {failure(exc)}"
                return 0
            headers = [("Host", self.authority), ("Accept", "text/event-stream"), ("Cache-Control", "no-store"),
                       ("User-Agent", "mcptap-replay"), *self.extra]
            wire = c.h11.send(h11.Request(method="GET", target=self.target, headers=headers)) + c.h11.send(h11.EndOfMessage())
            self._used.add(c.id)
            self.observer.handle([r.RequestStarted(ex, c.id, "GET", self.target, "1.1", _raw(headers), False, False),
                                  r.RequestEnded(ex, c.id)])
            self.rec.forwarded(C2S, wire)
            try:
                await c.stream.send_all(wire)
                resp = await self._head(c, ex)
                head = True
                ctype = next((v.decode("latin-1") for n, v in resp.headers if n.lower() == b"content-type"), "")
                if resp.status_code != 200 or ctype.split(";")[0].strip().lower() != "text/event-stream":
                    st.status = resp.status_code
                    st.failed = f"HTTP {resp.status_code} {said(ctype, 60) or 'without Content-Type'} for the HTTP+SSE stream GET"
                    if first:
                        st.ready.set()
                    await self._drain(c, ex)
                else:
                    got = await self._events(c, ex, session, st)
            except IO_ERRORS as exc:
                how, detail = ("upstream_closed" if head else "upstream_failed"), failure(exc)
        except trio.Cancelled:
            how, detail = "client_closed", ""
            raise
        finally:
            if c is not None:
                self.observer.handle([r.ResponseEnded(ex, c.id, how, detail, response_started=head)])
                await trio.aclose_forcefully(c.stream)
        return got

    async def _events(self, c: Conn, ex: int, session: Any, st: SseStream) -> int:
        """Read the stream to its end; the messages delivered."""
        parser, got = SSEParser(), 0
        while True:
            ev = await c.next_event()
            if isinstance(ev, h11.Data):
                data = bytes(ev.data)
                self.observer.handle([r.ResponseBody(ex, c.id, data)])
                for sse in parser.receive_data(data):
                    got += await self._event(ex, session, st, sse)
            elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        for sse in parser.receive_data(b""):
            got += await self._event(ex, session, st, sse)
        self._parsed.pop(ex, None)      # (the observer records a last unterminated event only at the stream's end)
        return got

    async def _event(self, ex: int, session: Any, st: SseStream, sse: SSEEvent) -> int:
        if not sse.dispatched:
            return 0
        if sse.type == "endpoint":
            if not st.ready.is_set() and st.target is None:
                st.target, st.failed = self._endpoint(sse.data)
                if st.reopened and st.target is not None and session in self._again.handshakes:
                    self.nursery.start_soon(self._initialize_again, session, st, st.target)
                else:
                    st.ready.set()
            return 0
        if sse.type != "message" or not sse.data:
            return 0    # as the SDK client: other event types carry no message
        value = self._parsed_value(ex, sse.data.encode("utf-8"))
        if not isinstance(value, (dict, list)) or self._again.answered(value):
            return 0        # (an answer to an initialize given again is not the runner's, nor a sign of life)
        for k in response_ids(value):
            st.owed.pop(k, None)
        await self.deliver(value, session)
        return 1

    def _parsed_value(self, ex: int, raw: bytes) -> Any:
        """The value of a stream message, as the observer parsed it when it
        recorded the same bytes (each chunk is recorded before the link reads
        its events, so it is there, after any the link does not hand on);
        parsed here only when it is not (a payload the observer held as a
        skeleton, or one only the exact parse reads)."""
        held = self._parsed.get(ex)
        while held:
            data, value = held.pop(0)
            if data == raw:
                return exact_value(value, raw)
        return exact_json(raw)

    def _endpoint(self, data: str) -> tuple[str | None, str | None]:
        """(target to POST to, None) or (None, why not) for an ``endpoint`` event's data."""
        resolved = urls.join(self.url, data.strip())
        u = urls.split(resolved) if resolved is not None else None
        base = urls.split(self.url)
        if u is None or base is None:
            return None, f"the endpoint event's URI '{said(urls.public(data.strip()), 200)}' does not parse"
        if (u.scheme.lower(), (u.hostname or "").lower(), urls.port_of(u)) != (base.scheme.lower(), (base.hostname or "").lower(), urls.port_of(base)):
            return None, f"endpoint on another origin, not followed: {said(urls.public(resolved or ''), 200)}"
        return (u.path or "/") + (f"?{u.query}" if u.query else ""), None

    async def _initialize_again(self, session: Any, st: SseStream, target: str) -> None:
        """A reopened stream's endpoint is a new session: give it ``session``'s handshake
        again (module docstring of ``replay/sse_stream.py``), then let the sends go."""
        init, initialized = self._again.handshakes[session]
        own, answered = self._again.next_id()
        await self._post_to(target, {**init, "id": own})
        with trio.move_on_after(self.endpoint_timeout):
            await answered.wait()
        self._again.ids.pop(own, None)
        if answered.is_set() and own not in self._again.refused and initialized is not None and st.target == target:
            await self._post_to(target, initialized)
        st.ready.set()

    # -- POSTs ----------------------------------------------------------------------------
    async def _head(self, c: Conn, ex: int) -> Any:
        """The final response head (1xx recorded on the way), recorded."""
        while True:
            resp = await c.next_event()
            if not isinstance(resp, (h11.Response, h11.InformationalResponse)):
                raise h11.RemoteProtocolError("no response head")
            info = isinstance(resp, h11.InformationalResponse)
            self.observer.handle([r.ResponseStarted(ex, c.id, resp.status_code, resp.reason.decode("latin-1"), list(resp.headers), informational=info)])
            if not info:
                return resp

    async def _drain(self, c: Conn, ex: int) -> None:
        while True:
            ev = await c.next_event()
            if isinstance(ev, h11.Data):
                self.observer.handle([r.ResponseBody(ex, c.id, bytes(ev.data))])
            elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                return

    async def _synthetic(self, value: Any, status: int, text: str) -> None:
        if not (isinstance(value, dict) and self._again.answered({"id": value.get("id"), "error": text})):
            await super()._synthetic(value, status, text)       # (an initialize given again failed: not the runner's)

    async def _post_to(self, target: str, value: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        body = dumps(value)
        headers = [("Host", self.authority), ("Content-Type", "application/json"), ("User-Agent", "mcptap-replay"), *self.extra,
                   ("Content-Length", str(len(body)))]
        started = False
        for attempt in (0, 1):
            ex, c, head = self._exchange(), None, False
            try:
                c = await (self._conn() if attempt == 0 else self._connect())
                reused = c.id in self._used
                self._used.add(c.id)
                before = c.received
                wire = c.h11.send(h11.Request(method="POST", target=target, headers=headers)) + c.h11.send(h11.Data(data=body)) \
                    + c.h11.send(h11.EndOfMessage())
                # recorded before it goes: the answer on the stream can never be recorded ahead of its request
                self.observer.handle([r.RequestStarted(ex, c.id, "POST", target, "1.1", _raw(headers), reused, False),
                                      r.RequestBody(ex, c.id, body), r.RequestEnded(ex, c.id)])
                self.rec.forwarded(C2S, wire)
                try:
                    await c.stream.send_all(wire)
                    if not started:
                        started = True
                        task_status.started()
                    resp = await self._head(c, ex)
                except IO_ERRORS as exc:
                    if not (reused and c.received == before):
                        raise
                    # a kept-alive connection the server closed as the request arrived (no response byte): sent
                    # again once on a new one, as HttpLink does (recorded as the tap records it:
                    # http.request_lost_on_closed_connection, its requests answered by the transport)
                    self.retried += 1
                    self.observer.handle([r.ResponseEnded(ex, c.id, "upstream_closed", f"{failure(exc)}; sent again on a new connection",
                                                          reused=True, response_started=False)])
                    await close(c)
                    continue
                head = True
                await self._drain(c, ex)
                self.observer.handle([r.ResponseEnded(ex, c.id, "complete", reused=reused)])
                await self._release(c)
                if not 200 <= resp.status_code < 300:
                    await self._synthetic(value, resp.status_code, f"HTTP {resp.status_code} from the legacy HTTP+SSE endpoint")
            except IO_ERRORS as exc:
                detail = failure(exc)
                if c is None:
                    self.rec.http(event="end", exchange=ex, how="upstream_failed", detail=detail)
                else:
                    self.observer.handle([r.ResponseEnded(ex, c.id, "upstream_closed" if head else "upstream_failed", detail, response_started=head)])
                    await close(c)
                if not started:
                    started = True
                    task_status.started()
                await self._synthetic(value, 0, f"connection failed: {detail}")
            return
