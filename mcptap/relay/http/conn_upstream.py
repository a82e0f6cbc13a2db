"""The upstream side of one relayed client connection (pure, sans-IO, h11):
bytes and failures from the upstream connection, the response head, body and
end passed on to the client (``ConnRelay``, :mod:`mcptap.relay.http.conn`,
adds the client side and the keep-alive cycles on top; see its module doc).

Methods append commands and facts (:mod:`mcptap.relay.http.events`) to ``out``
in execution order and never raise on peer input.
"""

from __future__ import annotations

from typing import Any

import h11

from mcptap.relay.http import h11_fast, heads, passbody
from mcptap.relay.http.conn_ends import ConnEnds
from mcptap.relay.http.endpoint import EndpointRewriter
from mcptap.relay.http.events import AuthRewritten, CloseUpstream, ConnClosed, ResponseBody, ResponseEnded, ResponseStarted, SendClient
from mcptap.relay.http.exchange import ExchangeState, peer_error
from mcptap.relay.http.rewrite import endpoint_rewrite_fn, location, strip_hop, wants_endpoint_rewrite

#: ``h11.Connection.trailing_data`` with nothing buffered and no close seen
_NOTHING = (b"", False)
#: ``trailing_data`` with only the CRLF that ends a chunk h11 has just returned
_CHUNK_END = (b"\r\n", False)
#: body pieces at least this large skip h11's parser copies and are sent apart from their framing (passbody.py);
#: smaller ones (a round trip's) are cheaper through h11 as before
PASS_FROM = 16 << 10


