"""From relay facts to capture records (pure; the recorder is passed in).

``HttpObserver.handle(items)`` takes the list ``HttpRelay`` returned (commands
and facts, after the transport executed the commands) and

* counts and digests forwarded bytes (``rec.forwarded``),
* writes ``http`` records: ``request``, ``response``, ``sse`` (events that carry
  no message: priming, comments, the legacy endpoint), ``end``, ``conn_close``,
* frames JSON-RPC payloads for the annotator (``rec.frame``): a POST body (c2s),
  an ``application/json`` response body or each SSE event's data (s2c), with
  ``transport = {exchange, conn, method, path, status, stream, sse}``,
* attaches ``http.*`` / ``sse.*`` findings from ``protocol/http_rules``.

Sessions (``relay/http/sessions.py``): the key is the ``Mcp-Session-Id``
request header, or for the legacy HTTP+SSE transport the endpoint's
``session_id``/``sessionId`` (else its path), or None (stateless traffic: one
logical client). An ``initialize`` POST without a session header is framed when
its response head arrives, under the session id that response assigns, so the
capture never needs a rename. Credentials in heads and targets are redacted by
``relay/http/credentials.py``; per-exchange state and body decoding live in
``relay/http/observe_state.py``, request bodies in ``relay/http/observe_request.py``.

``rec`` needs: ``clock()``, ``forwarded(dir, bytes)``, ``frame(dir, raw,
session=, transport=, extra=, value=, t_us=)``, ``record(type, findings=,
**fields)`` and ``annotator`` (``sessions()``, ``pending()``) — the
``mcptap.recorder.Recorder`` API.
"""

from __future__ import annotations

from typing import Any

from mcptap.capture.format import encode_bytes
from mcptap.model import UNPARSED, Direction, Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.http_fields import header
from mcptap.protocol.http_judge import End, HttpJudge
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.jsonparse import parse_json
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.credentials import headers_json
from mcptap.relay.http.observe_auth import AuthObserver, scrub_body, scrub_error_body
from mcptap.relay.http.observe_auth import response_findings as auth_findings
from mcptap.relay.http.observe_request import RequestObserver
from mcptap.relay.http.observe_state import ObservedExchange
from mcptap.relay.http.sessions import SessionKeys

C2S, S2C = Direction.C2S, Direction.S2C
ACK_BODY_KEEP = 256
#: 1xx responses recorded per exchange (then one with http.informational_flood; the rest are counted:
#: an upstream sending 100 Continue forever must not grow the capture without bound)
INFORMATIONAL_RECORDED = 20


