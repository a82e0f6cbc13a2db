"""Per-revision MCP method table (pure data, built once at import).

Source: ``protocol/data/mcp-methods.json``, a copy of the spec-derived table
(``shared/spec/mcp-methods.json``; see its ``_legend``). At import the JSON is
resolved into frozen :class:`MethodRule` objects, one per (method, revision),
with ``version_overrides`` applied and ``conditional_capabilities`` compiled
into :class:`Conditional` predicates; lookups are then dict hits.

Revisions are ``REVISIONS``; ``draft`` is an alias of 2026-07-28
(mcp-spec-facts §0). ``revision=None`` means "not known" and selects the union
over every revision (the most permissive rule).
"""

from __future__ import annotations

import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson

from mcptap.model import Direction, Severity

REVISIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
LEGACY_REVISIONS: frozenset[str] = frozenset(REVISIONS[:4])
MODERN_REVISIONS: frozenset[str] = frozenset(REVISIONS[4:])
_ALIASES = {"draft": "2026-07-28"}
_ORDER = {r: i for i, r in enumerate(REVISIONS)}

#: The legacy handshake, removed in 2026-07-28 (changelog item 2): sending these
#: on a modern session is an era mistake rather than a mere unknown method.
HANDSHAKE_METHODS: frozenset[str] = frozenset({"initialize", "notifications/initialized"})

#: Core 2026-07-28 resultType values (basic/index "ResultType"); extensions add more
#: (see ``EXTENSION_RESULT_TYPES``).
CORE_RESULT_TYPES: frozenset[str] = frozenset({"complete", "input_required"})

_DIRECTIONS = {"client->server": Direction.C2S, "server->client": Direction.S2C}
_OVERRIDABLE = ("kind", "directions", "receiver_capability", "sub_capability", "declared_by")


def normalize_revision(v: Any) -> str | None:
    """``"draft"`` -> ``"2026-07-28"``; a known revision -> itself; anything else
    (unknown string, None, non-string) -> None."""
    if not isinstance(v, str):
        return None
    v = _ALIASES.get(v, v)
    return v if v in _ORDER else None


def is_modern(rev: str | None) -> bool:
    """True for the stateless era (2026-07-28 and its ``draft`` alias)."""
    return normalize_revision(rev) in MODERN_REVISIONS


def batching_allowed(rev: str | None) -> bool:
    """JSON-RPC batches are part of 2025-03-26 only (added there, removed 2025-06-18)."""
    return normalize_revision(rev) == "2025-03-26"


@dataclass(frozen=True, slots=True)
class Conditional:
    """An extra capability gate that applies only for some params
    (``conditional_capabilities`` in the table).

    ``when``: the table's condition text. The compiled test: the gate applies when
    any of ``keys`` is present in params (``values`` None), or when one of them
    equals a member of ``values``; ``if_absent`` also applies it when all keys are
    absent. ``weak``: the table calls the rule SHOULD-level, so a missing
    capability is at most a warning. ``empty_parent_ok``: declaring the parent
    capability as an empty object ``{}`` satisfies the gate (elicitation form
    mode, 2025-11-25 backwards compatibility).
    """

    when: str
    keys: tuple[str, ...]
    values: frozenset[str] | None
    if_absent: bool
    gate: tuple[str, ...]
    declared_by: str
    weak: bool = False
    empty_parent_ok: bool = False

    def applies(self, params: Mapping[str, Any] | None) -> bool:
        params = params if isinstance(params, Mapping) else {}
        present = [params[k] for k in self.keys if params.get(k) is not None]
        if not present:
            return self.if_absent
        if self.values is None:
            return True
        return any(isinstance(v, str) and v in self.values for v in present)


@dataclass(frozen=True, slots=True)
class MethodRule:
    """How one method behaves in one revision.

    ``kind``: "request" | "notification" | "input_request" (2026-07-28: an
    ``{method, params}`` object inside ``InputRequiredResult.inputRequests``).
    ``senders``: who may send it (C2S = the client). ``gate``: capability path
    under ``capabilities`` (e.g. ``("resources", "subscribe")``) or None.
    ``declared_by``: who must have declared the gate, relative to the message:
    "receiver" | "sender" | "both" | None. ``conditional``: param-dependent
    extra gates. ``allowed_before_initialized``: legacy lifecycle allows it
    before the handshake finishes.
    """

    method: str
    kind: str
    senders: frozenset[Direction]
    gate: tuple[str, ...] | None
    declared_by: str | None
    conditional: tuple[Conditional, ...]
    allowed_before_initialized: bool


