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

from mcptap.model import Direction, Finding, Kind, Severity
from mcptap.protocol.codes import finding
from mcptap.protocol.content_coding import undecoded_code
from mcptap.protocol.excerpt import cut
from mcptap.protocol.http_fields import accepts, header
from mcptap.protocol.http_memory import HttpRules
from mcptap.protocol.http_rules import (
    DECODABLE,
    INVALID_FROM_CLIENT,
    Exchange,
    ack_findings,
    end_findings,
    legacy_body_findings,
    request_cut_findings,
    request_findings,
    response_findings,
)
from mcptap.protocol.jsonrpc import classify, show_id
from mcptap.protocol.pairing import BoundedMap
from mcptap.protocol.rules import is_modern
from mcptap.protocol.session_book import SessionBook
from mcptap.records.events import TAP_REFUSED

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
    counted): ``how`` complete | upstream_closed | client_closed | tap_stopped | gap (its end was not recorded)
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
    request_bytes: int | None = None    # request body bytes the client sent (None: not recorded)
    request_cut: bool = False           # the request never ended: the client went away inside its body
    location_sent: str | None = None    # the Location the tap gave the client when it rewrote the upstream's
    response_cut: bool = False          # the client went away inside the answer: an SSE event, or a JSON body (its part not framed)
    gap: bool = False                   # some of its relay facts were not recorded (a gap record): its answers may be in the hole
    undecoded: str | None = None        # why its response body could not be decoded (kept raw, not analysed): its answers may be in it


def undecoded_findings(facts: Exchange, why: str, pend: list[Any]) -> list[Finding]:
    """Findings on a response body mcptap kept raw, not analysed (``why``: the
    observer's reason): a coding it decodes that did not decode, and the
    requests ``pend`` whose answers may be in it (not judged unanswered)."""
    out: list[Finding] = []
    enc = (header(facts.resp_headers or [], "content-encoding") or "").strip().lower()
    code, kept = undecoded_code(why, enc, enc in DECODABLE)
    if code is not None:
        out.append(finding(code, f"{why}: {kept}", {"content_encoding": enc}))
    if pend:
        ids = ", ".join(f"#{p.seq} ({p.method}, id {show_id(p.id)})" for p in pend)
        out.append(finding("http.answer_undecoded", f"request {ids} was answered in a body mcptap could not decode "
                           f"({why}): its answer is not analysed and the request is not judged unanswered",
                           {"pending": [p.seq for p in pend]}))
    return out


#: end findings judged from the body bytes the tap counted: not for an exchange cut by a gap (its count lacks the hole's)
BODY_SIZE_CODES = frozenset({"http.body_shorter_than_content_length"})