class HttpObserver(RequestObserver):
    """Turns the facts of one ``HttpRelay`` into capture records.

    ``upstream``: the relay's Upstream; ``listen_authority``: the tap's
    ``host:port`` (for clients that send no Host); ``listen_scheme``: the
    scheme the client speaks (the tap listens plain ``http``; replay's legacy
    link observes its own requests to the server, ``https`` when the server's
    URL is), which legacy endpoints are resolved and keyed with;
    ``record_secrets``: store credentials in clear (default: stable
    placeholders, see ``mcptap/redact``).
    """

    def __init__(self, rec: Recorder, upstream: r.Upstream, listen_authority: str = "127.0.0.1",
                 record_secrets: bool = False, listen_scheme: str = "http") -> None:
        self.rec = rec
        self.upstream = upstream
        self.listen_authority = listen_authority
        self.listen_scheme = listen_scheme
        self.record_secrets = record_secrets
        self.judge = HttpJudge(rec.annotator, upstream.path if upstream.path not in ("", "/") else None, record_secrets)
        self._ex: dict[int, ObservedExchange] = {}
        self._sessions = SessionKeys(record_secrets)
        self._pending_rewrites: dict[int, list[tuple[str, str]]] = {}
        #: OAuth discovery and token exchanges: HTTP records, never JSON-RPC
        self._auth = AuthObserver(rec, self.headers_json, record_secrets)

    # -- dispatch ------------------------------------------------------------------------
    def handle(self, items: list[Any], flush: bool = True) -> None:
        """Record one relay batch; its records reach the capture with one write
        (``flush=False``: with the caller's ``rec.hold_flush = False;
        rec.flush()``, so that several batches take one write)."""
        rec = self.rec
        rec.hold_flush = True
        try:
            self._handle(items)
        finally:
            if flush:
                rec.hold_flush = False
                rec.flush()

    def _handle(self, items: list[Any]) -> None:
        for it in items:
            if type(it) is r.EndpointRewritten:
                self._pending_rewrites.setdefault(it.exchange, []).append((it.original, it.rewritten))
        auth = self._auth
        for it in items:
            t = type(it)
            if auth._ex and t is not r.SendClient and t is not r.SendUpstream and auth.owns(getattr(it, "exchange", -1)):
                auth.handle(it)
                continue
            if t is r.RequestStarted and it.auth:
                auth.started(it)
                continue
            if t is r.AuthRewritten:
                e = self._ex.get(it.exchange)
                if e is not None and it.what == "location":
                    e.location_sent = it.rewritten
                auth.rewritten(it, "mcp")
                continue
            if t is r.SendClient:
                self.rec.forwarded(S2C, it.data)
            elif t is r.SendUpstream:
                self.rec.forwarded(C2S, it.data)
            elif t is r.ResponseBody:
                self._response_body(it)
            elif t is r.RequestBody:
                e = self._ex.get(it.exchange)
                if e is not None:
                    e.body += it.data
                    e.req_bytes += len(it.data)
            elif t is r.RequestStarted:
                self._request_started(it)
            elif t is r.RequestEnded:
                self._request_ended(it)
            elif t is r.ResponseStarted:
                self._response_started(it)
            elif t is r.ResponseEnded:
                self._response_ended(it)
            elif t is r.ConnClosed:
                self._conn_closed(it)

    # -- helpers ---------------------------------------------------------------------------
    def headers_json(self, headers: list[tuple[bytes, bytes]]) -> list[list[str]]:
        """Headers for a record: str pairs, credentials redacted unless asked."""
        return headers_json(headers, self.record_secrets)

    # -- requests --------------------------------------------------------------------------
    def _request_started(self, it: r.RequestStarted) -> None:
        h = it.headers
        session, legacy = self._sessions.of_request(it.method, it.target, h)
        host = header(h, "host")
        facts = Exchange(it.method, it.target, h, session=session, legacy=legacy, refused=it.refused, clear=self.record_secrets)
        e = ObservedExchange(it.exchange, it.conn, it.method, it.target, host, facts, self.rec.clock())
        self._ex[it.exchange] = e
        fs: list[Finding] = []
        if it.method != "POST":
            facts.revision = self._revision(facts.session)
            fs = self.judge.request(e.id, facts)
        fields: dict[str, Any] = {"event": "request", "exchange": e.id, "conn": e.conn, "method": it.method,
                                  "target": self._target(it.target), "version": it.http_version, "headers": self.headers_json(h)}
        if facts.session is not None:
            fields["session"] = facts.session
        if it.reused:
            fields["reused_connection"] = True
        if it.host_rewritten:
            fields["host_rewritten"] = True
        if it.refused:
            e.refused = fields["refused"] = it.refused
        self.rec.http(findings=fs, **fields)

    def _request_ended(self, it: r.RequestEnded) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        e.req_end_t = self.rec.clock()
        e.req_ended = True
        self._request_body(e)
        if e.held_end is not None:
            self._finish(e, e.held_end)

    def _release_deferred(self, e: ObservedExchange, session: Any) -> None:
        if e.deferred is not None:
            body, value, fs = e.deferred
            e.deferred = None
            e.from_response = e.facts.session is None and session is not None
            e.facts.session = session
            self._frame_c2s(e, body, value, fs, e.req_end_t)

    # -- responses --------------------------------------------------------------------------
    def _response_started(self, it: r.ResponseStarted) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        fields: dict[str, Any] = {"event": "response", "exchange": e.id, "conn": e.conn, "status": it.status, "reason": it.reason,
                                  "headers": self.headers_json(it.headers), "latency_us": self.rec.clock() - e.t0}
        if it.informational:
            e.informational += 1
            if e.informational > INFORMATIONAL_RECORDED + 1:
                return          # counted: the final response record says how many were not recorded
            if it.tap:
                fields["tap"] = True
            fs = []
            if e.informational > INFORMATIONAL_RECORDED:
                fs = [finding("http.informational_flood", f"more than {INFORMATIONAL_RECORDED} 1xx responses before the final "
                              "one: the rest are counted, not recorded (the relay still forwards them)",
                              {"recorded": INFORMATIONAL_RECORDED + 1})]
            self.rec.http(informational=True, findings=fs, **fields)
            return
        if e.informational > INFORMATIONAL_RECORDED + 1:
            fields["informational_unrecorded"] = e.informational - INFORMATIONAL_RECORDED - 1
        facts = e.facts
        req_session = facts.session
        self._release_deferred(e, self._sessions.assigned(it.headers, facts.session))
        facts.status, facts.resp_headers = it.status, it.headers
        e.response_started = True
        fs, assigned = self.judge.response(e.id, facts, req_session)
        if e.plain:
            fs = []         # not an MCP exchange: the MCP transport rules do not apply
        if assigned is not None and req_session is not None:
            e.assigned = assigned      # the body's negotiation belongs to the new session
        fs += auth_findings(it.status, it.headers)
        e.start_body(it.headers)
        if facts.session is not None:
            fields["session"] = facts.session
        self.rec.http(findings=fs, **fields)

    def _response_body(self, it: r.ResponseBody) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        e.resp_bytes += len(it.data)
        e.chunks += 1
        data = e.feed(it.data)
        if data is None:
            return
        if e.mode == "sse" and e.parser is not None:
            self._sse_read(e, data)
        elif e.mode == "json" and not e.facts.is_ack and not e.facts.legacy:
            e.resp_body += data
        else:
            if len(e.resp_body) < ACK_BODY_KEEP:
                e.resp_body += data[:ACK_BODY_KEEP]
            e.keep(data)

    def _response_ended(self, it: r.ResponseEnded) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        if it.how == "complete" and not e.req_ended:
            # answered before the request body arrived (a 307, a 401 from auth middleware): the body still goes
            # upstream; the exchange ends when the request does, or with its connection (_conn_closed)
            e.held_end = it
            return
        self._finish(e, it)

    def _finish(self, e: ObservedExchange, it: r.ResponseEnded) -> None:
        del self._ex[e.id]
        self._release_deferred(e, e.session)
        fs: list[Finding] = []
        response_cut = False        # the client went away inside the answer (an event or a JSON body) the server was sending
        if e.parser is not None and not e.undecodable:
            tail = e.decode_tail(it.how == "complete")
            if tail:
                self._sse_read(e, tail)
            response_cut = self._sse_events(e, e.parser.receive_data(b""), client_closed=it.how == "client_closed")
        # after the last events: an endpoint event the stream's end completes was forwarded rewritten
        self._pending_rewrites.pop(e.id, None)
        facts = e.facts
        # the client went away inside the request body (RequestStarted came, RequestEnded never did)
        request_cut = (it.how == "client_closed" or e.held_end is not None) and not e.req_ended and e.req_bytes > 0
        if e.body:
            # the request never ended (the client went away mid-body): what it sent was forwarded, so the capture keeps it
            cut: dict[str, Any] = {"event": "request_body", "exchange": e.id, "conn": e.conn}
            encode_bytes(e.body.take(), "body", cut)
            self.rec.http(**cut)
        framed = e.mode == "json" and not facts.is_ack and not facts.legacy and not e.plain and e.resp_bytes and not e.resp_gap
        if framed and (body := e.json_body(it.how != "client_closed")):
            if it.how == "client_closed":
                # the client went away inside the body: its part is not the server's message
                cl = header(facts.resp_headers or [], "content-length")
                response_cut = e.resp_bytes < int(cl) if cl is not None and cl.isdigit() else parse_json(body)[0] is UNPARSED
            if not response_cut:
                if (facts.status or 0) >= 400 and not self.record_secrets:
                    # an error body's credentials (an OAuth error's refresh_token) are scrubbed whichever record holds it
                    body = scrub_error_body(body, facts.resp_headers or [])
                self.rec.frame(S2C, body, session=e.session, transport=self._transport(e))
        elif framed and it.how == "client_closed" and e.decoder is not None and not e.undecodable:
            response_cut = True     # the client went away inside a compressed body: not the server's message, nor a fault
        undecoded = e.undecoded if e.resp_bytes else None      # an empty body is no unread answer
        whole = e.kept.value()
        if e.kept and not e.resp_gap and not e.undecodable:
            self._kept_body(e)
        if e.undecodable and not e.resp_gap and (e.raw or e.raw_dropped):
            self.rec.http(**e.raw_record())     # what the client got, still encoded: the capture keeps it
        ack = b""
        if (facts.is_ack or facts.legacy and facts.method == "POST") and e.resp_body:
            # its credentials as placeholders, as the body's response_body record has them (scrubbed whole when kept
            # whole): the end record's ack_body and the finding quoting it (http.ack_body_not_empty) show the same bytes
            ack = whole or e.resp_body.value()
            ack = ack if self.record_secrets else scrub_body(ack, facts.resp_headers or [])
        fs += self.judge.end(e.id, facts, End(it.how, it.detail, it.response_started, it.reused, it.sent_502, e.mode == "sse",
                                             e.ids, e.resp_bytes, ack, e.req_bytes, request_cut,
                                             e.location_sent, response_cut, e.gap, undecoded))
        fields: dict[str, Any] = {"event": "end", "exchange": e.id, "conn": e.conn, "how": it.how,
                                  "request_bytes": e.req_bytes, "response_bytes": e.resp_bytes, "chunks": e.chunks,
                                  "duration_us": self.rec.clock() - e.t0}
        if e.events:
            fields["sse_events"] = e.events
        if it.detail:
            fields["detail"] = it.detail
        if it.sent_502:
            fields["sent_502"] = True
        if request_cut:
            fields["request_cut"] = True
        if response_cut:
            fields["response_cut"] = True
        if e.gap:
            fields["gap"] = True
        if undecoded is not None:
            fields["undecoded"] = undecoded
        if ack:
            fields["ack_body"] = ack[:ACK_BODY_KEEP].decode("utf-8", "replace")
        if e.session is not None:
            fields["session"] = e.session
        self.rec.http(findings=fs, **fields)

    def _kept_body(self, e: ObservedExchange) -> None:
        """A ``response_body`` record of a body that is no message (a refusal's text: observe_state.py),
        decoded, its credentials as placeholders (JSON members, form parameters) unless asked."""
        body = e.kept.take()
        kept = body if self.record_secrets else scrub_body(body, e.facts.resp_headers or [])
        fields: dict[str, Any] = {"event": "response_body", "exchange": e.id, "conn": e.conn}
        encode_bytes(kept, "body", fields)
        if e.kept_past:
            fields["truncated_from"] = len(body) + e.kept_past
        self.rec.http(**fields)

    def _conn_closed(self, it: r.ConnClosed) -> None:
        for e in [e for e in self._ex.values() if e.conn == it.conn and e.held_end is not None]:
            self._finish(e, e.held_end)         # its request never ended: what came of its body is kept (request_cut)
        self._auth.conn_closed(it.conn)
        fs = self.judge.conn_closed(it.side, it.idle, it.detail)
        fields: dict[str, Any] = {"event": "conn_close", "conn": it.conn, "side": it.side, "idle": it.idle}
        if it.detail:
            fields["detail"] = it.detail
        self.rec.http(findings=fs, **fields)
