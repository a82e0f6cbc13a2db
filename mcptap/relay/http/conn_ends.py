"""The state of one relayed client connection and the ways it ends (pure,
sans-IO, h11): answers from the tap itself (400, 403, 502), the client or the
upstream going away or sending garbage, tap shutdown. ``ConnRelay``
(:mod:`mcptap.relay.http.conn`) adds the request/response pumps on top.

Methods append commands and facts (:mod:`mcptap.relay.http.events`) to ``out``
in execution order and never raise on peer input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h11

from mcptap.protocol.http_rules import INVALID_FROM_CLIENT, INVALID_MID_EXCHANGE
from mcptap.records.events import TAP_REFUSALS
from mcptap.relay.http import auth as oauth
from mcptap.relay.http import h11_fast
from mcptap.relay.http.events import (
    CloseClient,
    CloseUpstream,
    ConnClosed,
    EndpointRewritten,
    RequestStarted,
    ResponseEnded,
    SendClient,
    Upstream,
)
from mcptap.relay.http.exchange import MAX_HEAD, ExchangeState, RelaySettings, tap_response


class ConnEnds:
    """One client connection's state (see ``ConnRelay``) and how it ends."""

    def __init__(self, relay: RelaySettings, cid: int) -> None:
        self.relay = relay
        self.id = cid
        self.client = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.up: h11.Connection | None = None
        self.up_origin = 0      # index into relay.auth.origins (0: the upstream)
        self.gen = 0
        self.up_cycles = 0
        self.up_eof = False
        self._client_eof = False        # the client closed its side (the last client_data was b"")
        self.ex: ExchangeState | None = None
        self.closed = False
        #: (front, Host, front.at(Host)) of the last request: the OAuth view for that Host
        self._view: tuple[oauth.AuthFront, str | None, oauth.AuthFront] | None = None

    def _send_client(self, ev: Any, out: list[Any]) -> bool:
        try:
            data = h11_fast.send(self.client, ev)
        except h11.LocalProtocolError:
            self._abort_client(out)
            return False
        if data:
            out.append(SendClient(self.id, data))
        return True

    def _send_client_fast(self, send: Callable[[h11.Connection, Any], bytes], arg: Any, out: list[Any]) -> bool:
        """``_send_client`` of ``h11.Data(data=arg)`` or of the parsed response head ``arg`` by
        ``h11_fast.send_data`` / ``send_response`` (the same bytes and errors as ``self.client.send``)."""
        try:
            sent = send(self.client, arg)
        except h11.LocalProtocolError:
            self._abort_client(out)
            return False
        if sent:
            out.append(SendClient(self.id, sent))
        return True

    def _client_error(self, detail: str, out: list[Any]) -> None:
        """Unparseable request bytes: answer 400 when possible, then close."""
        ex = self.ex
        if ex is not None and not ex.resp_done:
            out.append(ResponseEnded(ex.id, self.id, "client_closed", INVALID_MID_EXCHANGE + detail, ex.reused,
                                     response_started=ex.resp_started))
            if self.up is not None:
                out.append(CloseUpstream(self.id, self.gen, abort=True))
                self.up = None
        if self.client.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            for ev in tap_response(400, b"Bad Request", f"mcptap: invalid HTTP request: {detail}\n"):
                self._send_client(ev, out)
        out.append(ConnClosed(self.id, "client", idle=ex is None, detail=INVALID_FROM_CLIENT + detail))
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

    def _bad_gateway(self, ex: ExchangeState, detail: str, how: str, out: list[Any]) -> None:
        self._refuse(ex, 502, b"Bad Gateway", detail, how, out)

    def _tap_refuses(self, ex: ExchangeState, how: str, detail: str, out: list[Any]) -> None:
        """Refuse the exchange without forwarding it: ``how`` is a key of
        ``records.events.TAP_REFUSALS`` (its status and reason; a new refusal is added
        there, so every reader of captures knows the request never reached the server)."""
        status, reason = TAP_REFUSALS[how]
        for ev in reversed(out):        # its head, just appended: the observer learns of the refusal before the body
            if type(ev) is RequestStarted and ev.exchange == ex.id:
                ev.refused = how
                break
        self._refuse(ex, status, reason.encode("ascii"), detail, how, out)

    def _refuse(self, ex: ExchangeState, status: int, reason: bytes, detail: str, how: str, out: list[Any]) -> None:
        """Answer the exchange from the tap itself (502 upstream failure, 403
        refused Host), once the request body is read so the capture keeps it;
        a request whose head alone is refused (``request_rejected``: its
        framing may be ambiguous, so its body has no trustworthy end) at once,
        and the connection closes (RFC 9112 §6.1: MUST close)."""
        ex.forward = False
        if not ex.req_done and how != "request_rejected":
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
