"""The HTTP reverse-proxy core (pure, sans-IO; the only module that uses h11).

Events in, commands out (the mitmproxy shape): the transport feeds bytes read
from client and upstream sockets and executes the returned commands in order
(send to a client, open/send/close an upstream connection, close a client).
The same list carries *facts* (request started, body chunk, response started,
endpoint rewritten, exchange ended, …) that the observer turns into capture
records; the transport passes them on after it has forwarded the bytes.

Per client connection there is one h11 server-side ``Connection`` and at most
one upstream h11 client-side ``Connection`` at a time (1:1, opened lazily on the
first request, re-opened when the upstream closed it), so HTTP/1.1 keep-alive,
chunked bodies and request/response ordering mirror the client's connection.

What changes on the way (RFC 9110 §7.6.1, §7.2):

* ``Host`` is set to the upstream's authority (``keep_host=True`` keeps it);
* hop-by-hop headers (``Connection`` and the fields it names, ``Keep-Alive``,
  ``Proxy-Connection``, ``TE``, ``Upgrade``) are dropped; ``Content-Length`` and
  ``Transfer-Encoding: chunked`` are kept, so the body framing stays the same;
* the legacy HTTP+SSE ``endpoint`` event's data is rewritten when it names the
  upstream's own origin (see ``relay/endpoint.py``);
* everything else (names, case, order, reason phrase, body bytes) is passed on
  unchanged, chunk by chunk, never buffered whole.

When the upstream cannot be reached the client gets a 502 with a one-line
reason; when the upstream closes mid-response the client connection is closed
the same way (no terminating chunk), so the client sees what it would have seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import h11

from mcptap.relay.endpoint import EndpointRewriter
from mcptap.relay.http_events import (  # noqa: F401  (re-exported: callers use mcptap.relay.http.X)
    Upstream, same_origin, SendClient, CloseClient, OpenUpstream, SendUpstream, CloseUpstream, RequestStarted,
    RequestBody, RequestEnded, ResponseStarted, ResponseBody, EndpointRewritten, ResponseEnded, ConnClosed, ClientOpened, Headers,
)

HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"te", b"upgrade"})


# -- state ----------------------------------------------------------------------------

@dataclass(slots=True)
class _Exchange:
    id: int
    method: bytes
    host_in: str | None
    reused: bool = False
    req_done: bool = False
    resp_started: bool = False
    resp_done: bool = False
    forward: bool = True          # request body still goes upstream
    rewriter: EndpointRewriter | None = None
    rewrites_seen: int = 0
    #: a 502 decided before the client finished sending its request: sent once
    #: the request body is read, so the capture keeps the request (detail, how)
    pending_502: tuple[str, str] | None = None


@dataclass(slots=True)
class _Conn:
    id: int
    client: h11.Connection
    up: h11.Connection | None = None
    gen: int = 0
    up_cycles: int = 0
    up_eof: bool = False
    ex: _Exchange | None = None
    closed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class HttpRelay:
    """Proxy core for every client connection of one tap.

    ``upstream``: where to forward; ``keep_host``: forward the client's Host
    unchanged; ``rewrite_endpoint``: rewrite legacy endpoint events naming the
    upstream origin; ``listen_authority``: the tap's ``host:port`` (used when a
    client sent no Host). All methods return a list of commands and facts, in
    the order they must be executed / observed; none raises on peer input.
    """

    def __init__(self, upstream: Upstream, keep_host: bool = False, rewrite_endpoint: bool = True,
                 listen_authority: str = "127.0.0.1") -> None:
        self.upstream = upstream
        self.keep_host = keep_host
        self.rewrite_endpoint = rewrite_endpoint
        self.listen_authority = listen_authority
        self._conns: dict[int, _Conn] = {}
        self._next_conn = 0
        self._next_ex = 0

    # -- client side ------------------------------------------------------------------
    def client_opened(self, peer: str | None = None) -> tuple[int, list[Any]]:
        """A client connected. Returns (conn id, [ClientOpened])."""
        self._next_conn += 1
        cid = self._next_conn
        self._conns[cid] = _Conn(cid, h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 20))
        return cid, [ClientOpened(cid, peer)]

    def client_data(self, conn: int, data: bytes) -> list[Any]:
        """Bytes from the client (``b""``: the client closed its side)."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is None or c.closed:
            return out
        try:
            c.client.receive_data(data)
        except RuntimeError:
            return out
        self._pump_client(c, out)
        return out

    def _pump_client(self, c: _Conn, out: list[Any]) -> None:
        while not c.closed:
            try:
                ev = c.client.next_event()
            except h11.RemoteProtocolError as exc:
                self._client_error(c, str(exc), out)
                return
            if ev is h11.NEED_DATA or ev is h11.PAUSED:
                return
            t = type(ev)
            if t is h11.Request:
                self._on_request(c, ev, out)
            elif t is h11.Data:
                ex = c.ex
                data = bytes(ev.data)
                if ex is not None:
                    out.append(RequestBody(ex.id, c.id, data))
                    if ex.forward:
                        self._send_up(c, h11.Data(data=data), out)
            elif t is h11.EndOfMessage:
                ex = c.ex
                if ex is not None:
                    ex.req_done = True
                    out.append(RequestEnded(ex.id, c.id))
                    if ex.forward:
                        self._send_up(c, h11.EndOfMessage(headers=_strip_hop(ev.headers.raw_items())), out)
                    elif ex.pending_502 is not None:
                        detail, how = ex.pending_502
                        ex.pending_502 = None
                        self._bad_gateway(c, ex, detail, how, out)
                        return
                self._cycle(c, out)
            elif t is h11.ConnectionClosed:
                self._client_gone(c, "", out)
                return

    def _on_request(self, c: _Conn, ev: h11.Request, out: list[Any]) -> None:
        self._next_ex += 1
        raw = list(ev.headers.raw_items())
        host_in = next((v.decode("latin-1") for n, v in raw if n.lower() == b"host"), None)
        ex = _Exchange(self._next_ex, bytes(ev.method), host_in)
        c.ex = ex
        up_headers, rewritten = self._upstream_headers(raw)
        if c.up is None or c.up.our_state is not h11.IDLE or c.up_eof:
            if c.up is not None:
                out.append(CloseUpstream(c.id, c.gen))
            c.gen += 1
            c.up = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
            c.up_cycles = 0
            c.up_eof = False
            out.append(OpenUpstream(c.id, c.gen))
        ex.reused = c.up_cycles > 0
        out.append(RequestStarted(ex.id, c.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                  ev.http_version.decode("latin-1"), raw, ex.reused, rewritten))
        self._send_up(c, h11.Request(method=ev.method, target=ev.target, headers=up_headers), out)

    def _upstream_headers(self, raw: Headers) -> tuple[Headers, bool]:
        out: Headers = []
        authority = self.upstream.authority.encode("ascii")
        rewritten = False
        have_host = False
        for name, value in _strip_hop(raw):
            if name.lower() == b"host":
                if have_host:
                    continue
                have_host = True
                if not self.keep_host and value != authority:
                    value = authority
                    rewritten = True
            out.append((name, value))
        if not have_host:
            out.insert(0, (b"Host", authority))
            rewritten = True
        return out, rewritten

    def _send_up(self, c: _Conn, ev: Any, out: list[Any]) -> None:
        ex = c.ex
        if c.up is None:
            if ex is not None:
                ex.forward = False
            return
        try:
            data = c.up.send(ev)
        except h11.LocalProtocolError:
            # the upstream already answered and closed (early response): stop forwarding the body
            if ex is not None:
                ex.forward = False
            return
        if data:
            out.append(SendUpstream(c.id, c.gen, data))

    def _send_client(self, c: _Conn, ev: Any, out: list[Any]) -> bool:
        try:
            data = c.client.send(ev)
        except h11.LocalProtocolError:
            self._abort_client(c, out)
            return False
        if data:
            out.append(SendClient(c.id, data))
        return True

    def _client_error(self, c: _Conn, detail: str, out: list[Any]) -> None:
        """Unparseable request bytes: answer 400 when possible, then close."""
        ex = c.ex
        if ex is not None and not ex.resp_done:
            out.append(ResponseEnded(ex.id, c.id, "client_closed", f"client sent invalid HTTP: {detail}", ex.reused,
                                     response_started=ex.resp_started))
            if c.up is not None:
                out.append(CloseUpstream(c.id, c.gen, abort=True))
                c.up = None
        if c.client.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = f"mcptap: invalid HTTP request: {detail}\n".encode("utf-8", "replace")
            self._send_client(c, h11.Response(status_code=400, headers=[(b"Content-Type", b"text/plain; charset=utf-8"),
                                                                       (b"Content-Length", str(len(body)).encode()),
                                                                       (b"Connection", b"close")], reason=b"Bad Request"), out)
            self._send_client(c, h11.Data(data=body), out)
            self._send_client(c, h11.EndOfMessage(), out)
        out.append(ConnClosed(c.id, "client", idle=ex is None, detail=f"invalid HTTP from client: {detail}"))
        self._close_client(c, out, abort=False)

    def _client_gone(self, c: _Conn, detail: str, out: list[Any]) -> None:
        ex = c.ex
        busy = ex is not None and not (ex.resp_done and ex.req_done)
        if ex is not None and not ex.resp_done:
            out.append(ResponseEnded(ex.id, c.id, "client_closed", detail or "client closed the connection", ex.reused,
                                     response_started=ex.resp_started))
        if c.up is not None:
            out.append(CloseUpstream(c.id, c.gen, abort=busy))
            c.up = None
        out.append(ConnClosed(c.id, "client", idle=not busy, detail=detail))
        self._close_client(c, out, abort=False)

    def _close_client(self, c: _Conn, out: list[Any], abort: bool) -> None:
        if not c.closed:
            c.closed = True
            out.append(CloseClient(c.id, abort))
            self._conns.pop(c.id, None)

    def _abort_client(self, c: _Conn, out: list[Any]) -> None:
        ex = c.ex
        if ex is not None and not ex.resp_done:
            ex.resp_done = True
            out.append(ResponseEnded(ex.id, c.id, "bad_response", "response could not be relayed to the client", ex.reused,
                                     response_started=ex.resp_started))
        if c.up is not None:
            out.append(CloseUpstream(c.id, c.gen, abort=True))
            c.up = None
        self._close_client(c, out, abort=True)

    # -- upstream side ----------------------------------------------------------------
    def upstream_data(self, conn: int, gen: int, data: bytes) -> list[Any]:
        """Bytes from upstream connection ``gen`` (``b""``: it closed)."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is None or c.closed or c.up is None or gen != c.gen:
            return out
        if not data:
            c.up_eof = True
        try:
            c.up.receive_data(data)
        except RuntimeError:
            return out
        self._pump_upstream(c, out)
        return out

    def upstream_failed(self, conn: int, gen: int, detail: str) -> list[Any]:
        """Upstream connection ``gen`` failed (connect refused, DNS, TLS, reset,
        timeout). ``detail``: one line for the 502 body and the capture."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is None or c.closed or gen != c.gen or c.up is None:
            return out
        c.up = None
        ex = c.ex
        if ex is None or (ex.resp_done and ex.req_done):
            out.append(ConnClosed(c.id, "upstream", idle=True, detail=detail))
            return out
        if ex.resp_done:
            ex.forward = False
            return out
        if not ex.resp_started:
            self._bad_gateway(c, ex, f"upstream {self.upstream.origin} unreachable: {detail}", "upstream_failed", out)
        else:
            self._flush_rewriter(c, ex, out)
            out.append(ResponseEnded(ex.id, c.id, "upstream_failed", detail, ex.reused))
            self._close_client(c, out, abort=True)
        return out

    def _bad_gateway(self, c: _Conn, ex: _Exchange, detail: str, how: str, out: list[Any]) -> None:
        ex.forward = False
        if not ex.req_done:
            ex.pending_502 = (detail, how)
            return
        body = f"mcptap: {detail}\n".encode("utf-8", "replace")
        ok = c.client.our_state is h11.SEND_RESPONSE
        if ok:
            ok = self._send_client(c, h11.Response(status_code=502, reason=b"Bad Gateway", headers=[
                (b"Content-Type", b"text/plain; charset=utf-8"), (b"Content-Length", str(len(body)).encode()),
                (b"Connection", b"close")]), out)
            ok = ok and self._send_client(c, h11.Data(data=body), out) and self._send_client(c, h11.EndOfMessage(), out)
        ex.resp_done = True
        out.append(ResponseEnded(ex.id, c.id, how, detail, ex.reused, sent_502=ok, response_started=False))
        self._close_client(c, out, abort=not ok)

    def _pump_upstream(self, c: _Conn, out: list[Any]) -> None:
        while c.up is not None and not c.closed:
            up = c.up
            try:
                ev = up.next_event()
            except h11.RemoteProtocolError as exc:
                self._upstream_error(c, str(exc), out)
                return
            if ev is h11.NEED_DATA or ev is h11.PAUSED:
                return
            t = type(ev)
            ex = c.ex
            if t is h11.Data:
                if ex is None:
                    continue
                data = bytes(ev.data)
                out.append(ResponseBody(ex.id, c.id, data))
                fwd = ex.rewriter.feed(data) if ex.rewriter is not None else data
                self._note_rewrites(c, ex, out)
                if fwd:
                    self._send_client(c, h11.Data(data=fwd), out)
            elif t is h11.Response or t is h11.InformationalResponse:
                if ex is None:
                    continue
                self._on_response(c, ex, ev, t is h11.InformationalResponse, out)
            elif t is h11.EndOfMessage:
                if ex is None:
                    continue
                self._flush_rewriter(c, ex, out)
                if self._send_client(c, h11.EndOfMessage(headers=_strip_hop(ev.headers.raw_items())), out):
                    ex.resp_done = True
                    out.append(ResponseEnded(ex.id, c.id, "complete", reused=ex.reused))
                    self._cycle(c, out)
            elif t is h11.ConnectionClosed:
                gen = c.gen
                c.up = None
                out.append(CloseUpstream(c.id, gen))
                if ex is not None and not ex.resp_done:
                    self._upstream_eof_before_response(c, ex, "", out)
                else:
                    out.append(ConnClosed(c.id, "upstream", idle=True))
                return

    def _on_response(self, c: _Conn, ex: _Exchange, ev: Any, informational: bool, out: list[Any]) -> None:
        raw = list(ev.headers.raw_items())
        headers = _strip_hop(raw)
        out.append(ResponseStarted(ex.id, c.id, ev.status_code, ev.reason.decode("latin-1"), raw, informational))
        if informational:
            if ev.status_code != 101:
                self._send_client(c, h11.InformationalResponse(status_code=ev.status_code, headers=headers, reason=ev.reason), out)
            return
        ex.resp_started = True
        if self.rewrite_endpoint and ex.method == b"GET" and ev.status_code == 200:
            ctype = next((v for n, v in raw if n.lower() == b"content-type"), b"")
            has_length = any(n.lower() == b"content-length" for n, _ in raw)
            if ctype.split(b";")[0].strip().lower() == b"text/event-stream" and not has_length:
                ex.rewriter = EndpointRewriter(self._endpoint_rewrite_fn(ex))
        self._send_client(c, h11.Response(status_code=ev.status_code, headers=headers, reason=ev.reason), out)

    def _endpoint_rewrite_fn(self, ex: _Exchange):  # noqa: ANN202
        up = self.upstream
        authority = ex.host_in or self.listen_authority

        def rewrite(data: str) -> str | None:
            if not same_origin(data, up):
                return None
            u = urlsplit(data)
            return urlunsplit(("http", authority, u.path, u.query, u.fragment))

        return rewrite

    def _note_rewrites(self, c: _Conn, ex: _Exchange, out: list[Any]) -> None:
        rw = ex.rewriter
        if rw is not None and len(rw.rewrites) > ex.rewrites_seen:
            for orig, new in rw.rewrites[ex.rewrites_seen:]:
                out.append(EndpointRewritten(ex.id, c.id, orig, new))
            ex.rewrites_seen = len(rw.rewrites)

    def _flush_rewriter(self, c: _Conn, ex: _Exchange, out: list[Any]) -> None:
        if ex.rewriter is not None:
            rest = ex.rewriter.flush()
            self._note_rewrites(c, ex, out)
            ex.rewriter = None
            if rest and c.client.our_state is h11.SEND_BODY:
                self._send_client(c, h11.Data(data=rest), out)

    def _upstream_error(self, c: _Conn, detail: str, out: list[Any]) -> None:
        ex = c.ex
        gen = c.gen
        eof = c.up_eof
        c.up = None
        out.append(CloseUpstream(c.id, gen, abort=not eof))
        if ex is None or ex.resp_done:
            out.append(ConnClosed(c.id, "upstream", idle=True, detail=detail))
            return
        if not ex.resp_started:
            if eof:
                self._upstream_eof_before_response(c, ex, detail, out)
            else:
                self._bad_gateway(c, ex, f"invalid HTTP response from upstream {self.upstream.origin}: {detail}", "bad_response", out)
            return
        # mid-body: pass on what was held, then break the client connection the same way
        self._flush_rewriter(c, ex, out)
        out.append(ResponseEnded(ex.id, c.id, "upstream_closed" if eof else "bad_response", detail, ex.reused))
        self._close_client(c, out, abort=True)

    def _upstream_eof_before_response(self, c: _Conn, ex: _Exchange, detail: str, out: list[Any]) -> None:
        """The upstream closed after the request, before any response byte: the
        client connection is closed too (what a direct client would have seen)."""
        out.append(ResponseEnded(ex.id, c.id, "upstream_closed", detail or "upstream closed the connection before responding",
                                 ex.reused, response_started=False))
        self._close_client(c, out, abort=True)

    # -- keep-alive cycles ------------------------------------------------------------
    def _cycle(self, c: _Conn, out: list[Any]) -> None:
        ex = c.ex
        if ex is None or not (ex.req_done and ex.resp_done):
            return
        up = c.up
        if up is not None:
            if up.our_state is h11.DONE and up.their_state is h11.DONE:
                up.start_next_cycle()
                c.up_cycles += 1
            else:
                out.append(CloseUpstream(c.id, c.gen))
                c.up = None
        cl = c.client
        if cl.our_state is h11.DONE and cl.their_state is h11.DONE:
            cl.start_next_cycle()
            c.ex = None
            self._pump_client(c, out)
        elif cl.our_state is h11.MUST_CLOSE or cl.their_state is h11.MUST_CLOSE or cl.our_state is h11.CLOSED:
            c.ex = None
            self._close_client(c, out, abort=False)

    # -- end ---------------------------------------------------------------------------
    def shutdown(self) -> list[Any]:
        """The tap stops: end every open exchange (``how="tap_stopped"``) and
        close every connection. Returns facts and close commands."""
        out: list[Any] = []
        for c in list(self._conns.values()):
            ex = c.ex
            busy = ex is not None and not (ex.resp_done and ex.req_done)
            if ex is not None and not ex.resp_done:
                out.append(ResponseEnded(ex.id, c.id, "tap_stopped", "mcptap stopped during the exchange", ex.reused,
                                         response_started=ex.resp_started))
            if c.up is not None:
                out.append(CloseUpstream(c.id, c.gen, abort=busy))
                c.up = None
            out.append(ConnClosed(c.id, "tap", idle=not busy))
            self._close_client(c, out, abort=busy)
        return out

    def open_connections(self) -> int:
        return len(self._conns)


def _strip_hop(raw: Any) -> Headers:
    """Drop hop-by-hop fields and those named by Connection (RFC 9110 §7.6.1)."""
    items = list(raw)
    named = set()
    for n, v in items:
        if n.lower() == b"connection":
            named.update(t.strip().lower() for t in v.split(b","))
    return [(n, v) for n, v in items if n.lower() not in HOP_BY_HOP and n.lower() not in named]