def gate_path(capability: str | None, sub: str | None) -> tuple[str, ...] | None:
    """Capability path from the table's ``receiver_capability`` and
    ``sub_capability``. A dotted sub-capability is nested keys
    (``requests.tools.call``), but one containing ``/`` is a single prefixed key
    (``io.modelcontextprotocol/tasks`` under ``extensions``), as in _meta names."""
    if capability is None:
        return None
    if sub is None:
        return (capability,)
    return (capability, sub) if "/" in sub else (capability, *sub.split("."))


_PRESENT = re.compile(r"((?:params\.\w+)(?: or params\.\w+)*) present")
_EQUALS = re.compile(r"params\.(\w+) == '([^']*)'( or (?:params\.)?(\w+) absent)?")
_ONE_OF = re.compile(r"params\.(\w+) is (\w+(?: or \w+)*)")
_EMPTY_OK = re.compile(r"empty \w+ object \{\} counts as")


def _compile_when(when: str) -> tuple[tuple[str, ...], frozenset[str] | None, bool]:
    text = re.sub(r"\s*\(.*\)\s*$", "", when.strip())
    if m := _PRESENT.fullmatch(text):
        return tuple(re.findall(r"params\.(\w+)", m.group(1))), None, False
    if m := _EQUALS.fullmatch(text):
        if m.group(4) not in (None, m.group(1)):
            raise ValueError(f"mcp-methods.json: unsupported condition {when!r}")
        return (m.group(1),), frozenset({m.group(2)}), m.group(3) is not None
    if m := _ONE_OF.fullmatch(text):
        return (m.group(1),), frozenset(m.group(2).split(" or ")), False
    raise ValueError(f"mcp-methods.json: unsupported condition {when!r}")


def _conditional(c: dict[str, Any]) -> Conditional:
    keys, values, if_absent = _compile_when(c["when"])
    notes = c.get("notes", "")
    gate = gate_path(c["capability"], c["sub_capability"])
    assert gate is not None
    return Conditional(
        when=c["when"], keys=keys, values=values, if_absent=if_absent, gate=gate,
        declared_by=c["declared_by"], weak="SHOULD-level" in notes,
        empty_parent_ok=bool(_EMPTY_OK.search(notes)),
    )


def _override(entry: dict[str, Any], version: str) -> dict[str, Any]:
    overrides = entry.get("version_overrides", {})
    o = overrides.get(version, {})
    seen = {version}
    while "same_as" in o and o["same_as"] not in seen:
        seen.add(o["same_as"])
        o = overrides.get(o["same_as"], {})
    out: dict[str, Any] = o
    return out


def _rule_for(entry: dict[str, Any], version: str, rev: str) -> MethodRule:
    o = _override(entry, version)
    f: dict[str, Any] = {k: o[k] if k in o else entry.get(k) for k in _OVERRIDABLE}
    conds = tuple(
        _conditional(c) for c in entry.get("conditional_capabilities", ())
        if rev in {normalize_revision(v) for v in c.get("versions", (version,))}
    )
    gate = gate_path(f["receiver_capability"], f["sub_capability"])
    return MethodRule(
        method=entry["method"], kind=f["kind"],
        senders=frozenset(_DIRECTIONS[d] for d in f["directions"]),
        gate=gate, declared_by=f["declared_by"] if gate else None, conditional=conds,
        allowed_before_initialized=bool(entry.get("allowed_before_initialized", False)),
    )


def _union(rules: list[MethodRule]) -> MethodRule:
    """Most permissive rule over the revisions that define a method: any sender,
    a gate only where every revision agrees, conditionals common to all."""
    first = rules[0]
    kinds = {r.kind for r in rules}
    # A JSON-RPC kind wins over input_request: on the wire with an unknown
    # revision a sampling/createMessage is a request.
    kind = first.kind if len(kinds) == 1 else next(r.kind for r in rules if r.kind != "input_request")
    same_gate = all((r.gate, r.declared_by) == (first.gate, first.declared_by) for r in rules)
    conds = tuple(c for c in first.conditional if all(c in r.conditional for r in rules))
    return MethodRule(
        method=first.method, kind=kind,
        senders=frozenset().union(*(r.senders for r in rules)),
        gate=first.gate if same_gate else None,
        declared_by=first.declared_by if same_gate else None,
        conditional=conds,
        allowed_before_initialized=any(r.allowed_before_initialized for r in rules),
    )


def methods_table() -> dict[str, Any]:
    """The method table ``mcptap/protocol/data/mcp-methods.json`` (its shape:
    ../shared/spec/mcp-methods.json), parsed anew at each call. Raises OSError
    when the package data cannot be read."""
    # pkgutil, not importlib.resources: its readers import zipfile into every tap (0.35 MiB)
    data = pkgutil.get_data("mcptap.protocol", "data/mcp-methods.json")
    if data is None:
        raise OSError("mcptap.protocol: no loader for its data files")
    table: dict[str, Any] = orjson.loads(data)
    return table


