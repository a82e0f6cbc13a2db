"""Lifecycle phases of one MCP session, as tables (pure).

Stateful era (2024-11-05 … 2025-11-25, spec basic/lifecycle): the client sends
``initialize``; the server answers (negotiating the revision and both sides'
capabilities); the client sends ``notifications/initialized``; then operation;
shutdown is closing the transport. Stateless era (2026-07-28, basic/index and
basic/versioning): no handshake, each request carries its revision and client
capabilities in ``params._meta``; ``server/discover`` may come first, and a
dual-era client probes with it before falling back to ``initialize``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.model import Direction, Kind, Message, Phase
from mcptap.protocol import rules
from mcptap.protocol.codes import finding

C2S, S2C = Direction.C2S, Direction.S2C
REQ, NOTE = Kind.REQUEST, Kind.NOTIFICATION
#: (module constants: reading a member off its Enum class costs ~10x a global on Python 3.11; era_and_phase runs per message)
_OPERATING, _STATELESS, _BEFORE_INITIALIZE = Phase.OPERATING, Phase.STATELESS, Phase.BEFORE_INITIALIZE

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPS = "io.modelcontextprotocol/clientCapabilities"

#: (phase, sender, event) -> next phase. Events: "initialize" (request),
#: "initialize_result" / "initialize_error" (its response), "initialized".
TRANSITIONS: dict[tuple[Phase, Direction, str], Phase] = {
    (Phase.BEFORE_INITIALIZE, C2S, "initialize"): Phase.INITIALIZING,
    (Phase.INITIALIZING, S2C, "initialize_result"): Phase.INITIALIZED,
    (Phase.INITIALIZING, S2C, "initialize_error"): Phase.BEFORE_INITIALIZE,
    (Phase.INITIALIZED, C2S, "initialized"): Phase.OPERATING,
}

#: (phase, sender, kind) -> (methods allowed, finding code for anything else).
#: Responses are always allowed (they answer something). Sources: lifecycle
#: "Initialization": client SHOULD NOT send requests other than ping before the
#: initialize response; server SHOULD NOT send requests other than ping and
#: logging before notifications/initialized.
ALLOWED: dict[tuple[Phase, Direction, Kind], tuple[frozenset[str], str]] = {
    (Phase.BEFORE_INITIALIZE, C2S, REQ): (frozenset({"initialize", "ping", "server/discover"}), "lifecycle.message_before_initialize"),
    (Phase.BEFORE_INITIALIZE, C2S, NOTE): (frozenset({"notifications/cancelled"}), "lifecycle.message_before_initialize"),
    (Phase.BEFORE_INITIALIZE, S2C, REQ): (frozenset({"ping"}), "lifecycle.message_before_initialize_response"),
    (Phase.BEFORE_INITIALIZE, S2C, NOTE): (frozenset({"notifications/message"}), "lifecycle.message_before_initialize_response"),
    (Phase.INITIALIZING, C2S, REQ): (frozenset({"ping"}), "lifecycle.client_request_before_initialize_response"),
    (Phase.INITIALIZING, S2C, REQ): (frozenset({"ping"}), "lifecycle.message_before_initialize_response"),
    (Phase.INITIALIZING, S2C, NOTE): (frozenset({"notifications/message", "notifications/progress"}), "lifecycle.message_before_initialize_response"),
    (Phase.INITIALIZED, S2C, REQ): (frozenset({"ping"}), "lifecycle.server_request_before_initialized"),
    (Phase.INITIALIZED, C2S, REQ): (frozenset({"ping"}), "lifecycle.initialized_missing"),
}


@dataclass(slots=True)
class SessionState:
    """What the tap knows about one session.

    ``era``: None (undecided), "legacy" or "modern". ``revision``: negotiated
    (legacy) or last seen (modern). Capabilities are dicts, or None when
    unknown (recording started mid-session): then no capability check runs.
    """

    phase: Phase = Phase.BEFORE_INITIALIZE
    era: str | None = None
    revision: str | None = None
    offered: str | None = None
    client_caps: dict[str, Any] | None = None
    server_caps: dict[str, Any] | None = None
    client_info: dict[str, Any] | None = None
    server_info: dict[str, Any] | None = None
    initialize_seq: int | None = None
    initialized_missing_reported: bool = False
    #: the client sent notifications/initialized before the initialize response
    #: (``initialized``): the handshake completes with that response
    initialized_early: bool = False
    #: a stateless HTTP exchange: whatever lifecycle the client went through
    #: happened elsewhere, so phase rules do not apply (only initialize does)
    standalone: bool = False
    #: capability verdicts per (method, kind, sender, revision, caps known);
    #: cleared whenever the negotiated capabilities change
    cap_cache: dict[Any, tuple[Any, ...]] = field(default_factory=dict)


def allowed(phase: Phase, sender: Direction, kind: Kind, method: str | None) -> str | None:
    """The finding code if ``method`` may not be sent in ``phase``, else None."""
    rule = ALLOWED.get((phase, sender, kind))
    if rule is None or method in rule[0]:
        return None
    return rule[1]


def advance(state: SessionState, sender: Direction, event: str) -> None:
    nxt = TRANSITIONS.get((state.phase, sender, event))
    if nxt is not None:
        state.phase = nxt


def assume_state(state: SessionState, phase: Phase | str | None, revision: str | None) -> None:
    """Start mid-session (the capture began after the handshake): the given
    phase, and the era and revision of ``revision`` (a stateless revision puts
    the session in the stateless phase)."""
    if phase is not None:
        state.phase = Phase(phase)
    rev = rules.normalize_revision(revision)
    if rev is not None:
        state.revision = rev
        state.era = "modern" if rules.is_modern(rev) else "legacy"
        if state.era == "modern":
            state.phase = Phase.STATELESS


def initialized(msg: Message, st: SessionState) -> None:
    """The client's ``notifications/initialized``. Sent while initialize is
    still unanswered it is early (``lifecycle.initialized_early``: the client
    MUST send it after a successful initialization, whose terms it does not
    know yet); it was sent all the same, so the initialize result completes
    the handshake (no ``lifecycle.initialized_missing`` afterwards)."""
    if st.phase is Phase.INITIALIZING:
        st.initialized_early = True
        msg.findings.append(finding("lifecycle.initialized_early",
                                    "client sent notifications/initialized before the initialize response: it MUST follow a successful "
                                    "initialization (the server may drop it, and initialize may still fail)"
                                    + (f" (initialize #{st.initialize_seq})" if st.initialize_seq is not None else "")))
        return
    advance(st, C2S, "initialized")


def stream_closed(state: SessionState) -> None:
    """A stream of the session closed: a stateful session is closing."""
    if state.phase is not Phase.STATELESS:
        state.phase = Phase.CLOSING


def request_meta(params: Any) -> tuple[str | None, dict[str, Any] | None, bool]:
    """2026-07-28 per-request ``_meta``: (protocolVersion, clientCapabilities,
    both required keys present)."""
    if not isinstance(params, dict):
        return None, None, False
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None, None, False
    v = meta.get(META_VERSION)
    caps = meta.get(META_CLIENT_CAPS)
    return (v if isinstance(v, str) else None), (caps if isinstance(caps, dict) else None), (META_VERSION in meta and META_CLIENT_CAPS in meta)


# -- applying the tables to messages -------------------------------------------

def era_and_phase(msg: Message, st: SessionState, kind: Kind, method: str | None, params: Any, transport: str) -> None:
    """Decide the session's era from a message and check that the message may
    be sent in the current phase (table ALLOWED); sets ``msg.phase`` and
    ``msg.revision`` for stateless messages. Findings go to ``msg.findings``."""
    if st.phase is _OPERATING and st.era == "legacy" and method != "initialize":
        return      # the common case: a negotiated session, where every message may be sent
    sender = msg.direction
    if sender is C2S and kind is REQ and (st.era != "legacy" or method == "initialize"):
        v, _, _ = request_meta(params)
        modern_meta = rules.is_modern(rules.normalize_revision(v))
        if method == "initialize":
            if st.era == "modern":
                # dual-era server: initialize switches this session to legacy semantics
                st.phase = _BEFORE_INITIALIZE
                msg.phase = st.phase
            st.era = "legacy"
        elif st.era is None and modern_meta:
            if method == "server/discover" and st.phase is _BEFORE_INITIALIZE:
                msg.findings.append(finding("lifecycle.era_probe",
                                            "server/discover before initialize: a dual-era client probing for 2026-07-28 (not a lifecycle violation)"))
                msg.revision = rules.normalize_revision(v)
                return
            st.era = "modern"
        if st.era == "modern":
            st.phase = _STATELESS
            msg.phase = _STATELESS
            rev = rules.normalize_revision(v)
            if v is not None and rev is None:
                msg.findings.append(finding("lifecycle.unknown_protocol_version", f"request _meta names protocol revision {v!r}"))
            msg.revision = rev or v
            st.revision = msg.revision
            return
    if st.era == "modern":
        msg.phase = _STATELESS
        return
    if st.standalone and st.phase is _BEFORE_INITIALIZE:
        return
    code = allowed(st.phase, sender, kind, method)
    if code is None:
        return
    if code == "lifecycle.initialized_missing":
        if st.initialized_missing_reported:
            return
        st.initialized_missing_reported = True
        msg.findings.append(finding(code, f"client sent {method} before notifications/initialized (MUST follow the initialize response)"))
        return
    if code == "lifecycle.message_before_initialize" and st.era is None and sender is C2S and transport == "http":
        return  # HTTP: the tap may have joined a session that was initialized before it started
    what = "request" if kind is REQ else "notification"
    text = {
        "lifecycle.message_before_initialize": f"client {what} {method} before initialize",
        "lifecycle.message_before_initialize_response": f"server {what} {method} before it answered initialize (refers to capabilities not yet negotiated)",
        "lifecycle.client_request_before_initialize_response": f"client request {method} before the initialize response (SHOULD only ping)",
        "lifecycle.server_request_before_initialized": f"server request {method} before notifications/initialized (SHOULD only ping and log)",
    }[code]
    msg.findings.append(finding(code, text))


def _offer(st: SessionState, params: Any) -> None:
    """The client's side of a handshake (initialize params) into ``st``."""
    if isinstance(params, dict):
        caps = params.get("capabilities")
        st.client_caps = caps if isinstance(caps, dict) else {}
        st.cap_cache.clear()
        pv = params.get("protocolVersion")
        st.offered = pv if isinstance(pv, str) else None
        st.client_info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else None