class HttpJudge:
    """Cross-exchange HTTP rules of one capture (see module doc)."""

    def __init__(self, annotator: Any, endpoint: str | None = None, clear: bool = False) -> None:
        self.annotator = annotator
        # ``record --record-secrets``: the annotator's quotes of peer words (an HTTP error
        # body's) in clear, as the request facts' (``Exchange.clear``) and the fields they quote
        annotator.answers.clear = clear
        self.endpoint = endpoint or None
        self.rules = HttpRules()
        self.book = SessionBook()
        #: exchanges judged at their request and not ended yet (bounded: a damaged capture's never end)
        self._open = BoundedMap(1 << 16)

    def _get_rules_apply(self, facts: Exchange) -> bool:
        """GET-stream rules concern the MCP endpoint only, not /healthz or /."""
        return facts.method != "GET" or self.book.is_mcp_path(facts.target, self.endpoint)

    def request(self, ex_id: int, facts: Exchange) -> list[Finding]:
        """Findings on a request (head, and for a POST the kinds its body carries),
        and its place in the session's memory. None for one the tap refused itself
        (``facts.refused``): the server never saw its Accept, Content-Type, version
        or session header, nor does it count among the session's exchanges."""
        if facts.refused:
            return []
        self._open.add(ex_id, True)
        fs = request_findings(facts) + self.rules.on_request(ex_id, facts) + self.book.on_request(facts)
        if not self._get_rules_apply(facts):
            fs = [f for f in fs if not f.code.startswith("http.get_")]
        return fs

    def request_undecoded(self, ex_id: int, facts: Exchange, why: str) -> list[Finding]:
        """A POST whose body mcptap could not decode (``why``): judged with no
        body kinds known, plus ``http.content_decoding_failed`` for a coding
        mcptap decodes; an answer in its exchange that matches no request is
        then not blamed on the server (``Annotator.unread``)."""
        facts.body_kinds = facts.methods = ()
        if facts.refused:
            return []       # never reached the server: neither judged nor an unread answer's source
        self.annotator.unread.add(ex_id)
        fs = self.request(ex_id, facts)
        enc = (header(facts.req_headers, "content-encoding") or "").strip().lower()
        code, _ = undecoded_code(why, enc, enc in DECODABLE)
        if code is not None:     # a request body is kept whole, not analysed
            fs.append(finding(code, f"request: {why}: the body is stored as relayed, not analysed "
                              "(a server decoding it as labelled may fail too)", {"content_encoding": enc}))
        return fs

    def response(self, ex_id: int, facts: Exchange, req_session: Any) -> tuple[list[Finding], str | None]:
        fs, assigned = self.book.on_response(facts, req_session)
        fs += response_findings(facts)
        status = facts.status or 0
        if facts.method == "GET" and status == 400 and accepts(header(facts.req_headers, "accept"), "text/event-stream") \
                and (self.book.live(req_session) or not self.book.assigned_any()):
            fs.append(finding("http.get_stream_refused_not_405", "GET stream refused with 400 although the request was valid: "
                              "a server without a GET stream answers 405"))
        self.rules.on_response(ex_id, facts)
        if not self._get_rules_apply(facts):
            fs = [f for f in fs if not f.code.startswith("http.get_")]
        return fs, assigned

    def end(self, ex_id: int, facts: Exchange, e: End) -> list[Finding]:
        ann = self.annotator
        fs: list[Finding] = []
        if e.how == "complete" and facts.is_ack and not e.gap:
            fs += ack_findings(facts, e.ack_body, e.response_bytes)
        if e.how == "complete" and facts.legacy and not e.gap:
            fs += legacy_body_findings(facts, e.ack_body)
        # legacy HTTP+SSE answers on the GET stream: its POST status answers nothing
        if e.how == "complete" and facts.method == "POST" and not facts.legacy:
            fs += ann.answers.rejected(ex_id, facts.status or 0, ann.session, header(facts.resp_headers or [], "location"),
                                       facts.target.partition("#")[0], e.location_sent)
        pend = [] if e.how == "tap_stopped" else [p for p in ann.pending() if p.exchange == ex_id and p.direction is C2S]
        if e.gap:
            # mcptap lost part of this exchange: an answer, an event, body bytes may be in the hole, so
            # nothing is judged from what it lacks (the gap record says so); its requests are not the server's fault
            for p in pend:
                ann.transport_answered(p)
            pend = []
        if e.undecoded is not None:
            # the answers still owed may be in the bytes mcptap could not read, also when the tap stopped
            pend = [p for p in ann.pending() if p.direction is C2S and (p.exchange == ex_id or self._may_answer(facts, e, p))]
            fs += undecoded_findings(facts, e.undecoded, pend)
            for p in pend:
                ann.transport_answered(p)   # answered, or not, in bytes mcptap could not read: not the server's silence
            pend = []
        fs += self._session_rejected(ex_id, facts)
        if e.how == "upstream_closed" and not e.response_started and e.reused:
            for p in pend:
                ann.transport_answered(p)   # lost with the connection: a retry with the same id is a reuse, not a duplicate
        if e.how == "upstream_closed" and e.response_started and e.sse:
            self.rules.stream_broken(ex_id, facts.session, e.event_ids, [p.id for p in pend])
        if (e.how in TAP_REFUSED or e.how in ("upstream_failed", "bad_response")) and not e.response_started:
            for p in pend:
                ann.transport_answered(p)   # the tap answered (its own refusal, or 502)
        if e.how == "client_closed":
            if e.response_cut and not e.sse and not e.gap:
                fs.append(finding("http.client_closed_mid_response", f"the client closed the connection inside the response body, "
                                  f"{e.response_bytes} bytes of it received so far: the rest was never relayed (not judged as the server's data)",
                                  {"response_bytes": e.response_bytes}))
            fs += self._client_gone(ex_id, facts, pend, e)
            pend = [p for p in pend if not p.reported and not p.cancelled]
        fs += request_cut_findings(facts, e.how, e.request_bytes, e.request_cut)
        ends = end_findings(facts, e.how, e.detail, response_started=e.response_started, reused=e.reused,
                            sent_502=e.sent_502, sse=e.sse, event_ids=e.event_ids, response_bytes=e.response_bytes,
                            pending=[(p.seq, p.id, is_modern(p.revision)) for p in pend])
        fs += [f for f in ends if f.code not in BODY_SIZE_CODES] if e.gap else ends
        self.rules.on_end(ex_id, facts)
        self._open.d.pop(ex_id, None)
        ann.exchange_ended(ex_id)
        return fs

    def _may_answer(self, facts: Exchange, e: End, p: Any) -> bool:
        """Whether GET event stream ``facts`` may carry the answer to request
        ``p`` of another exchange: one of its session's, on HTTP+SSE every one
        (answers travel there; the session's POSTs are answered 202), else one
        whose own exchange ended without its answer (a Streamable HTTP server
        may answer on a resumed stream, 2025-11-25; an HTTP+SSE stream
        unreadable from its first byte hid its ``endpoint`` event, so neither
        it nor the POSTs have a session: theirs are scoped to their exchange)."""
        if facts.method != "GET" or not e.sse or p.reported:
            return False
        mine = p.session == facts.session or (facts.session is None and type(p.session) is tuple and p.session[0] == "exchange")
        return mine and (facts.legacy or p.exchange not in self._open.d)

    def _client_gone(self, ex_id: int, facts: Exchange, pend: list[Any], e: End) -> list[Finding]:
        """The client closed an exchange (carrying requests ``pend``).
        2026-07-28: closing the response stream is the cancellation, whether
        the answer would have been JSON or SSE, and whether or not its head had
        arrived. Before, a disconnect is not a cancellation; the requests it
        left (a POST's, or on legacy HTTP+SSE those its session's stream still
        owed) are abandoned by the client, reported here once, not as the
        server's failure to answer, when the server was still at work on that
        stream: the client cut the answer it was sending (``e.response_cut``:
        an SDK client stops at its event size limit), or it had sent messages
        on it since the request (progress, log lines: a client that gave up
        waiting). A stream the client left idle stays
        ``sse.stream_closed_without_response`` (the server may have hung)."""
        ann = self.annotator
        fs = [ann.transport_cancel(p, "the client closed its response stream (2026-07-28 HTTP cancellation)")
              for p in pend if is_modern(p.revision)]
        event_ids = e.event_ids if e.sse else []
        if facts.legacy:        # HTTP+SSE: the answers come on the session's GET stream, not on a POST's response
            if facts.method != "GET" or facts.session is None:
                return fs
            pend = [p for p in ann.pending() if p.direction is C2S and p.session == facts.session]
            where = "its HTTP+SSE event stream, where their answers come,"
        else:
            where = "the connection"
        heard = ann.stream_heard.get(ex_id, -1)
        left = [p for p in pend if not is_modern(p.revision) and not p.reported and (e.response_cut or heard > p.seq)]
        if left:
            for p in left:
                p.reported = True
            ids = ", ".join(f"#{p.seq} {p.method} id={show_id(p.id)}" for p in left[:10])
            busy = "" if e.response_cut else " while the server was still sending on it"
            if event_ids:       # 2025-11-25: a client may resume a stream with ids (GET with Last-Event-ID)
                fs.append(finding("http.client_abandoned_request", f"the client closed {where} before the response to request(s) {ids}{busy}, "
                                  f"after event id {event_ids[-1]!r}: resumable with Last-Event-ID", {"pending": [p.seq for p in left]},
                                  severity=Severity.INFO))
            else:
                fs.append(finding("http.client_abandoned_request", f"the client closed {where} before the response to request(s) {ids}{busy}: "
                                  "before 2026-07-28 a disconnect is not a cancellation (a client cancels with notifications/cancelled), "
                                  "and the answer reaches no one", {"pending": [p.seq for p in left]}))
        return fs

    def _session_rejected(self, ex_id: int, facts: Exchange) -> list[Finding]:
        """A live session's request refused with a status other than 404
        (400/401/403/410, or 2xx carrying a JSON-RPC error) whose error names
        the session: the spec's answer for an ended session is 404."""
        sid, status = facts.session, facts.status or 0
        if sid is None or facts.legacy or status == 404 or facts.is_initialize or not self.book.live(sid):
            return []
        why = self.annotator.answers.session_error(ex_id)
        if status == 410 or (why is not None and (status in (400, 401, 403) or 200 <= status < 300)):
            self.book.end(sid)
            return [finding("http.session_rejected_not_404", f"{status} for session {sid}" + (f" ({cut(why, 80)!r})" if why else "")
                            + ": a server that ended a session MUST answer its id with 404 (clients then start a new session)",
                            {"session": sid, "status": status})]
        return []

    @staticmethod
    def conn_closed(side: str, idle: bool, detail: str | None) -> list[Finding]:
        if side == "upstream" and idle and not detail:
            return [finding("http.conn_closed_idle", "upstream closed an idle kept-alive connection (the tap opens a new one for the next request)")]
        if side == "client" and idle and detail and detail.startswith(INVALID_FROM_CLIENT):
            # between exchanges (a bad request line or head): nothing was forwarded; mid-exchange it is the end record's
            return [finding("http.client_invalid_http", f"the client sent bytes that are not an HTTP/1.1 request "
                                                        f"({detail[len(INVALID_FROM_CLIENT):]}): the tap answered 400 and closed "
                                                        "the connection; nothing was forwarded")]
        return []
