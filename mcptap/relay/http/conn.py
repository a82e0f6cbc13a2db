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
way (those endings are in ``conn_ends.py``; the upstream side is in
``conn_upstream.py``). Settings and exchange ids come from the owning
``HttpRelay`` (read when needed), which drops the connection once ``closed`` is set.
"""

from __future__ import annotations

from typing import Any

import h11

from mcptap.relay.http import auth as oauth
from mcptap.relay.http import h11_fast, heads, passbody
from mcptap.relay.http.conn_auth import AuthExchange
from mcptap.relay.http.conn_upstream import PASS_FROM, ConnUpstream
from mcptap.relay.http.events import (
    AuthRewritten,
    CloseUpstream,
    OpenUpstream,
    RequestBody,
    RequestEnded,
    RequestStarted,
    ResponseStarted,
    SendUpstream,
)
from mcptap.relay.http.exchange import MAX_HEAD, ExchangeState, peer_error
from mcptap.relay.http.guard import host_name, origin_form, request_problem, shown_host
from mcptap.relay.http.rewrite import request_host, strip_hop, upstream_headers

#: ``h11.Connection.trailing_data`` with nothing buffered and no close seen
_NOTHING = (b"", False)


class ConnRelay(ConnUpstream):
    """One client connection and its upstream connection (see module doc).

    ``id``: the conn id in every command and fact; ``gen``: the current
    upstream connection's generation (commands for older ones are stale)."""

    # -- client side ------------------------------------------------------------------
    def client_data(self, data: bytes, out: list[Any]) -> None:
        """Bytes from the client (``b""``: the client closed its side)."""
        if self.closed:
            return
        client = self.client
        ex = self.ex
        if ex is not None and len(data) >= PASS_FROM:
            rest = passbody.pass_body(client, data, lambda b, o: self._request_data(ex, b, o), lambda: not self.closed,
                                      self._pump_client, out)
            if rest is None:
                return
            data = rest
        if data and client.their_state is h11.IDLE and client.trailing_data == _NOTHING and data[:1] in b"\r\n":
            # RFC 9112 §2.2: empty lines before a request line are ignored (h11 refuses them): a
            # client that sent only those and left sent nothing, not invalid HTTP
            data = data.lstrip(b"\r\n")
            if not data:
                return
        self._client_eof = not data
        try:
            client.receive_data(data)
        except RuntimeError:
            return
        self._pump_client(out)

    def _pump_client(self, out: list[Any]) -> None:
        # dispatch on the exact event type (h11's event classes are final): cheaper than isinstance chains
        client = self.client
        while not self.closed:
            try:
                ev: Any = h11_fast.next_body(client)    # a body's Data or end without h11's full state pass
                if ev is None:
                    ev = h11_fast.next_head(client)     # next_event; a request head without h11's full state pass
            except h11.RemoteProtocolError as exc:
                if self._client_eof and self.ex is not None and not self.ex.req_done:
                    # the client went away inside its request body: a cut, not invalid bytes (nothing to answer)
                    self._client_gone(peer_error(exc, self.relay.record_secrets), out)
                else:
                    self._client_error(peer_error(exc, self.relay.record_secrets), out)
                return
            t = type(ev)
            if t is h11.Data:
                ex = self.ex
                if ex is not None:
                    self._request_data(ex, bytes(ev.data), out)
            elif t is h11.Request:
                self._on_request(ev, out)
            elif t is h11.EndOfMessage:
                ex = self.ex
                if ex is not None:
                    ex.req_done = True
                    out.append(RequestEnded(ex.id, self.id))
                    if ex.oauth is not None and ex.oauth.holding_request:
                        for e in ex.oauth.release_request(out, rewrite=True):
                            self._send_up(e, out)
                    if ex.forward:
                        self._send_up(heads.end(strip_hop(ev.headers.raw_items()) if ev.headers else []), out)
                    elif ex.pending_502 is not None:
                        status, reason, detail, how = ex.pending_502
                        ex.pending_502 = None
                        self._refuse(ex, status, reason, detail, how, out)
                        return
                    if not ex.resp_done and client.trailing_data == _NOTHING:
                        # request complete, response not: with nothing buffered and no close
                        # seen, next_event could only say NEED_DATA (a call saved per exchange)
                        return
                self._cycle(out)
            elif t is h11.ConnectionClosed:
                self._client_gone("", out)
                return
            else:           # NEED_DATA, PAUSED
                return

    def _on_request(self, ev: h11.Request, out: list[Any]) -> None:
        raw = ev.headers.raw_items()
        ex = ExchangeState(self.relay.next_exchange_id(), bytes(ev.method), request_host(raw))
        self.ex = ex
        problem = request_problem(raw, bytes(ev.http_version), bytes(ev.target), bytes(ev.method), self.relay.record_secrets)
        if problem is not None:
            # never forwarded: the upstream could frame it differently from the tap (smuggling)
            out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                      ev.http_version.decode("latin-1"), raw, False, False))
            self._tap_refuses(ex, "request_rejected", problem, out)
            return
        allowed = self.relay.allowed_hosts
        if allowed is not None and host_name(ex.host_in) not in allowed:
            # DNS rebinding: a web page whose name resolves to 127.0.0.1 must not reach the
            # upstream through the tap (the tap rewrites Host, hiding the page's name from it)
            out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                      ev.http_version.decode("latin-1"), raw, False, False))
            host = ex.host_in
            named = f"Host {shown_host(host, self.relay.record_secrets)!r} is not a loopback name" if host is not None else "no Host field (HTTP/1.0)"
            self._tap_refuses(ex, "host_rejected", f"{named}; refused (DNS rebinding protection; --allow-remote lifts it)", out)
            return
        upstream, origin, kind = self.relay.upstream, 0, ""
        target = origin_form(ev.target)     # the upstream sees one authority: the Host the tap sets
        front = self.relay.auth
        if front is not None:
            view = self._view
            if view is None or view[0] is not front or view[1] != ex.host_in:
                # one view per client Host (views share the front's state): not rebuilt per request
                view = self._view = (front, ex.host_in, front.at(ex.host_in))
            ex.oauth = x = AuthExchange.plan(view[2], ex.id, self.id, target, raw, upstream.path, self.relay.record_secrets)
            upstream, origin, kind = x.upstream, x.origin, x.recorded_kind
            refused = x.refused
            if refused is not None:
                out.append(RequestStarted(ex.id, self.id, ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                                          ev.http_version.decode("latin-1"), raw, False, False, oauth.AS))
                if x.notes:
                    out.append(AuthRewritten(ex.id, self.id, "upstream", "", "", x.notes))
                self._tap_refuses(ex, "auth_not_fronted", refused, out)
                return
        authority = upstream.authority
        up_headers, rewritten = upstream_headers(raw, authority, self.relay.keep_host)
        mine = self.relay.upstream
        if origin == 0:     # --upstream's query and user info, sent as a reverse proxy does (recorded: the client's request)
            if ex.oauth is None or ex.oauth.kind == oauth.MCP:      # credentials for the MCP URL, not its OAuth server's
                mine.authorize(up_headers, target)
            if ex.oauth is None:
                target = mine.target(target)
            elif ex.oauth.kind == oauth.MCP:
                ex.oauth.target = mine.target(ex.oauth.target)
        # fields from h11's parser plus a Host value checked once: built without re-validation (heads.py)
        parsed = heads.valid_value(authority.encode("ascii"))
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
            for e in ex.oauth.request_head(ev.method, up_headers, raw, out, parsed=parsed):
                self._send_up(e, out)
            if ex.oauth.holding_request and self.client.client_is_waiting_for_100_continue:
                # the head waits for the whole form (resource mapped back): the client waits for a 100 that the
                # upstream cannot send; the tap sends it (and the held head goes without Expect: conn_auth)
                out.append(ResponseStarted(ex.id, self.id, 100, "Continue", [], informational=True, tap=True))
                self._send_client(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"), out)
            return
        self._send_up(heads.request(ev.method, target, up_headers) if parsed
                      else h11.Request(method=ev.method, target=target, headers=up_headers), out)

    def _request_data(self, ex: ExchangeState, data: bytes, out: list[Any]) -> None:
        out.append(RequestBody(ex.id, self.id, data))
        if ex.oauth is not None and ex.oauth.holding_request:
            for e in ex.oauth.request_data(data, out):
                self._send_up(e, out)
        elif not ex.forward:
            return
        elif len(data) < PASS_FROM or self.up is None:
            self._send_up_data(data, out)
        else:
            # the framing and the body as separate writes (a vectored send), as _response_data
            try:
                pieces = passbody.framed(self.up, data)
            except h11.LocalProtocolError:
                ex.forward = False          # as _send_up: the upstream already answered and closed
                return
            cid, gen = self.id, self.gen
            out.extend([SendUpstream(cid, gen, p) for p in pieces])

    def _send_up(self, ev: Any, out: list[Any]) -> None:
        ex = self.ex
        if self.up is None:
            if ex is not None:
                ex.forward = False
            return
        try:
            data = h11_fast.send(self.up, ev)
        except h11.LocalProtocolError:
            # the upstream already answered and closed (early response): stop forwarding the body
            if ex is not None:
                ex.forward = False
            return
        if data:
            out.append(SendUpstream(self.id, self.gen, data))

    def _send_up_data(self, data: bytes, out: list[Any]) -> None:
        """``_send_up(h11.Data(data=data), out)`` by ``h11_fast.send_data``."""
        ex = self.ex
        if self.up is None:
            if ex is not None:
                ex.forward = False
            return
        try:
            sent = h11_fast.send_data(self.up, data)
        except h11.LocalProtocolError:
            if ex is not None:
                ex.forward = False
            return
        if sent:
            out.append(SendUpstream(self.id, self.gen, sent))

    # -- keep-alive cycles ------------------------------------------------------------
    def _cycle(self, out: list[Any]) -> None:
        ex = self.ex
        if ex is None or not (ex.req_done and ex.resp_done):
            return
        up = self.up
        if up is not None:
            if up.our_state is h11.DONE and up.their_state is h11.DONE:
                h11_fast.start_next_cycle(up)
                self.up_cycles += 1
            else:
                out.append(CloseUpstream(self.id, self.gen))
                self.up = None
        cl = self.client
        if cl.our_state is h11.DONE and cl.their_state is h11.DONE:
            h11_fast.start_next_cycle(cl)
            self.ex = None
            if cl.trailing_data != _NOTHING:       # a pipelined request or a close (else NEED_DATA)
                self._pump_client(out)
        elif cl.our_state is h11.MUST_CLOSE or cl.their_state is h11.MUST_CLOSE or cl.our_state is h11.CLOSED:
            self.ex = None
            self._close_client(out, abort=False)