_Built = tuple[dict[str, Mapping[str, "MethodRule"]], Mapping[str, "MethodRule"], Mapping[str, tuple[str, ...]], dict[str, str],
               frozenset[str], dict[str, tuple[str, ...]]]


def _build(table: dict[str, Any]) -> _Built:
    per_rev: dict[str, dict[str, MethodRule]] = {r: {} for r in REVISIONS}
    for entry in table["methods"]:
        for version in entry["versions"]:
            rev = normalize_revision(version)
            if rev is None or entry["method"] in per_rev[rev] and version != rev:
                continue  # "draft" duplicates 2026-07-28
            if entry["method"] in per_rev[rev]:
                raise ValueError(f"mcp-methods.json: {entry['method']} defined twice for {rev}")
            per_rev[rev][entry["method"]] = _rule_for(entry, version, rev)
    names = sorted({m for rules in per_rev.values() for m in rules})
    revisions_of = {m: tuple(r for r in REVISIONS if m in per_rev[r]) for m in names}
    union = {m: _union([per_rev[r][m] for r in revisions_of[m]]) for m in names}
    strength: dict[str, str] = {}
    for version, text in table["_legend"]["capability_enforcement_strength"].items():
        rev = normalize_revision(version)
        if rev is not None and version == rev:
            strength[rev] = "MUST" if text.startswith("MUST") else "SHOULD"
    input_required: frozenset[str] = frozenset(
        e["method"] for e in table["methods"] if "may return InputRequiredResult" in e.get("notes", "")
    )
    ext_types: dict[str, tuple[str, ...]] = {}
    for e in table["methods"]:
        if e.get("scope") == "extension":
            for t in re.findall(r"resultType '(\w+)'", e.get("notes", "")):
                path = gate_path(e["receiver_capability"], e["sub_capability"])
                if path is not None:
                    ext_types[t] = path
    frozen: dict[str, Mapping[str, MethodRule]] = {r: MappingProxyType(per_rev[r]) for r in REVISIONS}
    return frozen, MappingProxyType(union), MappingProxyType(revisions_of), strength, input_required, ext_types


_RULES, _UNION, _REVISIONS_OF, _STRENGTH, _INPUT_REQUIRED, _EXT_TYPES = _build(methods_table())

#: Every method name any revision defines.
ALL_METHODS: frozenset[str] = frozenset(_UNION)
#: Requests that may answer with ``resultType: "input_required"`` (2026-07-28 mrtr).
INPUT_REQUIRED_METHODS: frozenset[str] = _INPUT_REQUIRED
#: Extension resultType values -> the capability path that enables them
#: (e.g. "task" -> ("extensions", "io.modelcontextprotocol/tasks")).
EXTENSION_RESULT_TYPES: Mapping[str, tuple[str, ...]] = MappingProxyType(_EXT_TYPES)


def method_rule(method: str, revision: str | None) -> MethodRule | None:
    """The rule for ``method`` in ``revision`` (draft accepted), or None when that
    revision does not define it. ``revision`` None or unknown: the union over all
    revisions (most permissive), None only for a method no revision defines."""
    rev = normalize_revision(revision)
    if rev is None:
        return _UNION.get(method)
    return _RULES[rev].get(method)


def rules_for(revision: str) -> Mapping[str, MethodRule]:
    """All rules of one revision (read-only mapping method -> rule). KeyError for
    an unknown revision."""
    rev = normalize_revision(revision)
    if rev is None:
        raise KeyError(revision)
    return _RULES[rev]


def revisions_of(method: str) -> tuple[str, ...]:
    """Revisions (in ``REVISIONS`` order) that define ``method``; () if none."""
    return _REVISIONS_OF.get(method, ())


def removed_before(method: str, revision: str | None) -> bool:
    """True when ``method`` existed only in revisions older than ``revision``."""
    rev = normalize_revision(revision)
    revs = revisions_of(method)
    return rev is not None and bool(revs) and _ORDER[revs[-1]] < _ORDER[rev]


def capability_strength(revision: str | None) -> str:
    """"MUST" or "SHOULD": how strongly the revision binds peers to negotiated
    capabilities (legend ``capability_enforcement_strength``). Unknown: SHOULD."""
    return _STRENGTH.get(normalize_revision(revision) or "", "SHOULD")


def enforcement(revision: str | None) -> Severity:
    """Severity of a capability violation: WARN under SHOULD (2024-11-05,
    2025-03-26, unknown revision), ERROR under MUST (2025-06-18 and later)."""
    return Severity.ERROR if capability_strength(revision) == "MUST" else Severity.WARN
