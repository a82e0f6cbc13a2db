"""HTTP- and SSE-layer judgement of exchanges, shared by the live HTTP tap
and by re-annotation of recorded ``http`` records (pure).

The live observer (relay/http/observe.py) and ``HttpReplay``
(protocol/http_replay.py) feed the same facts at the same points of an
exchange — request known, response head, end, connection closed — and get the
same findings, so ``mcptap check --full`` re-judges an old capture's HTTP
layer with today's rules instead of copying what was recorded.

``HttpJudge(annotator)``: ``request(ex_id, facts)`` (for a POST once its body
kinds are known), ``response(ex_id, facts, req_session)`` -> (findings,
session id the response assigns when it differs), ``end(ex_id, facts, End)``,
``conn_closed(side, idle, detail)``. Facts are ``http_rules.Exchange``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.model import Direction, Finding, Kind
from mcptap.protocol.codes import finding
from mcptap.protocol.http_rules import Exchange, HttpRules, ack_findings, end_findings, request_findings, response_findings
from mcptap.protocol.jsonrpc import classify
from mcptap.protocol.rules import is_modern
from mcptap.protocol.session_book import SessionBook

C2S = Direction.C2S
META_VERSION = "io.modelcontextprotocol/protocolVersion"


def body_facts(value: Any) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """What a POST body carries: (JSON-RPC kinds, methods, the 2026-07-28
    ``_meta`` protocol version of its first request that has one)."""
    kinds, methods, meta = [], [], None
    for item in (value if isinstance(value, list) else [value]):
        cls = classify(item)
        kinds.append(cls.kind.value)
        if cls.method:
            methods.append(cls.method)
        if cls.kind is Kind.REQUEST and meta is None and isinstance(item.get("params"), dict):
            m = item["params"].get("_meta")
            if isinstance(m, dict) and isinstance(m.get(META_VERSION), str):
                meta = m[META_VERSION]
    return tuple(kinds), tuple(methods), meta


@dataclass(slots=True)
class End:
    """How an exchange ended (relay ``ResponseEnded`` plus what the observer
    counted): ``how`` complete | upstream_closed | client_closed | tap_stopped
    | host_rejected | request_rejected (the tap answered 400) | upstream_failed | bad_response; ``sse``: the response was
    an event stream; ``event_ids``: SSE ids seen; ``ack_body``: the first bytes
    of an acknowledgement's body (for the finding's preview)."""

    how: str
    detail: str = ""
    response_started: bool = False
    reused: bool = False
    sent_502: bool = False
    sse: bool = False
    event_ids: list[str] = field(default_factory=list)
    response_bytes: int = 0
    ack_body: bytes = b""


class HttpJudge:
    """Cross-exchange HTTP rules of one capture (see module doc)."""

    def __init__(self, annotator: Any) -> None:
        self.annotator = annotator
        self.rules = HttpRules()
        self.book = SessionBook()

    def request(self, ex_id: int, facts: Exchange) -> list[Finding]:
        return request_findings(facts) + self.rules.on_request(ex_id, facts) + self.book.on_request(facts)

    def response(self, ex_id: int, facts: Exchange, req_session: Any) -> tuple[list[Finding], str | None]:
        fs, assigned = self.book.on_response(facts, req_session)
        fs += response_findings(facts)
        self.rules.on_response(ex_id, facts)
        return fs, assigned

    def end(self, ex_id: int, facts: Exchange, e: End) -> list[Finding]:
        ann = self.annotator
        fs: list[Finding] = []
        if e.how == "complete" and facts.is_ack:
            fs += ack_findings(facts, e.ack_body, e.response_bytes)
        # legacy HTTP+SSE answers on the GET stream: its POST status answers nothing
        if e.how == "complete" and facts.method == "POST" and not facts.legacy:
            fs += ann.http_rejected(ex_id, facts.status or 0)
        pend = [] if e.how == "tap_stopped" else [p for p in ann.pending() if p.exchange == ex_id and p.direction is C2S]
        if e.how == "upstream_closed" and e.response_started and e.sse:
            self.rules.stream_broken(ex_id, facts.session, e.event_ids, [p.id for p in pend])
        if e.how in ("host_rejected", "request_rejected", "upstream_failed", "bad_response") and not e.response_started:
            for p in pend:
                ann.transport_answered(p)   # the tap answered (403/502)
        if e.how == "client_closed" and e.sse:
            fs += [ann.transport_cancel(p, "the client closed its response stream (2026-07-28 HTTP cancellation)")
                   for p in pend if is_modern(p.revision)]
        fs += end_findings(facts, e.how, e.detail, response_started=e.response_started, reused=e.reused,
                           sent_502=e.sent_502, sse=e.sse, event_ids=e.event_ids, response_bytes=e.response_bytes,
                           pending=[(p.seq, p.id, is_modern(p.revision)) for p in pend])
        self.rules.on_end(ex_id, facts)
        return fs

    @staticmethod
    def conn_closed(side: str, idle: bool, detail: str | None) -> list[Finding]:
        if side == "upstream" and idle and not detail:
            return [finding("http.conn_closed_idle", "upstream closed an idle kept-alive connection (the tap opens a new one for the next request)")]
        return []
