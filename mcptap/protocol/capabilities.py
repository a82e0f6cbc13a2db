"""Capability and method checks for one MCP message (pure, table-driven).

Rules come from :mod:`mcptap.protocol.rules` (spec table ``mcp-methods.json``);
nothing here names a capability. Who must declare a gate
(mcp-spec-facts §1): requests are gated by the *receiver's* capabilities;
change/log notifications (and ``notifications/roots/list_changed``) by the
*sender's*; the 2026-07-28 tasks extension by both. Capability objects are the
``capabilities`` the peers declared (legacy: initialize params/result;
2026-07-28: the request's ``_meta["io.modelcontextprotocol/clientCapabilities"]``
and the server/discover result). ``None`` means "not known" (capture started
mid-session): those checks are skipped, never guessed.

Severity of a missing capability follows the revision's binding strength:
SHOULD (2024-11-05, 2025-03-26) -> warn, MUST (2025-06-18+) -> error
(``rules.enforcement``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcptap.model import Direction, Finding, Kind, Phase, Severity
from mcptap.protocol import rules
from mcptap.protocol.codes import finding
from mcptap.protocol.lifecycle import SessionState, request_meta
from mcptap.protocol.rules import Conditional, MethodRule

CLIENT_CAPS_META = "io.modelcontextprotocol/clientCapabilities"

_PARTY = {Direction.C2S: "client", Direction.S2C: "server"}
#: (a module constant: reading members off their Enum class costs ~10x a global on Python 3.11)
_UNNEGOTIATED = (Phase.BEFORE_INITIALIZE, Phase.INITIALIZING)
_C2S = Direction.C2S


def check_message(
    method: str,
    kind: Kind,
    direction: Direction,
    params: dict[str, Any] | None,
    revision: str | None,
    client_caps: dict[str, Any] | None,
    server_caps: dict[str, Any] | None,
) -> list[Finding]:
    """Findings for one JSON-RPC request or notification ``method`` sent in
    ``direction`` (the sender), under ``revision`` (None/unknown: the union over
    all revisions, most permissive). Codes: ``capability.unknown_method`` (warn),
    ``capability.not_in_revision`` (warn; error for a request removed before the
    revision), ``lifecycle.wrong_era`` (legacy handshake or a JSON-RPC input
    request on 2026-07-28), ``capability.wrong_direction`` (error),
    ``capability.not_negotiated`` (severity per ``rules.enforcement``).
    Responses and other kinds: []. Never raises on peer input."""
    if kind not in (Kind.REQUEST, Kind.NOTIFICATION) or not isinstance(method, str):
        return []
    rev = rules.normalize_revision(revision)
    label = rev or "revision unknown"
    if not rules.revisions_of(method):
        return [finding(
            "capability.unknown_method",
            f"{method} is not a method of any MCP revision (vendor or extension method?)",
            {"method": method},
        )]
    rule = rules.method_rule(method, rev)
    if rule is None:
        return [_not_in_revision(method, rev)]  # rev is known here
    if rule.kind == "input_request":
        return [finding(
            "lifecycle.wrong_era",
            f"{method} sent as a JSON-RPC {kind.value}, but in {label} it is only an input request "
            "embedded in an InputRequiredResult (there are no server requests)",
            {"method": method, "revision": rev},
        )]
    if direction not in rule.senders:
        allowed = " and ".join(sorted(_PARTY[d] for d in rule.senders))
        return [finding(
            "capability.wrong_direction",
            f"{method} sent by the {direction.sender}, but in {label} only the {allowed} may send it",
            {"method": method, "sender": direction.sender, "revision": rev},
        )]
    if client_caps is None and direction is Direction.C2S and rules.is_modern(rev):
        client_caps = _client_caps_from(params)
    caps = {Direction.C2S: client_caps, Direction.S2C: server_caps}
    return _check_gates(rule, method, direction, params, rev, caps)


#: SessionState.cap_cache's verdict for a method whose check depends on its params
_PER_MESSAGE: tuple[Any, ...] = ("per message",)


def session_check(st: SessionState, method: str, kind: Kind, direction: Direction, revision: str | None, params: Any) -> Sequence[Finding]:
    """``check_message`` for a request or notification of the session ``st``
    (its era, phase and negotiated capabilities), cached per session while
    the capabilities stay the same: the verdict depends on params only for
    methods with conditional gates. A rule error becomes an info finding (a
    rule bug must not lose the message)."""
    if st.era == "modern":
        client_caps = request_meta(params)[1] if direction is _C2S else None
        server_caps = st.server_caps
        key = None  # capabilities come with each request: nothing to reuse
    else:
        if st.phase in _UNNEGOTIATED and method not in ("initialize", "ping"):
            client_caps = server_caps = None  # not negotiated yet: lifecycle findings cover it
        else:
            client_caps, server_caps = st.client_caps, st.server_caps
        key = (method, kind, direction, revision, client_caps is None)
        hit = st.cap_cache.get(key)
        if hit is None:
            rule = rules.method_rule(method, revision)
            if rule is not None and rule.conditional:
                st.cap_cache[key] = _PER_MESSAGE
                key = None
        elif hit is _PER_MESSAGE:
            key = None
        else:
            return hit
    try:
        found = check_message(method, kind, direction, params if isinstance(params, dict) else None, revision, client_caps, server_caps)
    except Exception as exc:  # noqa: BLE001 - a rule bug must not lose the message
        found = [Finding("capability.unknown_method", Severity.INFO, f"mcptap rule error in check_message: {exc!r}")]
    if key is not None:
        st.cap_cache[key] = tuple(found)
    return found


def check_result(
    method: str,
    result: dict[str, Any],
    request_params: dict[str, Any] | None,
    revision: str | None,
    client_caps: dict[str, Any] | None,
    server_caps: dict[str, Any] | None,
) -> list[Finding]:
    """Findings for the result of a ``method`` request (2026-07-28 only; other
    revisions: []). ``client_caps``: that request's clientCapabilities (None:
    read from ``request_params._meta``; still None: capability checks skipped).

    * ``resultType`` absent -> ``lifecycle.result_type_missing`` (warn, read as
      complete); unknown, or an extension type the client did not declare ->
      ``lifecycle.result_type_invalid``;
    * ``input_required`` on a method other than ``rules.INPUT_REQUIRED_METHODS``
      -> ``lifecycle.result_type_invalid``; without ``inputRequests`` and
      ``requestState``, or with a malformed/unknown embedded input request ->
      ``lifecycle.input_required_invalid``;
    * each embedded input request is checked like a server->client request
      against the client's capabilities (``capability.not_negotiated``)."""
    rev = rules.normalize_revision(revision)
    if not rules.is_modern(rev) or not isinstance(result, Mapping):
        return []
    if client_caps is None:
        client_caps = _client_caps_from(request_params)
    rt = result.get("resultType")
    if "resultType" not in result:
        return [finding(
            "lifecycle.result_type_missing",
            f"{method} result has no resultType (required in {rev}); read as complete",
            {"method": method},
        )]
    if rt == "complete":
        return []
    if isinstance(rt, str) and rt in rules.EXTENSION_RESULT_TYPES:
        gate = rules.EXTENSION_RESULT_TYPES[rt]
        if client_caps is None or _declared(client_caps, gate):
            return []
        return [finding(
            "lifecycle.result_type_invalid",
            f"{method} result has resultType {rt!r} but the client did not declare "
            f"capabilities.{_dotted(gate)} in that request",
            {"method": method, "resultType": rt, "capability": _dotted(gate), "declared_by": "client"},
        )]
    if rt != "input_required":
        return [finding(
            "lifecycle.result_type_invalid",
            f"{method} result has unknown resultType {rt!r} (core values: complete, input_required)",
            {"method": method, "resultType": rt},
        )]
    if method not in rules.INPUT_REQUIRED_METHODS:
        allowed = ", ".join(sorted(rules.INPUT_REQUIRED_METHODS))
        return [finding(
            "lifecycle.result_type_invalid",
            f"{method} result has resultType 'input_required', allowed only on {allowed}",
            {"method": method, "resultType": rt},
        )]
    return _check_input_required(method, result, rev, client_caps)


