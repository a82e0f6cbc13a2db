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
  are delivered to the runner. A stream the server ends closes the link:
  nothing more can come.
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

from collections.abc import Sequence
from dataclasses import dataclass, field
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
from mcptap.replay.http_conn import IO_ERRORS, Conn, close, has_request

C2S, S2C = Direction.C2S, Direction.S2C


@dataclass(slots=True)
class _Stream:
    """One session's event stream: the endpoint target (``path?query``) once
    announced, or why there is none."""

    target: str | None = None
    failed: str | None = None
    status: int = 0
    ready: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)


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
        self._streams: dict[Any, _Stream] = {}
        self._used: set[int] = set()        # connections that carried an exchange: the next one on it is "reused"
        self._closing = False

    async def _connect(self) -> Conn:
        c = await super()._connect()
        c.seen = lambda data: self.rec.forwarded(S2C, data)
        return c

    # -- link interface (start: HttpLink's, which connects once to fail early) ---------------
    async def send(self, value: Any, session: Any = None) -> None:
        st = await self._stream(session)
        if st.target is None:
            await self._synthetic(value, st.status, st.failed or "no legacy HTTP+SSE endpoint")
        elif has_request(value):
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
    async def _stream(self, session: Any) -> _Stream:
        """``session``'s stream, opened on first use; returns once its
        endpoint is known or it has failed."""
        st = self._streams.get(session)
        if st is None:
            st = self._streams[session] = _Stream()
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

    async def _read(self, session: Any, st: _Stream) -> None:
        ex, c, how, detail, head = self._exchange(), None, "complete", "", False
        try:
            with st.scope:
                try:
                    c = await self._connect()
                except IO_ERRORS as exc:
                    st.failed = f"cannot open the HTTP+SSE stream: {type(exc).__name__}: {exc}"
                    return
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
                        st.failed = f"HTTP {resp.status_code} {ctype or 'without Content-Type'} for the HTTP+SSE stream GET"
                        st.ready.set()
                        await self._drain(c, ex)
                    else:
                        await self._events(c, ex, session, st)
                except IO_ERRORS as exc:
                    how, detail = ("upstream_closed" if head else "upstream_failed"), f"{type(exc).__name__}: {exc}"
            if st.scope.cancelled_caught:
                how, detail = "client_closed", ""
        finally:
            if c is not None:
                self.observer.handle([r.ResponseEnded(ex, c.id, how, detail, response_started=head)])
                await trio.aclose_forcefully(c.stream)
            if st.target is None and st.failed is None:
                st.failed = "the HTTP+SSE stream ended before its endpoint event"
            ended = st.target is not None and not self._closing and how != "client_closed"
            st.ready.set()
            st.done.set()
            if ended:
                self.closed()       # the server ended the stream its answers come on

    async def _events(self, c: Conn, ex: int, session: Any, st: _Stream) -> None:
        parser = SSEParser()
        while True:
            ev = await c.next_event()
            if isinstance(ev, h11.Data):
                data = bytes(ev.data)
                self.observer.handle([r.ResponseBody(ex, c.id, data)])
                for sse in parser.receive_data(data):
                    await self._event(ex, session, st, sse)
            elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        for sse in parser.receive_data(b""):
            await self._event(ex, session, st, sse)
        self._parsed.pop(ex, None)      # (the observer records a last unterminated event only at the stream's end)

    async def _event(self, ex: int, session: Any, st: _Stream, sse: SSEEvent) -> None:
        if not sse.dispatched:
            return
        if sse.type == "endpoint":
            if not st.ready.is_set():
                st.target, st.failed = self._endpoint(sse.data)
                st.ready.set()
            return
        if sse.type != "message" or not sse.data:
            return      # as the SDK client: other event types carry no message
        value = self._parsed_value(ex, sse.data.encode("utf-8"))
        if isinstance(value, (dict, list)):
            await self.deliver(value, session)

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
            return None, f"the endpoint event's URI {urls.public(data.strip())!r} does not parse"
        if (u.scheme.lower(), (u.hostname or "").lower(), urls.port_of(u)) != (base.scheme.lower(), (base.hostname or "").lower(), urls.port_of(base)):
            return None, f"endpoint on another origin, not followed: {urls.public(resolved or '')}"
        return (u.path or "/") + (f"?{u.query}" if u.query else ""), None

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

    async def _post_to(self, target: str, value: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        body = dumps(value)
        headers = [("Host", self.authority), ("Content-Type", "application/json"), ("User-Agent", "mcptap-replay"), *self.extra,
                   ("Content-Length", str(len(body)))]
        ex, c, head, started = self._exchange(), None, False, False
        try:
            c = await self._conn()
            reused = c.id in self._used
            self._used.add(c.id)
            wire = c.h11.send(h11.Request(method="POST", target=target, headers=headers)) + c.h11.send(h11.Data(data=body)) \
                + c.h11.send(h11.EndOfMessage())
            # recorded before it goes: the answer on the stream can never be recorded ahead of its request
            self.observer.handle([r.RequestStarted(ex, c.id, "POST", target, "1.1", _raw(headers), reused, False),
                                  r.RequestBody(ex, c.id, body), r.RequestEnded(ex, c.id)])
            self.rec.forwarded(C2S, wire)
            await c.stream.send_all(wire)
            task_status.started()
            started = True
            resp = await self._head(c, ex)
            head = True
            await self._drain(c, ex)
            self.observer.handle([r.ResponseEnded(ex, c.id, "complete", reused=reused)])
            await self._release(c)
            if not 200 <= resp.status_code < 300:
                await self._synthetic(value, resp.status_code, f"HTTP {resp.status_code} from the legacy HTTP+SSE endpoint")
        except IO_ERRORS as exc:
            detail = f"{type(exc).__name__}: {exc}"
            if c is None:
                self.rec.http(event="end", exchange=ex, how="upstream_failed", detail=detail)
            else:
                self.observer.handle([r.ResponseEnded(ex, c.id, "upstream_closed" if head else "upstream_failed", detail, response_started=head)])
                await close(c)
            if not started:
                task_status.started()
            await self._synthetic(value, 0, f"connection failed: {detail}")