def initialize_request(msg: Message, st: SessionState, params: Any) -> None:
    """A client ``initialize``. On a session whose handshake already succeeded
    it is a duplicate (``lifecycle.reinitialize``) and changes nothing: only
    its successful response may (``reinitialize_response``)."""
    if st.phase in (Phase.INITIALIZED, Phase.OPERATING):
        msg.findings.append(finding("lifecycle.reinitialize", "initialize on a session that is already initialized"
                                    + (f" (handshake at #{st.initialize_seq})" if st.initialize_seq is not None else "")))
        return
    _offer(st, params)
    st.initialize_seq = msg.seq
    advance(st, C2S, "initialize")


def handshake_answered(msg: Message, st: SessionState, request_seq: int, params: Any, kind: Kind, value: dict[str, Any],
                       session_of: Any) -> None:
    """The server answered an ``initialize`` (request #``request_seq`` with
    ``params``): the session's handshake, or a duplicate (see
    ``reinitialize_response``); ``session_of(key)`` gives a session's state."""
    if request_seq == st.initialize_seq:
        initialize_response(msg, st, kind, value)
        return
    assigned = (msg.transport or {}).get("session_assigned")
    new = session_of(assigned) if assigned is not None and assigned != msg.session else None
    reinitialize_response(msg, st, new, kind, value, params)