def _check_input_required(method: str, result: Mapping[str, Any], rev: str | None,
                          client_caps: dict[str, Any] | None) -> list[Finding]:
    requests = result.get("inputRequests")
    if requests is None and result.get("requestState") is None:
        return [finding(
            "lifecycle.input_required_invalid",
            f"{method} InputRequiredResult carries neither inputRequests nor requestState",
            {"method": method},
        )]
    if requests is None:
        return []
    if not isinstance(requests, Mapping):
        return [finding(
            "lifecycle.input_required_invalid",
            f"{method} InputRequiredResult.inputRequests is not an object",
            {"method": method},
        )]
    out: list[Finding] = []
    caps = {Direction.C2S: client_caps, Direction.S2C: None}
    for key, ir in requests.items():
        inner = ir.get("method") if isinstance(ir, Mapping) else None
        rule = rules.method_rule(inner, rev) if isinstance(inner, str) else None
        if rule is None or rule.kind != "input_request":
            out.append(finding(
                "lifecycle.input_required_invalid",
                f"{method} inputRequests[{key!r}] is not an input request of {rev} "
                f"(method {inner!r}; expected one of {', '.join(_input_request_methods(rev))})",
                {"method": method, "key": key, "input_method": inner},
            ))
            continue
        params = ir.get("params")
        out.extend(_check_gates(rule, str(inner), Direction.S2C, params, rev, caps, via=(method, key)))
    return out


