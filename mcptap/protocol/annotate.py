"""The annotator: one façade over framing facts, JSON-RPC classification,
pairing, lifecycle and capability rules (pure, sans-IO, deterministic).

Feed it frames in the order the tap saw them; it returns one annotated
``Message`` per frame. The same frames fed again (``mcptap check`` re-reading a
capture) give the same annotations, so rules can improve and old captures be
re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.model import Direction, Finding, Frame, Kind, Member, Message, Phase, Severity
from mcptap.protocol import capabilities as _caps
from mcptap.protocol import conventions, rules
from mcptap.protocol.annotator_state import LARGE_MESSAGE
from mcptap.protocol.codes import finding
from mcptap.protocol.contracts import CONTRACT_METHODS, LISTEN_FILTER
from mcptap.protocol.framing_facts import framing_findings, non_json_findings
from mcptap.protocol.gap_pending import request_in_gap
from mcptap.protocol.http_answers import method_not_found, status_of
from mcptap.protocol.idless_answers import IdlessAnswers
from mcptap.protocol.jsonparse import BOM
from mcptap.protocol.jsonrpc import Classified, classify, classify_exact, classify_plain, id_key, oddity_findings, show_id
from mcptap.protocol.lifecycle import (
    SessionState,
    discover_response,
    era_and_phase,
    handshake_answered,
    initialize_request,
    initialized,
    request_meta,
    start_over,
)
from mcptap.protocol.pairing import SESSIONLESS, Pending

__all__ = ["LARGE_MESSAGE", "Annotator"]

C2S, S2C = Direction.C2S, Direction.S2C
# module constants: on Python 3.11 reading a member off its Enum class (``Kind.REQUEST``) costs ~10x a global
# (EnumType.__getattr__ takes every class attribute read off the fast path); the annotator reads several a message
REQUEST, NOTIFICATION, RESPONSE, ERROR, BATCH, NON_JSON = Kind.REQUEST, Kind.NOTIFICATION, Kind.RESPONSE, Kind.ERROR, Kind.BATCH, Kind.NON_JSON
OPERATING, BEFORE_INITIALIZE = Phase.OPERATING, Phase.BEFORE_INITIALIZE
#: JSON-RPC 2.0 §6: an empty array is an invalid request (answered by -32600 with id null), and a
#: batch answer with nothing in it MUST NOT be sent (the receiver sends nothing at all).
_EMPTY_BATCH = {
    C2S: "empty JSON array: no batch but an invalid request (JSON-RPC 2.0 §6); the server answers -32600 with id null",
    S2C: "empty JSON array from the server: it MUST NOT return an empty array (JSON-RPC 2.0 §6; a batch with nothing "
         "to answer gets no answer at all, an empty one -32600 with id null)",
}


class Annotator(IdlessAnswers):
    """Annotate the messages of one capture (any number of sessions).

    ``transport``: "stdio" or "http" (framing findings apply to stdio only).
    ``large_message``: size in bytes above which ``framing.large_message`` is
    raised (default 1 MiB). ``shapes``: also validate params and results
    against the official wire types (protocol/shapes.py; slower to load, used
    by check and show, not by the live tap).
    """

    # -- feeding ------------------------------------------------------------------
    def feed(self, frame: Frame, seq: int, t_us: int, direction: Direction, session: Any = None,
             transport: dict[str, Any] | None = None, extra: Iterable[Finding] = ()) -> Message:
        """Annotate one frame. ``seq``: its record number; ``t_us``: µs since
        capture start when its last byte arrived; ``transport``: transport facts
        stored with the message (HTTP exchange etc.; key ``exchange`` is used as
        a pairing hint); ``extra``: findings the transport already made."""
        value = frame.value
        cls = classify(value)
        if type(cls.id) is float or cls.kind is BATCH:
            value, cls = classify_exact(frame.raw, value, cls)
        kind = cls.kind
        raw = frame.raw
        http, stdio = self._http, self._stdio
        exchange = transport.get("exchange") if transport else None
        if http and direction is S2C and exchange is not None:
            self.stream_heard[exchange] = seq
        if transport is not None and direction is C2S and "refused" in transport:
            return self.tap_refused(frame, cls, seq, t_us, session, transport, extra)
        # Scope: the session. HTTP traffic without Mcp-Session-Id is stateless:
        # each POST carries its request and gets its answers on its own
        # response, independent clients (of either era) may reuse ids, and the
        # server keeps no state between POSTs, so each exchange is its own scope
        # for pairing and lifecycle (spec 2026-07-28 HTTP; legacy stateless servers),
        # but for the server's requests, which the client answers in POSTs of its own (``_scope_of``).
        scope = self._scope = ("exchange", exchange) if session is None and exchange is not None and http else session
        if cls.method == "initialize" and http and transport and transport.get("session_from_response") and kind is REQUEST:
            start_over(self._sessions, self.pairing, session)       # the server gave a used session id to a new client
        if type(scope) is tuple:
            st = self._exchanges.get(scope)
            if st is None:
                st = self.sessionless_state(scope, cls.method, value.get("params") if type(value) is dict else None)
        else:
            st = self._sessions.get(scope)
            if st is None:
                st = self.session(scope)
        phase: Phase | None = st.phase
        if st.standalone and phase is BEFORE_INITIALIZE and cls.method != "initialize":
            phase = None        # sessionless HTTP: the client's lifecycle was in other exchanges, not "before initialize"
        msg = Message(seq, t_us, direction, raw, value, kind, session, cls.id, cls.has_id, cls.method, None, None, phase, st.revision,
                      [], None, None, frame.offset, frame.terminated, transport)
        out = msg.findings
        if extra:
            out.extend(extra)
        if frame.oddities:
            out.extend(oddity_findings(frame.oddities, direction.value))
        if stdio:
            if (frame.lines != 1 or not frame.terminated or frame.invalid_utf8 or len(raw) > self.large_message or raw.endswith(b"\r\n")
                    or raw.startswith(BOM)):     # else nothing to say about the framing
                framing_findings(frame, msg, self.large_message)
        elif len(raw) > self.large_message:
            out.append(finding("framing.large_message", f"{len(raw)} bytes in one message"))
        if transport is not None and direction is S2C and http and status_of(transport) >= 400:
            if self.answers.error_payload(msg, value, exchange, self.session(scope)):
                return msg
        if kind is REQUEST or kind is NOTIFICATION:
            if cls.findings:
                out.extend(cls.findings)
            self._call(msg, st, kind, cls.method, cls.id, value, exchange, None)
            return msg
        if kind is RESPONSE or kind is ERROR:
            if cls.findings:
                out.extend(cls.findings)
            msg.pair, msg.latency_us, _ = self._answer(msg, st, kind, cls.has_id, cls.id, value, exchange)
            return msg
        if kind is NON_JSON:
            non_json_findings(frame, msg, self.transport)
            self._last_unparsed[(session, direction)] = msg
            return msg
        if kind is BATCH:
            self._batch(msg, st, exchange)
            return msg
        out.extend(cls.findings)    # INVALID
        if stdio:
            out.append(finding("framing.non_jsonrpc_line", f"{direction.value} line is JSON but not a JSON-RPC message"))
        self._last_unparsed[(session, direction)] = msg
        return msg

    def feed_line(self, value: Any, raw: bytes, offset: int, seq: int, t_us: int, direction: Direction) -> Message:
        """``feed(Frame(raw, offset, True, value), seq, t_us, direction)``: a stdio line
        (``raw``, parsed as ``value``; no session, transport facts or findings of the
        transport), for re-annotation (check --full) of message records. The same
        Message, with less work for the common JSON-RPC message; the rest goes to ``feed``."""
        plain = classify_plain(value)       # (no Classified built for the message classify has nothing to say about)
        found: list[Finding] | None = None
        if plain is not None:
            kind, mid, has_id, method = plain
        else:
            cls = classify(value)
            kind, mid, has_id, method, found = cls.kind, cls.id, cls.has_id, cls.method, cls.findings
            if type(mid) is float or not (kind is REQUEST or kind is NOTIFICATION or kind is RESPONSE or kind is ERROR):
                return self.feed(Frame(raw, offset, True, value), seq, t_us, direction)
        if not self._stdio or len(raw) > self.large_message or raw[-2] == 13 or raw[0] == 0xEF:   # what feed has more to say about (CRLF, a BOM…)
            return self.feed(Frame(raw, offset, True, value), seq, t_us, direction)
        self._scope = None
        st = self._sessions.get(None)
        if st is None:
            st = self.session(None)
        phase: Phase | None = st.phase
        if st.standalone and phase is BEFORE_INITIALIZE and method != "initialize":
            phase = None
        msg = Message(seq, t_us, direction, raw, value, kind, None, mid, has_id, method, None, None, phase, st.revision,
                      [], None, None, offset, True, None)
        if found:
            msg.findings.extend(found)
        if kind is REQUEST or kind is NOTIFICATION:
            self._call(msg, st, kind, method, mid, value, None, None)
        else:
            msg.pair, msg.latency_us, _ = self._answer(msg, st, kind, has_id, mid, value, None)
        return msg

    # -- batches --------------------------------------------------------------------
    def _batch(self, msg: Message, st: SessionState, exchange: Any) -> None:
        value = msg.value
        rev = st.revision
        n = len(value)
        if not n:   # no batch of 0 in any revision; left as the last unparsed input: a -32600 with id null answers it
            msg.findings.append(finding("jsonrpc.empty_batch", _EMPTY_BATCH[msg.direction]))
        elif rules.batching_allowed(rev):
            msg.findings.append(finding("framing.batch", f"JSON-RPC batch of {n} (legal in 2025-03-26)", {"size": n}, severity=Severity.INFO))
        else:
            why = f"{_revision_source(st, rev)}: batching exists only in 2025-03-26" if rev else "batching exists only in 2025-03-26"
            msg.findings.append(finding("framing.batch", f"top-level JSON array of {n} messages; {why}", {"size": n}))
        members: list[Member] = []
        for i, item in enumerate(value):
            cls = classify(item)
            m = Member(i, cls.kind, cls.id if cls.has_id else None, cls.method)
            for f in cls.findings:
                msg.findings.append(Finding(f.code, f.severity, f"member {i}: {f.message}", f.data))
            if cls.kind in (REQUEST, NOTIFICATION, RESPONSE, ERROR):
                if cls.method == "initialize":
                    msg.findings.append(finding("framing.initialize_in_batch", "initialize MUST NOT be inside a JSON-RPC batch"))
                m.pair, m.latency_us, _ = self._one(msg, st, cls, item, exchange, i)
            # the revision this member was judged under (a member's _meta, or an answer, may change it for the next)
            m.revision = msg.revision
            members.append(m)
        msg.members = members
        self._last_unparsed[(msg.session, msg.direction)] = msg

    # -- one JSON-RPC message ------------------------------------------------------------
    def _one(self, msg: Message, st: SessionState, cls: Classified, value: dict[str, Any], exchange: Any,
             member: int | None) -> tuple[int | None, int | None, Pending | None]:
        if cls.kind is REQUEST or cls.kind is NOTIFICATION:
            self._call(msg, st, cls.kind, cls.method, cls.id, value, exchange, member)
            return None, None, None
        return self._answer(msg, st, cls.kind, cls.has_id, cls.id, value, exchange)

    def _call(self, msg: Message, st: SessionState, kind: Kind, method: str | None, mid: Any, value: dict[str, Any], exchange: Any,
              member: int | None) -> None:
        """A request or notification (``member``: its index in a batch), as ``classify`` found it (``kind``, ``method``, ``mid``: its id)."""
        params = value.get("params")
        if st.phase is not OPERATING or st.era != "legacy" or method == "initialize":   # else nothing applies
            era_and_phase(msg, st, kind, method, params, self.transport)
        if kind is REQUEST:
            self._request(msg, st, method, mid, params, exchange, member)
        else:
            self._notification(msg, st, method, params)
        if method is not None:
            found = _caps.session_check(st, method, kind, msg.direction, msg.revision, params)
            if found:
                msg.findings.extend(found)
            if self.shapes:
                found = self.shape_check(msg.direction, kind, method, params, msg.revision)
                if found:
                    msg.findings.extend(found)

    def _answer(self, msg: Message, st: SessionState, kind: Kind, has_id: bool, mid: Any, value: dict[str, Any],
                exchange: Any) -> tuple[int | None, int | None, Pending | None]:
        """A response or error (``kind``, ``has_id`` and ``mid``, its id, as ``classify``
        found them): its request's (seq, latency, Pending), or Nones."""
        sender = msg.direction
        out = msg.findings
        if not has_id or mid is None:
            return self._null_id_error(msg, st, value, Classified(kind, mid, has_id))
        scope = self._scope
        if type(scope) is tuple:            # sessionless HTTP (else the session: no call, per message)
            scope = self._scope_of(sender.peer, st)
        p, fs = self.pairing.response(scope, sender, mid, exchange)
        if p is None:
            if exchange is not None and exchange in self.unread:
                fs = [finding("http.unread_request_answered", f"response id {show_id(mid)} matches no request in the capture: "
                              "it may answer the request body of its exchange mcptap could not decode") if f.code == "jsonrpc.unmatched_response"
                      else f for f in fs]
            out.extend(request_in_gap(fs, sender.peer, self.gapped, (scope, id_key(mid))) if self.gapped else fs)
            return None, None, None
        if fs:
            out.extend(fs)
        if p.revision is not None and st.era == "modern":
            msg.revision = p.revision
        if p.cancelled:
            modern = rules.is_modern(p.revision or st.revision)
            out.append(finding("jsonrpc.response_after_cancel",
                               f"response to request #{p.seq} ({p.method}) after it was "
                               "cancelled" + (": the server MUST NOT send anything further (2026-07-28)" if modern else ""),
                               severity=Severity.ERROR if modern else None))
        if p.method == "initialize" and sender is S2C:
            handshake_answered(msg, st, p.seq, p.params, kind, value, self.session)
            if type(self._scope) is tuple:
                self.sessionless_initialized(st)
        elif p.method == "server/discover" and sender is S2C:
            discover_response(msg, st, kind, value)
        if kind is RESPONSE:
            result = value.get("result")
            if self.shapes and p.method:
                found = self.shape_check(sender, kind, p.method, result, msg.revision, p.params)
                if found:
                    out.extend(found)
            if p.direction is C2S and p.method in CONTRACT_METHODS:
                found = self._contracts.result(msg.session, p.method, p.params, result, msg.revision, p.id)
                if found:
                    out.extend(found)
            if isinstance(p.params, dict) and "task" in p.params:
                tid = conventions.task_id_of(result)
                if tid is not None:
                    self.pairing.keep_token(p, tid)
        elif isinstance(value.get("error"), dict):
            code = value["error"].get("code")
            if exchange is not None and status_of(msg.transport) < 400:   # error statuses: noted by HttpAnswers
                self.answers.error(exchange, value["error"])
            out.extend(conventions.error_code(code, msg.revision))
            # the -32601 mcptap serve gives for a method its capture lacks (it carries the mock's own
            # serve.no_recorded_answer) is a gap in the capture, not the recorded server's
            if code == -32601 and not any(f.code == "serve.no_recorded_answer" for f in out):
                out.extend(method_not_found(p, st, msg.revision))
        if kind is RESPONSE and st.era != "legacy" and isinstance(value.get("result"), dict) and p.method:
            client_caps = st.client_caps
            if st.era == "modern":
                client_caps = request_meta(p.params)[1]
            try:
                out.extend(_caps.check_result(p.method, value["result"], p.params if isinstance(p.params, dict) else None,
                                              msg.revision, client_caps, st.server_caps))
            except Exception as exc:  # noqa: BLE001 - a rule bug must not lose the message
                out.append(Finding("capability.unknown_method", Severity.INFO, f"mcptap rule error in check_result: {exc!r}"))
        # answered: what the done window keeps it for (duplicate answers, late cancels,
        # id reuse, progress after completion) reads its seq, method and id, never its params
        p.params = None
        return p.seq, msg.t_us - p.t_us, p

    # -- eras and lifecycle ----------------------------------------------------------------
    def _request(self, msg: Message, st: SessionState, method: str | None, mid: Any, params: Any, exchange: Any, member: int | None) -> None:
        sender = msg.direction
        token = None
        if isinstance(params, dict) and "_meta" in params:
            meta = params["_meta"]
            if isinstance(meta, dict) and "progressToken" in meta:
                token = meta["progressToken"]
        modern = st.era == "modern"
        if modern and sender is C2S:
            _, _, complete = request_meta(params)
            if not complete:
                msg.findings.append(finding("lifecycle.meta_missing",
                                            f"{method}: 2026-07-28 requests MUST carry _meta io.modelcontextprotocol/protocolVersion and clientCapabilities"))
        if modern and sender is S2C:
            msg.findings.append(finding("lifecycle.wrong_era",
                                        f"server request {method}: 2026-07-28 has no server-to-client requests (input requests ride in InputRequiredResult)"))
        if sender is C2S:
            if method == "initialize":
                initialize_request(msg, st, params)
            if method in CONTRACT_METHODS:
                found = self._contracts.request(msg.session, method, params, msg.session not in self._assumed, mid)
                if found:
                    msg.findings.extend(found)
        scope = self._scope
        if type(scope) is tuple:            # sessionless HTTP (else the session: no call, per message)
            scope = self._scope_of(sender, st)
        found = self.pairing.request(Pending(msg.seq, msg.t_us, sender, mid, method, scope, token, False, exchange, member, False,
                                             msg.revision, params), not modern and scope is not SESSIONLESS)
        if found:
            msg.findings.extend(found)

    def _notification(self, msg: Message, st: SessionState, method: str | None, params: Any) -> None:
        sender = msg.direction
        if method == "notifications/initialized" and sender is C2S:
            initialized(msg, st)
            return
        if not isinstance(params, dict):
            return
        if sender is S2C and method == "notifications/resources/updated" and st.era != "modern":
            msg.findings.extend(self._contracts.notification(msg.session, method, params, msg.session not in self._assumed))
        elif sender is S2C and st.era == "modern" and method in LISTEN_FILTER:
            msg.findings.extend(self._contracts.subscription_notification(msg.session, method, params, msg.session not in self._assumed))
        if method == "notifications/cancelled":
            if "requestId" in params:
                p, fs = self.pairing.cancel(self._cancel_scope(sender, st, params["requestId"]), sender, params["requestId"])
                msg.findings.extend(fs)
                if p is not None:
                    msg.link = p.seq
                    if p.method == "subscriptions/listen":
                        self._contracts.listen_ended(msg.session, p.id)
        elif method == "notifications/tasks/status":
            if params.get("status") in conventions.TERMINAL_TASK_STATES:
                self.pairing.release_task(self._scope_of(sender.peer, st), params.get("taskId"))
        elif method == "notifications/progress":
            if "progressToken" in params:
                p, fs = self.pairing.progress(self._scope_of(sender.peer, st), sender, params["progressToken"], params.get("progress"))
                msg.findings.extend(fs)
                if p is not None:
                    msg.link = p.seq


def _revision_source(st: SessionState, rev: str) -> str:
    """``rev`` (the session's revision) with where it came from: initialize
    negotiated a legacy one; a 2026-07-28 session negotiates nothing, each
    request names its revision in ``_meta`` (the last one is the session's)."""
    return f"requests name {rev} in _meta" if st.era == "modern" else f"negotiated {rev}"
