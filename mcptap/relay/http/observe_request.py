"""POST and other request bodies, and the transport facts of a framed message
(pure; part of ``HttpObserver``, relay/http/observe.py, whose module doc tells
what the observer records).

A POST body is decoded (``content-encoding``: gzip, deflate; else kept as relayed,
a ``request_body`` record with ``undecoded``), parsed and framed c2s for the
annotator, except where it is no MCP traffic: a body that is not JSON-RPC, or one
mcptap cannot decode, sent off the MCP endpoint is plain HTTP (``plain: true``).
A body of another method is kept as a ``request_body`` record. An ``initialize``
without a session header waits for its response head (``deferred``).
"""

from __future__ import annotations

from typing import Any

from mcptap.capture.format import encode_bytes
from mcptap.model import UNPARSED, Direction, Finding
from mcptap.protocol.http_fields import header
from mcptap.protocol.http_judge import HttpJudge, body_facts
from mcptap.protocol.skeleton import parse_message
from mcptap.relay.http.credentials import record_target
from mcptap.relay.http.observe_auth import scrub_body
from mcptap.relay.http.observe_gap import GapObserver
from mcptap.relay.http.observe_state import ObservedExchange, decode_whole

C2S = Direction.C2S
#: body kinds (http_judge.body_facts) of a POST body that carries no JSON-RPC message
NOT_RPC = frozenset({"invalid", "non_json"})


class RequestObserver(GapObserver):
    """The request-body part of ``HttpObserver`` (module doc); the attributes are the observer's."""

    judge: HttpJudge

    def _target(self, target: str) -> str:
        return record_target(target, self.record_secrets)

    def _revision(self, session: Any) -> str | None:
        st = self.rec.annotator.sessions().get(session)
        return st.revision if st is not None else None

    def _transport(self, e: ObservedExchange, **extra: Any) -> dict[str, Any]:
        d: dict[str, Any] = {"exchange": e.id, "conn": e.conn, "method": e.method, "path": self._target(e.target), "stream": e.stream}
        if e.facts.status is not None:
            d["status"] = e.facts.status
        if e.assigned is not None:
            d["session_assigned"] = e.assigned
        if e.from_response:
            d["session_from_response"] = True     # an initialize sent without a session id: its answer named the session
        if e.refused:
            d["refused"] = e.refused              # never reached the server: no part in its session's lifecycle
        d.update(extra)
        return d

    def _request_body(self, e: ObservedExchange) -> None:
        if e.req_gap and e.body:
            self._plain_body(e, e.body.take(), gap=True)     # its part is no message: a hole may be in it
        if e.method != "POST" and e.body:
            # not a JSON-RPC message, but forwarded: the capture keeps its bytes too
            self._plain_body(e, e.body.take())
        if e.method != "POST" or not e.body:
            return
        raw = e.body.take()
        body, why = decode_whole((header(e.facts.req_headers, "content-encoding") or "").strip().lower(), raw)
        if body is None:
            self._undecoded_request(e, raw, why or "")
            return
        value, _, odd = parse_message(body)
        facts = e.facts
        facts.body_kinds, facts.methods, facts.meta_version = body_facts(value)
        if not odd and not facts.legacy and not self._mcp_path(e.target) and all(k in NOT_RPC for k in facts.body_kinds):
            # a POST off the MCP endpoint that is not JSON-RPC (a form, a registration, a webhook): HTTP, never judged as JSON-RPC
            e.plain = True
            facts.body_kinds = facts.methods = ()
            self._plain_body(e, body)
            return
        if odd:
            value = UNPARSED     # the recorder parses it again and flags it (jsonrpc.non_finite_number, jsonrpc.lone_surrogate)
        facts.revision = self._revision(facts.session)
        fs = self.judge.request(e.id, facts)
        if facts.is_initialize and facts.session is None and not facts.legacy:
            e.deferred = (body, value, fs)
            return
        self._frame_c2s(e, body, value, fs, e.req_end_t)

    def _undecoded_request(self, e: ObservedExchange, raw: bytes, why: str) -> None:
        """A POST body mcptap could not decode: kept as relayed (a ``request_body`` record with
        ``content_encoding`` and ``undecoded``), judged without its JSON-RPC content."""
        facts = e.facts
        enc = (header(facts.req_headers, "content-encoding") or "").strip().lower()
        if not facts.legacy and not self._mcp_path(e.target):
            e.plain = True      # off the MCP endpoint, content unknown: HTTP, as a body that is not JSON-RPC (no MCP rule)
            self._plain_body(e, raw, undecoded=enc, why=why)
            return
        facts.revision = self._revision(facts.session)
        self._plain_body(e, raw, undecoded=enc, why=why, fs=self.judge.request_undecoded(e.id, facts, why))

    def _plain_body(self, e: ObservedExchange, body: bytes, gap: bool = False, undecoded: str | None = None, why: str = "",
                    fs: list[Finding] | None = None) -> None:
        fields: dict[str, Any] = {"event": "request_body", "exchange": e.id, "conn": e.conn}
        if undecoded is not None:
            fields["content_encoding"], fields["undecoded"] = undecoded, why
        # a POST body mcptap could not decode is a message's bytes, stored as sent like messages (docs/redaction.md)
        encode_bytes(body if self.record_secrets or undecoded is not None else scrub_body(body, e.facts.req_headers), "body", fields)
        if gap:
            fields["gap"] = True
        if e.plain:
            fields["plain"] = True      # HTTP, not MCP: check --full judges its exchange so too
        self.rec.http(findings=fs or [], **fields)

    def _mcp_path(self, target: str) -> bool:
        return target.partition("?")[0].rstrip("/") == self.upstream.path.rstrip("/")

    def _frame_c2s(self, e: ObservedExchange, body: bytes, value: Any, fs: list[Finding], t: int) -> None:
        self.rec.frame(C2S, body, session=e.session, transport=self._transport(e), extra=fs, value=value, t_us=t)
