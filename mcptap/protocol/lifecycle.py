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

from mcptap.model import Direction, Kind, Phase

C2S, S2C = Direction.C2S, Direction.S2C
REQ, NOTE = Kind.REQUEST, Kind.NOTIFICATION

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
