"""The per-client-connection HTTP/1.1 state machine of the relay (pure, sans-IO, h11).

One ``ConnRelay`` per client connection: an h11 server-side ``Connection``
facing the client and at most one h11 client-side ``Connection`` facing the
upstream (1:1, opened lazily on the first request, re-opened under a new
``gen`` when the upstream closed or is not idle), so keep-alive, chunked bodies
and request/response ordering mirror the client's connection. At most one
exchange (``ExchangeState``) is in flight; a keep-alive cycle starts the next.

Methods append commands and facts (``relay/http/events.py``) to the ``out`` list
they are given, in execution order, and never raise on peer input: invalid
request bytes get a 400 (when still possible) and a close; an unreachable or
unparseable upstream before the response head gets a 502 once the request body
is read; an upstream gone mid-response aborts the client connection the same
way. Settings and exchange ids come from the owning ``HttpRelay`` (read when
needed), which drops the connection once ``closed`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import h11

from mcptap.relay.http import auth as oauth
from mcptap.relay.http.conn_auth import AuthExchange
from mcptap.relay.http.endpoint import EndpointRewriter
from mcptap.relay.http.events import (
    CloseClient,
    CloseUpstream,
    ConnClosed,
    EndpointRewritten,
    OpenUpstream,
    RequestBody,
    RequestEnded,
    RequestStarted,
    ResponseBody,
    ResponseEnded,
    ResponseStarted,
    SendClient,
    SendUpstream,
    Upstream,
)
from mcptap.relay.http.guard import request_problem
from mcptap.relay.http.rewrite import endpoint_rewrite_fn, request_host, strip_hop, upstream_headers, wants_endpoint_rewrite


class RelaySettings(Protocol):
    """What a connection reads from the relay that owns it (``proxy.HttpRelay``),
    read when needed so a changed setting affects the next request/response."""

    upstream: Upstream
    allowed_hosts: frozenset[str] | None
    keep_host: bool
    rewrite_endpoint: bool
    listen_authority: str
    auth: oauth.AuthFront | None

    def next_exchange_id(self) -> int: ...

MAX_HEAD = 1 << 20      # h11 max_incomplete_event_size, both sides


@dataclass(slots=True)
class ExchangeState:
    """One request/response exchange in flight on a connection."""
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
    pending_502: tuple[int, bytes, str, str] | None = None
    #: OAuth fronting of this exchange (``relay/http/conn_auth.py``), None with --no-auth-rewrite
    oauth: AuthExchange | None = None


def tap_response(status: int, reason: bytes, text: str) -> list[Any]:
    """The h11 events of a plain-text answer from the tap itself (400, 502):
    head with Content-Length and ``Connection: close``, body, end."""
    body = text.encode("utf-8", "replace")
    return [h11.Response(status_code=status, reason=reason, headers=[
        (b"Content-Type", b"text/plain; charset=utf-8"), (b"Content-Length", str(len(body)).encode()),
        (b"Connection", b"close")]), h11.Data(data=body), h11.EndOfMessage()]


class ConnRelay:
    """One client connection and its upstream connection (see module doc).

    ``id``: the conn id in every command and fact; ``gen``: the current
    upstream connection's generation (commands for older ones are stale)."""

    def __init__(self, relay: RelaySettings, cid: int) -> None:
        self.relay = relay
        self.id = cid
        self.client = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.up: h11.Connection | None = None
        self.up_origin = 0      # index into relay.auth.origins (0: the upstream)
        self.gen = 0
        self.up_cycles = 0
        self.up_eof = False
        self.ex: ExchangeState | None = None
        self.closed = False

    # -- client side ------------------------------------------------------------------
    def client_data(self, data: bytes, out: list[Any]) -> None:
        """Bytes from the client (``b""``: the client closed its side)."""
        if self.closed:
            return
        try:
            self.client.receive_data(data)
        except RuntimeError:
            return
        self._pump_client(out)

    def _pump_client(self, out: list[Any]) -> None:
        while not self.closed:
            try:
                ev = self.client.next_event()
            except h11.RemoteProtocolError as exc:
                self._client_error(str(exc), out)
                return
            if ev is h11.NEED_DATA or ev is h11.PAUSED:
                return
            if isinstance(ev, h11.Request):
                self._on_request(ev, out)
            elif isinstance(ev, h11.Data):
                ex = self.ex
                data = bytes(ev.data)
                if ex is not None:
                    out.append(RequestBody(ex.id, self.id, data))
                    if ex.oauth is not None and ex.oauth.holding_request:
                        for e in ex.oauth.request_data(data, out):
                            self._send_up(e, out)
                    elif ex.forward:
                        self._send_up(h11.Data(data=data), out)
            elif isinstance(ev, h11.EndOfMessage):
                ex = self.ex
                if ex is not None:
                    ex.req_done = True
                    out.append(RequestEnded(ex.id, self.id))
                    if ex.oauth is not None and ex.oauth.holding_request:
                        for e in ex.oauth.release_request(out, rewrite=True):
                            self._send_up(e, out)
                    if ex.forward:
                        self._send_up(h11.EndOfMessage(headers=strip_hop(ev.headers.raw_items())), out)
                    elif ex.pending_502 is not None:
                        status, reason, detail, how = ex.pending_502
                        ex.pending_502 = None
                        self._refuse(ex, status, reason, detail, how, out)
                        return
                self._cycle(out)
            elif isinstance(ev, h11.ConnectionClosed):
                self._client_gone("", out)
                return

    def _on_request(self, ev: h11.Request, out: list[Any]) -> None:
        raw = list(ev.headers.raw_items())
        ex = ExchangeState(self.relay.next_exchange_id(), bytes(ev.method), request_host(raw))
        self.ex = ex
        problem = request_problem(raw, bytes(ev.http_version))
        if problem is not None:
            # never forwarded: the upstream could frame it differently from the tap (smuggling)
            out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                      ev.http_version.decode("latin-1"), raw, False, False))
            self._refuse(ex, 400, b"Bad Request", problem, "request_rejected", out)
            return
        allowed = self.relay.allowed_hosts
        if allowed is not None and _host_name(ex.host_in) not in allowed:
            # DNS rebinding: a web page whose name resolves to 127.0.0.1 must not reach the
            # upstream through the tap (the tap rewrites Host, hiding the page's name from it)
            out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                      ev.http_version.decode("latin-1"), raw, False, False))
            self._refuse(ex, 403, b"Forbidden", f"Host {ex.host_in!r} is not a loopback name; refused (DNS rebinding "
                         "protection; --allow-remote lifts it)", "host_rejected", out)
            return
        upstream, origin, kind = self.relay.upstream, 0, ""
        front = self.relay.auth
        if front is not None:
            ex.oauth = x = AuthExchange.plan(front.at(ex.host_in), ex.id, self.id, ev.target, raw, upstream.path)
            upstream, origin, kind = x.upstream, x.origin, x.recorded_kind
            if x.kind == oauth.UNKNOWN_FRONT:
                out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                          ev.http_version.decode("latin-1"), raw, False, False, oauth.AS))
                self._refuse(ex, 404, b"Not Found", "no authorization server is fronted at this path", "auth_not_fronted", out)
                return
        up_headers, rewritten = upstream_headers(raw, upstream.authority, self.relay.keep_host)
        if self.up is None or self.up.our_state is not h11.IDLE or self.up_eof or origin != self.up_origin:
            if self.up is not None:
                out.append(CloseUpstream(self.id, self.gen))
            self.gen += 1
            self.up = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
            self.up_cycles = 0
            self.up_eof = False
            self.up_origin = origin
            out.append(OpenUpstream(self.id, self.gen, upstream if origin else None))
        ex.reused = self.up_cycles > 0
        out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                  ev.http_version.decode("latin-1"), raw, ex.reused, rewritten, kind))
        if ex.oauth is not None:
            for e in ex.oauth.request_head(ev.method, up_headers, raw, out):
                self._send_up(e, out)
            return
        self._send_up(h11.Request(method=ev.method, target=ev.target, headers=up_headers), out)

    def _send_up(self, ev: Any, out: list[Any]) -> None:
        ex = self.ex
        if self.up is None:
            if ex is not None:
                ex.forward = False
            return
        try:
            data = self.up.send(ev)
        except h11.LocalProtocolError:
            # the upstream already answered and closed (early response): stop forwarding the body
            if ex is not None:
                ex.forward = False
            return
        if data:
            out.append(SendUpstream(self.id, self.gen, data))

    def _send_client(self, ev: Any, out: list[Any]) -> bool:
        try:
            data = self.client.send(ev)
        except h11.LocalProtocolError:
            self._abort_client(out)
            return False
        if data:
            out.append(SendClient(self.id, data))
        return True

    def _client_error(self, detail: str, out: list[Any]) -> None:
        """Unparseable request bytes: answer 400 when possible, then close."""
        ex = self.ex
        if ex is not None and not ex.resp_done:
            out.append(ResponseEnded(ex.id, self.id, "client_closed", f"client sent invalid HTTP: {detail}", ex.reused,
                                     response_started=ex.resp_started))
            if self.up is not None:
                out.append(CloseUpstream(self.id, self.gen, abort=True))
                self.up = None
        if self.client.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            for ev in tap_response(400, b"Bad Request", f"mcptap: invalid HTTP request: {detail}\n"):
                self._send_client(ev, out)
        out.append(ConnClosed(self.id, "client", idle=ex is None, detail=f"invalid HTTP from client: {detail}"))
        self._close_client(out, abort=False)

    def _client_gone(self, detail: str, out: list[Any]) -> None:
        ex = self.ex
        busy = ex is not None and not (ex.resp_done and ex.req_done)
        if ex is not None and not ex.resp_done:
            out.append(ResponseEnded(ex.id, self.id, "client_closed", detail or "client closed the connection", ex.reused,
                                     response_started=ex.resp_started))
        if self.up is not None:
            out.append(CloseUpstream(self.id, self.gen, abort=busy))
            self.up = None
        out.append(ConnClosed(self.id, "client", idle=not busy, detail=detail))
        self._close_client(out, abort=False)

    def _close_client(self, out: list[Any], abort: bool) -> None:
        if not self.closed:
            self.closed = True
            out.append(CloseClient(self.id, abort))

    def _abort_client(self, out: list[Any]) -> None:
        ex = self.ex
        if ex is not None and not ex.resp_done:
            ex.resp_done = True
            out.append(ResponseEnded(ex.id, self.id, "bad_response", "response could not be relayed to the client", ex.reused,
                                     response_started=ex.resp_started))
        if self.up is not None:
            out.append(CloseUpstream(self.id, self.gen, abort=True))
            self.up = None
        self._close_client(out, abort=True)

    # -- upstream side ----------------------------------------------------------------
    def upstream_data(self, gen: int, data: bytes, out: list[Any]) -> None:
        """Bytes from upstream connection ``gen`` (``b""``: it closed)."""
        if self.closed or self.up is None or gen != self.gen:
            return
        if not data:
            self.up_eof = True
        try:
            self.up.receive_data(data)
        except RuntimeError:
            return
        self._pump_upstream(out)

    def upstream_failed(self, gen: int, detail: str, out: list[Any]) -> None:
        """Upstream connection ``gen`` failed; ``detail``: one line for the 502
        body and the capture."""
        if self.closed or gen != self.gen or self.up is None:
            return
        self.up = None
        ex = self.ex
        if ex is None or (ex.resp_done and ex.req_done):
            out.append(ConnClosed(self.id, "upstream", idle=True, detail=detail))
            return
        if ex.resp_done:
            ex.forward = False
            return
        if not ex.resp_started:
            self._bad_gateway(ex, f"upstream {self._origin().origin} unreachable: {detail}", "upstream_failed", out)
        else:
            self._flush_rewriter(ex, out)
            out.append(ResponseEnded(ex.id, self.id, "upstream_failed", detail, ex.reused))
            self._close_client(out, abort=True)

    def _bad_gateway(self, ex: ExchangeState, detail: str, how: str, out: list[Any]) -> None:
        self._refuse(ex, 502, b"Bad Gateway", detail, how, out)

    def _refuse(self, ex: ExchangeState, status: int, reason: bytes, detail: str, how: str, out: list[Any]) -> None:
        """Answer the exchange from the tap itself (502 upstream failure, 403
        refused Host), once the request body is read so the capture keeps it."""
        ex.forward = False
        if not ex.req_done:
            ex.pending_502 = (status, reason, detail, how)
            return
        ok = self.client.our_state is h11.SEND_RESPONSE
        if ok:
            head, body, end = tap_response(status, reason, f"mcptap: {detail}\n")
            ok = self._send_client(head, out)
            ok = ok and self._send_client(body, out) and self._send_client(end, out)
        ex.resp_done = True
        out.append(ResponseEnded(ex.id, self.id, how, detail, ex.reused, sent_502=ok, response_started=False))
        self._close_client(out, abort=not ok)

    def _pump_upstream(self, out: list[Any]) -> None:
        while self.up is not None and not self.closed:
            up = self.up
            try:
                ev = up.next_event()
            except h11.RemoteProtocolError as exc:
                self._upstream_error(str(exc), out)
                return
            if ev is h11.NEED_DATA or ev is h11.PAUSED:
                return
            ex = self.ex
            if isinstance(ev, h11.Data):
                if ex is None:
                    continue
                data = bytes(ev.data)
                out.append(ResponseBody(ex.id, self.id, data))
                if ex.oauth is not None and ex.oauth.holding_response:
                    for e in ex.oauth.response_data(data, out):
                        self._send_client(e, out)
                    continue
                fwd = ex.rewriter.feed(data) if ex.rewriter is not None else data
                self._note_rewrites(ex, out)
                if fwd:
                    self._send_client(h11.Data(data=fwd), out)
            elif isinstance(ev, h11.Response) or isinstance(ev, h11.InformationalResponse):
                if ex is None:
                    continue
                self._on_response(ex, ev, isinstance(ev, h11.InformationalResponse), out)
            elif isinstance(ev, h11.EndOfMessage):
                if ex is None:
                    continue
                self._flush_rewriter(ex, out)
                if ex.oauth is not None and ex.oauth.holding_response:
                    for e in ex.oauth.release_response(out, rewrite=True):
                        self._send_client(e, out)
                if self._send_client(h11.EndOfMessage(headers=strip_hop(ev.headers.raw_items())), out):
                    ex.resp_done = True
                    out.append(ResponseEnded(ex.id, self.id, "complete", reused=ex.reused))
                    self._cycle(out)
            elif isinstance(ev, h11.ConnectionClosed):
                gen = self.gen
                self.up = None
                out.append(CloseUpstream(self.id, gen))
                if ex is not None and not ex.resp_done:
                    self._upstream_eof_before_response(ex, "", out)
                else:
                    out.append(ConnClosed(self.id, "upstream", idle=True))
                return

    def _on_response(self, ex: ExchangeState, ev: Any, informational: bool, out: list[Any]) -> None:
        raw = list(ev.headers.raw_items())
        headers = strip_hop(raw)
        out.append(ResponseStarted(ex.id, self.id, ev.status_code, ev.reason.decode("latin-1"), raw, informational))
        if informational:
            if ev.status_code != 101:
                self._send_client(h11.InformationalResponse(status_code=ev.status_code, headers=headers, reason=ev.reason), out)
            return
        ex.resp_started = True
        relay = self.relay
        if relay.rewrite_endpoint and wants_endpoint_rewrite(ex.method, ev.status_code, raw):
            ex.rewriter = EndpointRewriter(endpoint_rewrite_fn(relay.upstream, ex.host_in or relay.listen_authority))
        if ex.oauth is not None:
            for e in ex.oauth.response_head(ev, headers, out):
                self._send_client(e, out)
            return
        self._send_client(h11.Response(status_code=ev.status_code, headers=headers, reason=ev.reason), out)

    def _origin(self) -> Upstream:
        front = self.relay.auth
        return front.origins[self.up_origin] if front is not None and self.up_origin else self.relay.upstream

    def _note_rewrites(self, ex: ExchangeState, out: list[Any]) -> None:
        rw = ex.rewriter
        if rw is not None and len(rw.rewrites) > ex.rewrites_seen:
            for orig, new in rw.rewrites[ex.rewrites_seen:]:
                out.append(EndpointRewritten(ex.id, self.id, orig, new))
            ex.rewrites_seen = len(rw.rewrites)

    def _flush_rewriter(self, ex: ExchangeState, out: list[Any]) -> None:
        if ex.rewriter is not None:
            rest = ex.rewriter.flush()
            self._note_rewrites(ex, out)
            ex.rewriter = None
            if rest and self.client.our_state is h11.SEND_BODY:
                self._send_client(h11.Data(data=rest), out)

    def _upstream_error(self, detail: str, out: list[Any]) -> None:
        ex = self.ex
        gen = self.gen
        eof = self.up_eof
        self.up = None
        out.append(CloseUpstream(self.id, gen, abort=not eof))
        if ex is None or ex.resp_done:
            out.append(ConnClosed(self.id, "upstream", idle=True, detail=detail))
            return
        if not ex.resp_started:
            if eof:
                self._upstream_eof_before_response(ex, detail, out)
            else:
                self._bad_gateway(ex, f"invalid HTTP response from upstream {self._origin().origin}: {detail}",
                                  "bad_response", out)
            return
        # mid-body: pass on what was held, then break the client connection the same way
        self._flush_rewriter(ex, out)
        out.append(ResponseEnded(ex.id, self.id, "upstream_closed" if eof else "bad_response", detail, ex.reused))
        self._close_client(out, abort=True)

    def _upstream_eof_before_response(self, ex: ExchangeState, detail: str, out: list[Any]) -> None:
        """The upstream closed after the request, before any response byte: the
        client connection is closed too (what a direct client would have seen)."""
        out.append(ResponseEnded(ex.id, self.id, "upstream_closed", detail or "upstream closed the connection before responding",
                                 ex.reused, response_started=False))
        self._close_client(out, abort=True)

    # -- keep-alive cycles ------------------------------------------------------------
    def _cycle(self, out: list[Any]) -> None:
        ex = self.ex
        if ex is None or not (ex.req_done and ex.resp_done):
            return
        up = self.up
        if up is not None:
            if up.our_state is h11.DONE and up.their_state is h11.DONE:
                up.start_next_cycle()
                self.up_cycles += 1
            else:
                out.append(CloseUpstream(self.id, self.gen))
                self.up = None
        cl = self.client
        if cl.our_state is h11.DONE and cl.their_state is h11.DONE:
            cl.start_next_cycle()
            self.ex = None
            self._pump_client(out)
        elif cl.our_state is h11.MUST_CLOSE or cl.their_state is h11.MUST_CLOSE or cl.our_state is h11.CLOSED:
            self.ex = None
            self._close_client(out, abort=False)

    # -- end ---------------------------------------------------------------------------
    def shutdown(self, out: list[Any]) -> None:
        """The tap stops: end the open exchange (``how="tap_stopped"``), close
        both connections."""
        ex = self.ex
        busy = ex is not None and not (ex.resp_done and ex.req_done)
        if ex is not None and not ex.resp_done:
            out.append(ResponseEnded(ex.id, self.id, "tap_stopped", "mcptap stopped during the exchange", ex.reused,
                                     response_started=ex.resp_started))
        if self.up is not None:
            out.append(CloseUpstream(self.id, self.gen, abort=busy))
            self.up = None
        out.append(ConnClosed(self.id, "tap", idle=not busy))
        self._close_client(out, abort=busy)


def _host_name(host: str | None) -> str:
    """The name part of a Host header value, lower-case, brackets kept for IPv6."""
    if not host:
        return ""
    h = host.strip().lower()
    if h.startswith("["):
        return h[: h.find("]") + 1] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h