def _check_gates(rule: MethodRule, method: str, direction: Direction, params: Any, rev: str | None,
                 caps: Mapping[Direction, dict[str, Any] | None], via: tuple[str, Any] | None = None) -> list[Finding]:
    out: list[Finding] = []
    missing_base: list[tuple[str, ...]] = []
    if rule.gate is not None and rule.declared_by is not None:
        for party in _parties(rule.declared_by, direction):
            c = caps[party]
            if c is not None and not _declared(c, rule.gate):
                missing_base.append(rule.gate)
                out.append(_not_negotiated(method, rule.gate, party, rev, None, via))
    for cond in rule.conditional:
        if not cond.applies(params if isinstance(params, Mapping) else None):
            continue
        # Reported once: the base gate is missing, so its sub-capability is too.
        if any(cond.gate[: len(g)] == g for g in missing_base):
            continue
        for party in _parties(cond.declared_by, direction):
            c = caps[party]
            if c is not None and not _declared_cond(c, cond):
                out.append(_not_negotiated(method, cond.gate, party, rev, cond, via))
    return out


def declared_but_unsupported(method: str, requester: Direction, revision: str | None, client_caps: dict[str, Any] | None,
                             server_caps: dict[str, Any] | None, how: str) -> list[Finding]:
    """A ``method`` request from ``requester`` answered ``how`` (-32601, or an
    HTTP error without a JSON-RPC response) although the receiver declared the
    capability that promises the method (2025-06-18+ basic/lifecycle: both
    parties MUST respect the negotiated capabilities) ->
    ``capability.declared_but_unsupported`` (warn). Unknown capabilities
    (None) or ungated methods: []."""
    rule = rules.method_rule(method, rules.normalize_revision(revision))
    if rule is None or rule.gate is None or rule.declared_by not in ("receiver", "both"):
        return []
    receiver = requester.peer
    caps = server_caps if receiver is Direction.S2C else client_caps
    if caps is None or not _declared(caps, rule.gate):
        return []
    path = _dotted(rule.gate)
    return [finding("capability.declared_but_unsupported",
                    f"{method} answered {how} although the {_PARTY[receiver]} declared capabilities.{path}: peers that rely on the declaration fail here",
                    {"method": method, "capability": path})]


def _not_negotiated(method: str, gate: tuple[str, ...], party: Direction, rev: str | None,
                    cond: Conditional | None, via: tuple[str, Any] | None) -> Finding:
    strength = rules.capability_strength(rev)
    severity = rules.enforcement(rev)
    if cond is not None and cond.weak:
        severity, strength = Severity.WARN, "SHOULD"
    who = _PARTY[party]
    path = _dotted(gate)
    where = f" (inputRequests[{via[1]!r}] of a {via[0]} result)" if via else ""
    when = f" [{cond.when}]" if cond else ""
    data: dict[str, Any] = {"capability": path, "declared_by": who, "method": method}
    if cond is not None:
        data["condition"] = cond.when
    if via is not None:
        data["via"] = via[0]
    return finding(
        "capability.not_negotiated",
        f"{method}{where} sent but the {who} did not declare capabilities.{path}{when} "
        f"({rev or 'revision unknown'}: {strength})",
        data, severity=severity,
    )


def _not_in_revision(method: str, rev: str | None) -> Finding:
    revs = rules.revisions_of(method)
    span = revs[0] if len(revs) == 1 else f"{revs[0]} … {revs[-1]}"
    data = {"method": method, "revision": rev, "defined_in": list(revs)}
    if rules.is_modern(rev) and method in rules.HANDSHAKE_METHODS:
        return finding(
            "lifecycle.wrong_era",
            f"{method} is part of the legacy handshake ({span}); {rev} has no initialize handshake",
            data,
        )
    removed = rules.removed_before(method, rev)
    last = rules.method_rule(method, revs[-1])
    if removed:
        msg = f"{method} was removed before {rev} (defined in {span})"
    else:
        msg = f"{method} does not exist in {rev} (defined in {span})"
    severity = Severity.ERROR if removed and last is not None and last.kind == "request" else None
    return finding("capability.not_in_revision", msg, data, severity=severity)


def _parties(declared_by: str, sender: Direction) -> tuple[Direction, ...]:
    if declared_by == "sender":
        return (sender,)
    if declared_by == "receiver":
        return (sender.peer,)
    return (Direction.C2S, Direction.S2C)  # "both"


def _declared(caps: Any, path: tuple[str, ...]) -> bool:
    """A capability is declared when every key on the path is present and the
    leaf is not false/null (``{"listChanged": false}`` declares nothing)."""
    node = caps
    for key in path:
        if not isinstance(node, Mapping):
            return False
        node = node.get(key)
        if node is None or node is False:
            return False
    return True


def _declared_cond(caps: Any, cond: Conditional) -> bool:
    if _declared(caps, cond.gate):
        return True
    if cond.empty_parent_ok:
        parent: Any = caps
        for key in cond.gate[:-1]:
            parent = parent.get(key) if isinstance(parent, Mapping) else None
        return isinstance(parent, Mapping) and not parent
    return False


def _client_caps_from(params: Any) -> dict[str, Any] | None:
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    caps = meta.get(CLIENT_CAPS_META) if isinstance(meta, Mapping) else None
    return caps if isinstance(caps, dict) else None


def _input_request_methods(rev: str | None) -> list[str]:
    return sorted(m for m, r in rules.rules_for(rev or rules.REVISIONS[-1]).items() if r.kind == "input_request")


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)
