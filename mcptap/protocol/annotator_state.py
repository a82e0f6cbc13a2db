"""The annotator's state and its queries (pure, sans-IO): sessions (by id, or
per exchange for stateless HTTP in a bounded window), the pairing table,
contracts, and the ends of streams and captures. ``protocol/annotate.py``'s
``Annotator`` feeds frames through the rules on top of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mcptap.model import Direction, Finding, Frame, Kind, Member, Message, Phase
from mcptap.protocol import rules
from mcptap.protocol import shapes as _shapes
from mcptap.protocol.codes import finding
from mcptap.protocol.contracts import Contracts
from mcptap.protocol.gap_pending import Holes, answers_in_gap, mark_gap
from mcptap.protocol.http_answers import HttpAnswers
from mcptap.protocol.jsonrpc import Classified, classify, oddity_findings
from mcptap.protocol.lifecycle import SessionState, assume_state, request_meta, stream_closed
from mcptap.protocol.pairing import SESSIONLESS, BoundedMap, Pairing, Pending

LARGE_MESSAGE = 1 << 20
_ALL = float("inf")
C2S, S2C = Direction.C2S, Direction.S2C


class ShapeCheckers(dict[tuple[Any, ...], Any]):
    """``shapes.check`` (same signature, same findings) through one ``shapes.checks``
    pair per (sender, kind, method, revision), built at its first message: a payload its
    quick check is sure of costs that check alone (no key built, no enum work). An
    answer to a task-augmented request (its params carry ``task``) goes to ``shapes.check``."""

    def __call__(self, direction: Direction, kind: Any, method: str, payload: Any, revision: str | None,
                 request_params: Any = None) -> list[Finding]:
        if revision is None:
            return []
        if isinstance(request_params, dict) and "task" in request_params:    # (shapes.task_created's test of them)
            return _shapes.check(direction, kind, method, payload, revision, request_params)
        pair = self.get((direction, kind, method, revision))
        if pair is None:
            pair = self[(direction, kind, method, revision)] = _shapes.checks(direction, kind, method, revision)
        # shapes.checker's check, inlined (a call less a message): pair[0] may be replaced after a call, read it each time
        if payload and type(payload) is dict:
            try:
                if pair[0](payload):
                    return []
            except Exception:  # noqa: BLE001 - "not sure": the slow check decides
                pass
        out: list[Finding] = pair[1](payload)
        return out


class AnnotatorState:
    """What an ``Annotator`` knows of one capture so far (see
    ``protocol/annotate.py`` for the parameters), and its queries.

    ``eof`` and ``finish`` give the findings of a stream's and the capture's end."""

    def __init__(self, transport: str = "stdio", large_message: int = LARGE_MESSAGE, shapes: bool = False) -> None:
        self.transport = transport
        self._stdio, self._http = transport == "stdio", transport == "http"
        self.shapes = shapes
        self.large_message = large_message
        self.pairing = Pairing()
        self._sessions: dict[Any, SessionState] = {}
        self._last_unparsed: dict[tuple[Any, Direction], Message] = {}
        self._contracts = Contracts()
        #: HTTP error answers (protocol/http_answers.py), also used by the HTTP judge
        self.answers = HttpAnswers(self.pairing)
        self._scope: Any = None
        self._exchanges = BoundedMap(4096)
        #: HTTP without Mcp-Session-Id, handshake era: the last successful initialize's (revision, client and
        #: server capabilities), which the later exchanges of that one logical client start from (``sessionless_state``)
        self._sessionless: tuple[str | None, dict[str, Any] | None, dict[str, Any] | None] | None = None
        self._assumed: set[Any] = set()
        #: HTTP: the seq of the last server message each open exchange's response stream carried
        #: (a client that closes a stream the server was still sending on abandoned its requests)
        self.stream_heard: dict[Any, int] = {}
        #: the schema shape check (``shapes.check``'s signature); check --full may answer it from another process
        self.shape_check: Callable[..., list[Finding]] = ShapeCheckers()
        #: the requests the recording gaps so far may hold (gap_pending.request_in_gap)
        self.gapped = Holes()
        #: HTTP exchanges whose request body mcptap could not decode (``HttpJudge.request_undecoded``): a
        #: response there may answer a request the capture does not hold, so it is not unmatched
        self.unread: set[Any] = set()
        #: live stdio: answers' direction -> the seq of the last request registered before its bytes were
        #: last framed again (``_ALL`` while they are stored unframed): requests up to it may be answered in them
        self._unframed_upto: dict[Direction, float] = {}

    # -- state ------------------------------------------------------------------
    def session(self, session: Any = None) -> SessionState:
        """The state of ``session`` (a session id, None on stdio, or an
        ("exchange", n) scope for stateless HTTP, kept in a bounded window)."""
        if isinstance(session, tuple):
            st: SessionState | None = self._exchanges.get(session)
            if st is None:
                st = SessionState(standalone=True)
                self._exchanges.add(session, st)
            return st
        st = self._sessions.get(session)
        if st is None:
            st = self._sessions[session] = SessionState()
        return st

    def sessionless_state(self, scope: tuple[Any, ...], method: str | None, params: Any) -> SessionState:
        """The state of a new stateless HTTP exchange ``scope`` whose first
        message is ``method`` (``params``). Sessionless traffic is one logical
        client (docs/http-tap.md): after a handshake-era initialize answered in
        an exchange of its own, a later exchange that is not itself a handshake
        or a 2026-07-28 request (``_meta`` protocolVersion) is an operating
        exchange of the revision and capabilities that initialize negotiated
        (the last one seen), so phase, revision and capability rules apply; its
        requests still pair within it (independent clients reuse ids)."""
        st = self.session(scope)
        seed = self._sessionless
        if seed is not None and method not in ("initialize", "server/discover") and request_meta(params)[0] is None:
            st.era, st.phase = "legacy", Phase.OPERATING
            st.revision, st.client_caps, st.server_caps = seed
        return st

    def sessionless_initialized(self, st: SessionState) -> None:
        """An initialize was answered in the stateless exchange of ``st``: a
        success is what later sessionless exchanges start from."""
        if st.era == "legacy" and st.phase is Phase.INITIALIZED and st.server_caps is not None:
            self._sessionless = (st.revision, st.client_caps, st.server_caps)

    def sessions(self) -> dict[Any, SessionState]:
        return dict(self._sessions)

    def exchange_ended(self, exchange: Any) -> None:
        """HTTP exchange ``exchange`` ended (``HttpJudge.end``). Traffic
        without Mcp-Session-Id is scoped to its exchange (``feed``): nothing
        can arrive in that scope any more, so its state and completed requests
        are dropped (memory stays flat over stateless POSTs); requests it left
        open stay pending (reported at the end), and the server's requests it
        carried still pair with the client's answers in later POSTs (they are
        paired in ``pairing.SESSIONLESS``, not in the exchange)."""
        self.stream_heard.pop(exchange, None)
        self.unread.discard(exchange)
        scope = ("exchange", exchange)
        if self._exchanges.d.pop(scope, None) is not None:
            self.pairing.forget_scope(scope)

    def assume(self, phase: Phase | str | None = None, revision: str | None = None, session: Any = None,
               client_caps: dict[str, Any] | None = None, server_caps: dict[str, Any] | None = None) -> None:
        """Start mid-session: the capture began after the handshake. Unknown
        capabilities stay None (no capability findings)."""
        st = self.session(session)
        self._assumed.add(session)
        assume_state(st, phase, revision)
        st.client_caps = client_caps
        st.server_caps = server_caps
        st.cap_cache.clear()

    def tap_refused(self, frame: Frame, cls: Classified, seq: int, t_us: int, session: Any, transport: dict[str, Any],
                    extra: Iterable[Finding]) -> Message:
        """A client message the tap refused itself (``transport["refused"]``, a ``how`` of
        ``records.events.TAP_REFUSALS``: a DNS rebinding page's, a malformed request's): it
        never reached the server, so it takes no part in the session it names: no phase, no
        lifecycle, pairing, capability or contract rule, and the session's state is left as
        it was. What it is stays said: its JSON-RPC shape and the transport's ``extra``."""
        value = frame.value
        msg = Message(seq, t_us, C2S, frame.raw, value, cls.kind, session, cls.id, cls.has_id, cls.method,
                      offset=frame.offset, terminated=frame.terminated, transport=transport)
        msg.findings.extend(extra)
        if frame.oddities:
            msg.findings.extend(oddity_findings(frame.oddities, C2S.value))
        msg.findings.extend(cls.findings)
        if cls.kind is Kind.BATCH and isinstance(value, list):
            msg.members = [Member(i, c.kind, c.id if c.has_id else None, c.method) for i, c in enumerate(map(classify, value))]
        return msg

    def transport_answered(self, p: Pending) -> None:
        """The tap itself answered request ``p`` (HTTP 403 refused Host, 502
        upstream failure): it is no longer awaiting the server."""
        self.pairing.complete(p)

    def transport_cancel(self, p: Pending, why: str) -> Finding:
        """The transport cancelled request ``p`` (2026-07-28 Streamable HTTP:
        the client closing the response stream IS the cancellation)."""
        p.cancelled = True
        return finding("cancel.request", f"request #{p.seq} ({p.method}) cancelled: {why}", {"request_seq": p.seq, "by": "transport"})

    def pending(self) -> list[Pending]:
        """Requests still awaiting a response, cancelled ones excluded (the
        receiver SHOULD NOT answer those), and those a recording gap covered
        (their answers may be in it: ``finish`` names them, gap_pending.py), and those
        whose answers may be in bytes stored unframed (``unframed``)."""
        self._settle()
        return [p for p in self.pairing.pending() if not p.cancelled and not p.in_gap and not p.deferred]

    def _scope_of(self, requester: Direction, st: SessionState) -> Any:
        """The pairing scope of the requests ``requester`` sends, seen from
        the current message (its session state ``st``): the session; on HTTP
        without Mcp-Session-Id the exchange for the client's (independent
        stateless clients reuse ids) and ``SESSIONLESS`` for the server's of
        the handshake era, which the client answers in POSTs of its own
        (2026-07-28 has no server requests: those stay in their exchange,
        flagged ``lifecycle.wrong_era``, and nothing elsewhere answers them)."""
        scope = self._scope
        if requester is S2C and type(scope) is tuple and st.era != "modern":
            return SESSIONLESS
        return scope

    def _cancel_scope(self, sender: Direction, st: SessionState, rid: Any) -> Any:
        """Where the request ``sender`` cancels is paired. On HTTP without
        Mcp-Session-Id (handshake era, one logical client) the client cancels
        in a POST of its own a request another exchange carries: that one, when
        exactly one such request with the id is open (stateless clients of
        2026-07-28 cancel by closing the response stream, and reuse ids)."""
        scope = self._scope_of(sender, st)
        if sender is C2S and type(scope) is tuple and not self.pairing.is_open(scope, sender, rid):
            found = [p for p in self.pairing.open_in_exchanges(sender, rid) if not rules.is_modern(p.revision)]
            if len(found) == 1:
                return found[0].session
        return scope

    # -- end of streams -------------------------------------------------------------------
    def eof(self, direction: Direction, t_us: int, session: Any = None) -> list[Finding]:
        """A stream closed. stdio: when the server's stdout closes, requests the
        client is still waiting for will never be answered."""
        stream_closed(self.session(session))
        if direction is not S2C:
            return []
        self._settle()
        return self.pairing.lost_at_eof(session)

    def gap(self, direction: Direction | None, nbytes: int | None = None) -> None:
        """A recording gap in ``direction`` (None: both) that lost ``nbytes``
        forwarded that way (None: unknown): the requests open now whose answers
        travel that way are not judged unanswered, and later answers to
        requests sent that way which match none are not blamed on their
        sender, as many as the gap may hold (gap_pending.py)."""
        mark_gap(self.pairing.pending(), direction)
        self.gapped.add(direction, nbytes)

    def unframed(self, direction: Direction) -> None:
        """Live stdio: bytes in ``direction`` are being stored unframed and
        unannotated (``chunk`` records: analysis fell behind, a line too long
        to hold, or mcptap was told to stop) until ``framed``. The requests
        open meanwhile whose answers travel that way may be answered in them:
        not judged unanswered here (no ``lifecycle.eof_with_pending_requests`` /
        ``jsonrpc.unanswered_request``, not in the end record's ``pending``);
        re-annotation frames the chunks and judges them. O(1): called per
        chunk, it only notes the direction; the requests are marked
        (``Pending.deferred``) when they are judged (``_settle``)."""
        self._unframed_upto[direction] = _ALL

    def framed(self, direction: Direction) -> None:
        """Live stdio: framing of ``direction`` resumed (see ``unframed``):
        requests registered from now on are judged as usual again, unless
        bytes that way are stored unframed again while they are open."""
        if self._unframed_upto.get(direction) == _ALL:
            self._unframed_upto[direction] = self.pairing.last_seq

    def _settle(self) -> None:
        """Mark deferred each open request that was open while its answers'
        direction was stored unframed: registered (request seqs increase) no
        later than the last request before framing resumed, or at all while
        it has not resumed."""
        upto = self._unframed_upto
        if upto:
            for p in self.pairing.pending():
                if p.seq <= upto.get(p.direction.peer, -1):
                    p.deferred = True

    def finish(self, t_us: int, complete: bool = True) -> list[Finding]:
        """End of capture: every request still pending and not yet reported.
        ``complete=False`` (the capture was cut short): reported as info, the
        answers may simply not have been recorded. Those a recording gap
        covered: one ``capture.answers_in_gap`` (info)."""
        self._settle()
        return answers_in_gap(self.pairing.pending()) + self.pairing.never_answered(complete)