def reinitialize_response(msg: Message, st: SessionState, new: SessionState | None, kind: Kind, value: dict[str, Any], params: Any) -> None:
    """The answer to a duplicate ``initialize`` (request params ``params``).
    Rejected: the first negotiation stays in force, nothing to report (the
    rejection is correct). Accepted: ``new`` is the session the response
    assigned (HTTP: a new Mcp-Session-Id), whose handshake this is, and ``st``
    keeps its own revision and capabilities; with ``new`` None the peers
    renegotiated the same session (stdio), which then takes the new terms."""
    if kind is not Kind.RESPONSE or not isinstance(value.get("result"), dict):
        return
    target = new if new is not None else st
    _offer(target, params)
    target.initialize_seq = msg.seq
    if new is not None:
        new.phase = Phase.INITIALIZING
    initialize_response(msg, target, kind, value)
    where = f"session {msg.transport.get('session_assigned')}" if new is not None and msg.transport else "this session"
    msg.findings.append(finding("lifecycle.new_session", f"the server accepted a second initialize: its negotiation ({target.revision}) belongs to {where}"
                                + ("; the first session keeps its own" if new is not None else ", replacing the first")))


def initialize_response(msg: Message, st: SessionState, kind: Kind, value: dict[str, Any]) -> None:
    """The server answered initialize: negotiated revision, capabilities, phase."""
    early, st.initialized_early = st.initialized_early, False
    if kind is Kind.ERROR:
        advance(st, S2C, "initialize_error")
        e = value.get("error")
        err = e if isinstance(e, dict) else {}
        msg.findings.append(finding("lifecycle.initialize_failed", f"initialize failed: {err.get('code')} {err.get('message')!r}"))
        return
    result = value.get("result")
    if not isinstance(result, dict):
        return
    caps = result.get("capabilities")
    st.server_caps = caps if isinstance(caps, dict) else {}
    st.cap_cache.clear()
    st.server_info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else None
    pv = result.get("protocolVersion")
    rev = rules.normalize_revision(pv)
    if rev is None:
        msg.findings.append(finding("lifecycle.unknown_protocol_version", f"server negotiated protocol revision {pv!r}, unknown to mcptap"))
    elif st.offered is not None and pv != st.offered:
        msg.findings.append(finding("lifecycle.version_not_offered",
                                    f"client offered {st.offered}, server answered {pv} (counter-offer: the client SHOULD disconnect if it does not support "
                                    "it)"))
    st.revision = rev or (pv if isinstance(pv, str) else None)
    st.era = "legacy"
    msg.revision = st.revision
    advance(st, S2C, "initialize_result")
    if early:
        advance(st, C2S, "initialized")


def discover_response(msg: Message, st: SessionState, kind: Kind, value: dict[str, Any]) -> None:
    """A server/discover result: server capabilities; the session is stateless."""
    if kind is Kind.RESPONSE and isinstance(value.get("result"), dict):
        caps = value["result"].get("capabilities")
        if isinstance(caps, dict):
            st.server_caps = caps
            st.cap_cache.clear()
        if st.era is None:
            st.era = "modern"
            st.phase = Phase.STATELESS
        if st.era == "modern":
            msg.phase = Phase.STATELESS


def start_over(sessions: dict[Any, SessionState], pairing: Any, session: Any) -> None:
    """A new ``initialize``, sent without a session id, was given the id
    ``session`` by the server's answer (``transport.session_from_response``)
    although an earlier session had it (an id reused after a 404 or DELETE,
    or deterministic ids): that is a new session, whose lifecycle and ids
    start afresh (``Pairing.forget_session``), not a re-initialize."""
    if sessions.pop(session, None) is not None:
        pairing.forget_session(session)
