"""Replay over Streamable HTTP: the HttpLink (its connections are
``replay/http_conn.py``'s, its request heads ``replay/http_heads.py``'s, its
session's GET stream and DELETE ``replay/http_session.py``'s).

``HttpLink(url, rec, extra_headers=(), tools=None, cacert=None)`` implements the runner's
link interface (see runner.py). Each c2s message is one POST to ``url`` with
``Accept: application/json, text/event-stream``:

* a request's answer is read from a JSON body or an SSE stream (server
  requests and notifications on that stream are delivered too, then the
  response); the POST for the next message starts once this one's request has
  been written, so requests that overlapped in the original overlap again;
* notifications and the client's answers to server requests are POSTed and
  their ``202`` awaited before the next message (order as the client sent it);
* ``Mcp-Session-Id`` from a live answer is mapped to the original session and
  sent on that session's later requests; ``MCP-Protocol-Version`` carries the
  negotiated revision (2025-06-18+), or the request's ``_meta`` revision on
  2026-07-28, where ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` are added
  (spec 2026-07-28 basic/transports/streamable-http, "Required request headers");
* an HTTP error status leaving requests unanswered (no JSON-RPC answer in its
  body: 429 ``{"error": "rate_limit_exceeded"}``, text/plain) reaches the runner at
  once (not recorded as a message) as an error coded with the status, quoting the
  body's start, so the report shows it as ERROR-CHANGED; as the tap, only a JSON media type body
  is a JSON-RPC payload, and the POST's requests are recorded as refused at
  HTTP level (``http.request_refused``), not unanswered; a redirect (3xx, not followed) too;
* a 2xx response that ends without a request's answer (``{}``, another id, an empty body, a
  ``202``, an event stream that ended, after resuming it when it can be) settles that request
  unanswered at once (the runner's ``lost``), with what came instead (``http_conn.came``);
* with ``listen=True`` (the original client had one), a GET stream is opened
  for each new legacy session, so server messages unrelated to a POST arrive;
* at the end, each legacy session is closed with ``DELETE``.

Everything crossing the wire is recorded through the Recorder (``http``
records for heads, ``message`` records for JSON-RPC payloads, credentials
redacted), so the new session is a normal HTTP capture; off the write and read
paths (``replay/offpath.py``, as the stdio link): an answer reaches the runner
as soon as it is read (parsed once, here: the Recorder annotates that parse),
and is timed from when its request was written whole.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

from mcptap.capture.dumps import dumps
from mcptap.model import Direction
from mcptap.protocol.codes import finding
from mcptap.protocol.jsonparse import exact_value, parse_json_full
from mcptap.protocol.skeleton import SKELETON_ABOVE
from mcptap.protocol.sse import SSEParser
from mcptap.recorder import Recorder
from mcptap.redact import scrub_url
from mcptap.redact.header_scan import scan_value
from mcptap.redact.headers import is_secret_header, redact_header
from mcptap.replay.http_conn import IO_ERRORS, Conn, StreamState, came, close, has_request, id_key, refused_text, request_ids, response_ids, stale, unanswered
from mcptap.replay.http_heads import post_headers
from mcptap.replay.http_resume import resume
from mcptap.replay.http_session import delete, listen
from mcptap.replay.offpath import OffPath
from mcptap.replay.peer_text import failure
from mcptap.replay.runner import Deliver
from mcptap.replay.steps import read_id

C2S, S2C = Direction.C2S, Direction.S2C


class HttpLink:
    """Talk Streamable HTTP to ``url`` (see module docstring). ``tools``: the
    recorded tool definitions (for ``x-mcp-header`` arguments)."""

    def __init__(self, url: str, rec: Recorder, extra_headers: Sequence[tuple[str, str]] = (), tools: dict[str, Any] | None = None,
                 connect_timeout: float = 10.0, listen: bool = False, cacert: str | None = None) -> None:
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {scrub_url(url)!r}")
        self.url = url
        self.tls = u.scheme == "https"
        #: https: the system trust store, or ``cacert`` (a PEM bundle; OSError / ssl.SSLError when unreadable)
        self.ssl_context = ssl.create_default_context(cafile=cacert) if self.tls else None
        self.host = u.hostname
        self.port = u.port or (443 if self.tls else 80)
        self.authority = u.netloc.rpartition("@")[2]
        self.target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        #: the target as records hold it: secret-like query values as placeholders (as the tap records them)
        self.rec_target = scrub_url(self.target)
        self.rec = rec
        self.off = OffPath(rec)
        #: the runner's: called with each message once written whole (its answer's latency counts from then)
        self.written: Callable[[Any], None] | None = None
        self.extra = list(extra_headers)
        self.tools = tools or {}
        self.connect_timeout = connect_timeout
        self.listen = listen
        self.sessions: dict[Any, str] = {}           # original session -> live Mcp-Session-Id
        self.versions: dict[Any, str] = {}           # original session -> negotiated revision
        self._idle: list[Conn] = []
        self._conns = 0
        self._exchanges = 0
        self.error: str | None = None
        self.exit_code: int | None = None
        #: requests sent again because a kept-alive connection was closed before any response byte
        self.retried = 0
        #: the runner's: ``lost(ids, note)`` settles the requests with these ids as unanswered
        self.lost: Callable[[list[Any], str], None] | None = None

    # -- connections ---------------------------------------------------------------------
    async def _connect(self) -> Conn:
        with trio.fail_after(self.connect_timeout):
            stream: trio.abc.Stream = await trio.open_tcp_stream(self.host, self.port)
            if self.ssl_context is not None:
                stream = trio.SSLStream(stream, self.ssl_context, server_hostname=self.host, https_compatible=True)
                await stream.do_handshake()
        self._conns += 1
        return Conn(stream, self._conns)

    async def _conn(self) -> Conn:
        """An idle kept-alive connection the server has not closed meanwhile, else a new one."""
        while self._idle:
            c = self._idle.pop()
            if c.h11.our_state is h11.IDLE and not stale(c):
                return c
            await close(c)
        return await self._connect()

    async def _release(self, c: Conn) -> None:
        if c.h11.our_state is h11.DONE and c.h11.their_state is h11.DONE:
            try:
                c.h11.start_next_cycle()
                self._idle.append(c)
                return
            except h11.LocalProtocolError:
                pass
        await close(c)

    # -- link interface -------------------------------------------------------------------
    async def start(self, nursery: trio.Nursery, deliver: Deliver, closed: Callable[[], None]) -> None:
        self.nursery, self.deliver, self.closed = nursery, deliver, closed
        try:
            self._idle.append(await self._connect())
        except trio.TooSlowError:
            raise OSError(f"connecting to {self.authority} timed out") from None
        except ssl.SSLError as exc:
            raise OSError(f"TLS with {self.authority} failed: {exc}") from None
        except trio.BrokenResourceError as exc:
            # trio wraps a failed TLS handshake (an untrusted certificate: --cacert) in BrokenResourceError
            cause = exc.__cause__
            raise OSError(f"TLS with {self.authority} failed: {cause}" if isinstance(cause, ssl.SSLError)
                          else f"connection to {self.authority} failed: {cause or exc!r}") from None
        nursery.start_soon(self.off.run)

    async def send(self, value: Any, session: Any = None) -> None:
        if has_request(value):
            await self.nursery.start(self._post, value, session)
        else:
            await self._post(value, session)

    async def aclose(self) -> None:
        for orig, sid in list(self.sessions.items()):
            if orig in self.versions:                 # a handshake-era session: end it
                try:
                    await delete(self, sid, self.versions[orig])
                except IO_ERRORS:
                    pass
        for c in self._idle:
            await close(c)
        self._idle.clear()
        await self.off.drain()

    # -- one exchange ---------------------------------------------------------------------
    def _record_heads(self, event: str, ex: int, c: Conn, **fields: Any) -> None:
        if "headers" in fields:
            fields["headers"] = [[n, redact_header(n.lower(), v) if is_secret_header(n) else scan_value(v)]
                                 for n, v in fields["headers"]]
        self.off.call(self.rec.http, event=event, exchange=ex, conn=c.id, **fields)

    async def _post(self, value: Any, session: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        body = dumps(value)
        headers = post_headers(value, self.authority, self.sessions.get(session), self.versions.get(session), self.tools, self.extra)
        started = False

        def start() -> None:                # the runner sends on once this request is written (a retry: once in all)
            nonlocal started
            if not started:
                started = True
                task_status.started()

        for attempt in (0, 1):
            self._exchanges += 1
            ex = self._exchanges
            c: Conn | None = None
            try:
                c = await (self._conn() if attempt == 0 else self._connect())
                lost = await self._post_once(c, ex, body, value, session, headers, c.received > 0 and attempt == 0, start)
                if lost is None:
                    return
                # a kept-alive connection the server closed as the request arrived (no response byte): sent
                # again once on a new one, as the SDK clients' HTTP stacks do (recorded: http.request_lost_on_closed_connection)
                self.retried += 1
                self.off.call(self._lost, ex, c.id, lost)
                await close(c)
            except IO_ERRORS as exc:
                self.off.call(self.rec.http, event="end", exchange=ex, how="failed", detail=failure(exc))
                start()
                await self._synthetic(value, 0, f"connection failed: {failure(exc)}")
                return

    async def _post_once(self, c: Conn, ex: int, body: bytes, value: Any, session: Any, headers: list[tuple[str, str]],
                        reused: bool, start: Callable[[], None]) -> str | None:
        """One POST of ``value`` on ``c``: None when it was answered (or failed as the
        server's doing, delivered as such); when ``c`` was kept alive from an earlier
        exchange (``reused``) and ended before any response byte, why (the caller sends it
        again, once, on a new connection). Raises IO_ERRORS otherwise."""
        before = c.received
        t0 = trio.current_time()
        try:
            await c.stream.send_all(c.h11.send(h11.Request(method="POST", target=self.target, headers=headers + [("Content-Length", str(len(body)))])))
            await c.stream.send_all(c.h11.send(h11.Data(data=body)) + c.h11.send(h11.EndOfMessage()))
        except IO_ERRORS as exc:
            if reused:
                return failure(exc)
            raise
        if self.written is not None:
            self.written(value)
        self.off.call(self.rec.forwarded, C2S, body, size=len(body))
        live_sid = self.sessions.get(session)
        self._record_heads("request", ex, c, method="POST", target=self.rec_target, headers=headers,
                           **({"reused_connection": True} if reused else {}), **({"session": live_sid} if live_sid else {}))
        transport = {"exchange": ex, "conn": c.id, "method": "POST", "path": self.rec_target, "stream": "post"}
        deferred = live_sid is None and isinstance(value, dict) and value.get("method") == "initialize"
        if not deferred:
            self.off.call(self.rec.frame, C2S, body, session=live_sid, transport=transport, value=value)
        start()
        try:
            resp = await c.next_event()
        except IO_ERRORS as exc:
            if reused and c.received == before:
                return failure(exc)
            raise
        while isinstance(resp, h11.InformationalResponse):
            resp = await c.next_event()
        rh = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in resp.headers]
        sid = next((v for n, v in rh if n.lower() == "mcp-session-id"), None)
        if sid is not None and session not in self.sessions:
            self.sessions[session] = sid
        live_sid = self.sessions.get(session)
        if deferred:
            self.off.call(self.rec.frame, C2S, body, session=live_sid, transport=transport, value=value)
        self._record_heads("response", ex, c, status=resp.status_code, reason=resp.reason.decode("latin-1"), headers=rh,
                           latency_us=int((trio.current_time() - t0) * 1e6), **({"session": live_sid} if live_sid else {}))
        ctype = next((v for n, v in rh if n.lower() == "content-type"), "").split(";")[0].strip().lower()
        stream = await self._body(c, resp.status_code, ctype, value, session, live_sid, {**transport, "status": resp.status_code})
        self.off.call(self._end, ex, c.id, resp.status_code)
        await self._release(c)
        owed = request_ids(value) - stream.answered
        what = stream.came
        if owed and stream.last_id and live_sid is not None:
            # 2025-11-25 polling (SEP-1699): the server ended the stream after an event id, before
            # the answer; resumed with GET + Last-Event-ID after its retry delay, as the SDK clients do
            await resume(self, session, live_sid, owed, stream)
            what += "; resuming it (GET with Last-Event-ID) brought no answer"
        if owed and 200 <= resp.status_code < 300:
            # the server said all it will say to this POST (a 2xx body that ended: {}, another id, a 202,
            # an event stream without the answer): said now, not as "no answer" once the timeout has passed
            self._unanswered(value, owed, what)
        return None

    def _unanswered(self, value: Any, owed: set[Any], came: str) -> None:
        """The requests of ``value`` whose id keys are ``owed`` will get no answer: the runner
        settles them unanswered (MISSING) with ``came``, what the response was instead."""
        ids = [read_id(v["id"]) for v in unanswered(value, set()) if id_key(v["id"]) in owed]
        if ids and self.lost is not None:
            self.lost(ids, came)

    def _lost(self, ex: int, conn: int, why: str) -> None:
        """The ``end`` of a POST lost on a reused connection (made in order, as ``_end``): judged
        as the tap judges one (``http.request_lost_on_closed_connection``), its requests answered
        by the transport, so their re-send with the same ids is no duplicate."""
        ann = self.rec.annotator
        for p in [p for p in ann.pending() if p.exchange == ex and p.direction is C2S]:
            ann.transport_answered(p)
        lost = finding("http.request_lost_on_closed_connection", "the server closed its kept-alive connection as the request "
                       "arrived: the request was lost (replay sent it again on a new connection)")
        self.rec.http(event="end", exchange=ex, conn=conn, how="upstream_closed", findings=[lost],
                      detail=f"the kept-alive connection was closed before any response ({why}); sent again on a new connection")

    def _end(self, ex: int, conn: int, status: int) -> None:
        """A POST's ``end`` record (made in order, with the annotator caught up): judged as the tap
        judges it, an error status without a JSON-RPC answer refused the POST's requests."""
        ann = self.rec.annotator
        refused = ann.answers.rejected(ex, status, ann.session, target=self.rec_target)
        self.rec.http(event="end", exchange=ex, conn=conn, how="complete", findings=refused)

    async def _body(self, c: Conn, status: int, ctype: str, value: Any, session: Any, live_sid: Any, transport: dict[str, Any],
                    state: StreamState | None = None, owed: set[Any] | None = None) -> StreamState:
        """Read a response body to its end, delivering its JSON-RPC payloads; what an event
        stream left to resume it by (its last event id and retry, ``state`` carried on).
        ``owed``: a resumed stream is left (``state.cut``) once it has carried those answers."""
        state = state or StreamState()
        parser = SSEParser() if ctype == "text/event-stream" else None
        buf = bytearray()
        got_json = False
        messages = 0
        end = False
        while not end:
            ev = await c.next_event()
            if isinstance(ev, h11.Data):
                self.off.call(self.rec.forwarded, S2C, bytes(ev.data), size=len(ev.data))
                if parser is None:
                    buf += ev.data
                    continue
                events = parser.receive_data(bytes(ev.data))
            elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                if parser is None:
                    break
                events, end = parser.receive_data(b""), True
            else:
                continue
            for sse in events:
                state.saw(sse.last_event_id, sse.retry)
                if (sse.id is not None or sse.retry is not None) and not (sse.dispatched and sse.data):
                    # as the tap: an event with no message (a priming event) is an ``sse`` record, so the
                    # capture shows the id a stream that then ends can be resumed from
                    info = {"event": sse.type, **({"id": sse.id} if sse.id is not None else {}),
                            **({"retry": sse.retry} if sse.retry is not None else {})}
                    self.off.call(self.rec.http, event="sse", exchange=transport["exchange"], conn=c.id, sse=info,
                                  **({"session": live_sid} if live_sid else {}))
                if sse.dispatched and sse.data:
                    messages += 1
                    got_json |= await self._payload(sse.data.encode("utf-8"), session, live_sid, {**transport, "sse": {"event": sse.type}},
                                                    state.answered)
            if owed is not None and owed <= state.answered and not end:
                state.cut = True            # as the SDK clients: a resumed stream is not read past its answers
                return state
        if parser is None and buf and (ctype == "application/json" or ctype.endswith("+json")):
            # as the tap: only a JSON body is a JSON-RPC payload ("Method Not Allowed" in text/plain is not)
            got_json = await self._payload(bytes(buf), session, live_sid, transport, state.answered)
        if status >= 300:
            # the requests the body did not answer were refused at HTTP level (or redirected, which replay
            # does not follow), JSON body or not (429 {"error": "rate_limit_exceeded"}, 401 {"error":
            # "invalid_token"}, an id-null JSON-RPC error): said now, not as "no answer" once the timeout has passed
            refused = unanswered(value, state.answered)
            if refused:
                await self._synthetic(refused, status, refused_text(status, got_json, bytes(buf)))
        elif unanswered(value, state.answered):
            state.came = came(status, ctype, bytes(buf), messages)      # (redacting a body costs: only when it is said)
        return state

    async def _payload(self, raw: bytes, session: Any, live_sid: Any, transport: dict[str, Any], answered: set[Any] | None = None) -> bool:
        # parsed once, here (the answer does not wait for the analysis): the Recorder gets
        # this parse, the runner its exact form (re-read only for a run of 19+ digits); a
        # payload beyond SKELETON_ABOVE is left to the Recorder, which holds it as a skeleton
        parsed = parse_json_full(raw)
        self.off.call(self.rec.frame, S2C, raw, session=live_sid, transport=transport, size=len(raw),
                      parsed=parsed if len(raw) <= SKELETON_ABOVE else None)
        value = exact_value(parsed[0], raw) if not parsed[2] else parsed[0]
        if not isinstance(value, (dict, list)):
            return False
        if answered is not None:
            answered |= response_ids(value)
        self._note_version(value, session)
        await self.deliver(value, session)
        return True

    def _note_version(self, value: Any, session: Any) -> None:
        res = value.get("result") if isinstance(value, dict) else None
        if isinstance(res, dict) and isinstance(res.get("protocolVersion"), str) and "serverInfo" in res:
            self.versions[session] = res["protocolVersion"]
            sid = self.sessions.get(session)
            if self.listen and sid is not None:
                self.nursery.start_soon(listen, self, session, sid)

    async def _synthetic(self, value: Any, status: int, text: str) -> None:
        """Tell the runner a request failed at the HTTP level (not recorded as a message)."""
        for v in value if isinstance(value, list) else (value,):
            if isinstance(v, dict) and "method" in v and "id" in v:
                await self.deliver({"jsonrpc": "2.0", "id": read_id(v["id"]), "error": {"code": status, "message": text, "data": {"mcptap": "synthetic"}}},
                                   None)