class ConnUpstream(ConnEnds):
    """The upstream side of a ``ConnRelay`` (see module doc)."""

    def _cycle(self, out: list[Any]) -> None:
        """Start the next keep-alive cycle once the exchange is done (``ConnRelay``)."""
        raise NotImplementedError

    # -- upstream side ----------------------------------------------------------------
    def upstream_data(self, gen: int, data: bytes, out: list[Any]) -> None:
        """Bytes from upstream connection ``gen`` (``b""``: it closed)."""
        if self.closed or self.up is None or gen != self.gen:
            return
        up = self.up
        if not data:
            self.up_eof = True
        else:
            ex = self.ex
            if ex is not None:
                if len(data) >= PASS_FROM:
                    rest = passbody.pass_body(up, data, lambda b, o: self._response_data(ex, b, o),
                                              lambda: not self.closed and self.up is up, self._pump_upstream, out)
                    if rest is None:
                        return
                    data = rest
                span = h11_fast.whole_chunk(up, data, 0)
                if span is not None:
                    rest = self._whole_chunks(ex, up, data, span, out)
                    if rest is None:
                        return
                    data = rest
        try:
            up.receive_data(data)
        except RuntimeError:
            return
        self._pump_upstream(out)

    def _whole_chunks(self, ex: ExchangeState, up: h11.Connection, data: bytes, span: tuple[int, int],
                      out: list[Any]) -> bytes | None:
        """The whole chunks ``data`` starts with (``span``: the first one's body,
        ``h11_fast.whole_chunk``) passed on past h11's receive buffer, as
        ``_pump_upstream`` passes each chunk's ``Data``; returns what h11 must
        still parse, or None when nothing is left (or the connection ended)."""
        n = len(data)
        while True:
            self._response_data(ex, data[span[0]:span[1]], out)
            if self.closed or self.up is not up:
                return None
            pos = span[1] + 2
            if pos == n:
                return None         # as _pump_upstream after a chunk's end with nothing more buffered
            nxt = h11_fast.whole_chunk(up, data, pos)
            if nxt is None:
                return data[pos:]
            span = nxt

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

    def _pump_upstream(self, out: list[Any]) -> None:
        while self.up is not None and not self.closed:
            up = self.up
            try:
                ev: Any = h11_fast.next_body(up)    # a body's Data or end without h11's full state pass
                if ev is None:
                    ev = h11_fast.next_head(up)     # next_event; a response head without h11's full state pass
            except h11.RemoteProtocolError as exc:
                self._upstream_error(peer_error(exc, self.relay.record_secrets), out)
                return
            t = type(ev)
            ex = self.ex
            if t is h11.Data:
                if ex is None:
                    continue
                self._response_data(ex, bytes(ev.data), out)
                if ev.chunk_end and self.up is up and up.trailing_data == _CHUNK_END:
                    # only the chunk's CRLF is left: next_event would discard it and say NEED_DATA;
                    # it is discarded with the next bytes instead (a call saved per SSE event)
                    return
            elif t is h11.Response or t is h11.InformationalResponse:
                if ex is None:
                    continue
                self._on_response(ex, ev, t is h11.InformationalResponse, out)
            elif t is h11.EndOfMessage:
                if ex is None:
                    continue
                self._flush_rewriter(ex, out)
                if ex.oauth is not None and ex.oauth.holding_response:
                    for e in ex.oauth.release_response(out, rewrite=True):
                        self._send_client(e, out)
                if self._send_client(heads.end(strip_hop(ev.headers.raw_items()) if ev.headers else []), out):
                    ex.resp_done = True
                    out.append(ResponseEnded(ex.id, self.id, "complete", reused=ex.reused))
                    self._cycle(out)
                up = self.up
                if up is not None and up.trailing_data == _NOTHING:
                    return          # next_event could only say NEED_DATA or PAUSED (a call saved)
            elif t is h11.ConnectionClosed:
                gen = self.gen
                self.up = None
                out.append(CloseUpstream(self.id, gen))
                if ex is not None and not ex.resp_done:
                    self._upstream_eof_before_response(ex, "", out)
                else:
                    out.append(ConnClosed(self.id, "upstream", idle=True))
                return
            else:           # NEED_DATA, PAUSED
                return

    def _response_data(self, ex: ExchangeState, data: bytes, out: list[Any]) -> None:
        out.append(ResponseBody(ex.id, self.id, data))
        if ex.oauth is not None and ex.oauth.holding_response:
            for e in ex.oauth.response_data(data, out):
                self._send_client(e, out)
            return
        rw = ex.rewriter
        if rw is not None:
            data = rw.feed(data)
            self._note_rewrites(ex, out)
        if len(data) >= PASS_FROM:
            # the framing and the body as separate writes (a vectored send): the body is never re-joined
            try:
                pieces = passbody.framed(self.client, data)
            except h11.LocalProtocolError:
                self._abort_client(out)
                return
            cid = self.id
            out.extend([SendClient(cid, p) for p in pieces])
        elif data:
            self._send_client_fast(h11_fast.send_data, data, out)

    def _on_response(self, ex: ExchangeState, ev: Any, informational: bool, out: list[Any]) -> None:
        raw = ev.headers.raw_items()
        headers = strip_hop(raw)
        out.append(ResponseStarted(ex.id, self.id, ev.status_code, ev.reason.decode("latin-1"), raw, informational))
        relay = self.relay
        if relay.rewrite_endpoint and ev.status_code != 101:
            # a 103 Early Hints' Link names URLs as the final response's does (preload, preconnect)
            headers, moved = location(ev.status_code, headers, relay.upstream, ex.host_in or relay.listen_authority)
            out.extend(AuthRewritten(ex.id, self.id, what, o, n) for what, o, n in moved)
        if informational:
            if ev.status_code != 101:
                self._send_client(heads.informational(ev.status_code, ev.reason, headers), out)
            return
        ex.resp_started = True
        if relay.rewrite_endpoint and wants_endpoint_rewrite(ex.method, ev.status_code, raw):
            ex.rewriter = EndpointRewriter(endpoint_rewrite_fn(relay.upstream, ex.host_in or relay.listen_authority))
        for head in ex.oauth.response_head(ev, headers, out) if ex.oauth is not None else [heads.passed(ev, headers)]:
            if head is ev:      # the head as h11 parsed it: not rebuilt and re-validated by h11's send (h11_fast)
                self._send_client_fast(h11_fast.send_response, ev, out)
            else:
                self._send_client(head, out)
