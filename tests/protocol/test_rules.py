"""rules.py: the per-revision method table, checked against a hand-written copy of
mcp-spec-facts §1 (independent of how rules.py reads the JSON) and against the
raw JSON entries."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

import pytest

from mcptap.model import Direction, Severity
from mcptap.protocol import rules
from mcptap.protocol.rules import (
    LEGACY_REVISIONS,
    MODERN_REVISIONS,
    REVISIONS,
    batching_allowed,
    enforcement,
    is_modern,
    method_rule,
    normalize_revision,
    revisions_of,
)

C, S = Direction.C2S, Direction.S2C
BOTH = frozenset({C, S})
LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
ALL = REVISIONS
TASKS_EXT = ("extensions", "io.modelcontextprotocol/tasks")

# method -> list of (revisions, kind, senders, gate, declared_by); from mcp-spec-facts §1.
SPEC: dict[str, list[tuple[tuple[str, ...], str, frozenset, tuple | None, str | None]]] = {
    "initialize": [(LEGACY, "request", frozenset({C}), None, None)],
    "notifications/initialized": [(LEGACY, "notification", frozenset({C}), None, None)],
    "ping": [(LEGACY, "request", BOTH, None, None)],
    "notifications/cancelled": [(ALL, "notification", BOTH, None, None)],
    "notifications/progress": [(LEGACY, "notification", BOTH, None, None),
                                (("2026-07-28",), "notification", frozenset({S}), None, None)],
    "resources/list": [(ALL, "request", frozenset({C}), ("resources",), "receiver")],
    "resources/templates/list": [(ALL, "request", frozenset({C}), ("resources",), "receiver")],
    "resources/read": [(ALL, "request", frozenset({C}), ("resources",), "receiver")],
    "resources/subscribe": [(LEGACY, "request", frozenset({C}), ("resources", "subscribe"), "receiver")],
    "resources/unsubscribe": [(LEGACY, "request", frozenset({C}), ("resources", "subscribe"), "receiver")],
    "notifications/resources/list_changed": [(ALL, "notification", frozenset({S}), ("resources", "listChanged"), "sender")],
    "notifications/resources/updated": [(ALL, "notification", frozenset({S}), ("resources", "subscribe"), "sender")],
    "prompts/list": [(ALL, "request", frozenset({C}), ("prompts",), "receiver")],
    "prompts/get": [(ALL, "request", frozenset({C}), ("prompts",), "receiver")],
    "notifications/prompts/list_changed": [(ALL, "notification", frozenset({S}), ("prompts", "listChanged"), "sender")],
    "tools/list": [(ALL, "request", frozenset({C}), ("tools",), "receiver")],
    "tools/call": [(ALL, "request", frozenset({C}), ("tools",), "receiver")],
    "notifications/tools/list_changed": [(ALL, "notification", frozenset({S}), ("tools", "listChanged"), "sender")],
    "logging/setLevel": [(LEGACY, "request", frozenset({C}), ("logging",), "receiver")],
    "notifications/message": [(ALL, "notification", frozenset({S}), ("logging",), "sender")],
    "completion/complete": [(("2024-11-05",), "request", frozenset({C}), None, None),
                            (ALL[1:], "request", frozenset({C}), ("completions",), "receiver")],
    "sampling/createMessage": [(LEGACY, "request", frozenset({S}), ("sampling",), "receiver"),
                               (("2026-07-28",), "input_request", frozenset({S}), ("sampling",), "receiver")],
    "roots/list": [(LEGACY, "request", frozenset({S}), ("roots",), "receiver"),
                   (("2026-07-28",), "input_request", frozenset({S}), ("roots",), "receiver")],
    "notifications/roots/list_changed": [(LEGACY, "notification", frozenset({C}), ("roots", "listChanged"), "sender")],
    "elicitation/create": [(("2025-06-18", "2025-11-25"), "request", frozenset({S}), ("elicitation",), "receiver"),
                           (("2026-07-28",), "input_request", frozenset({S}), ("elicitation",), "receiver")],
    "notifications/elicitation/complete": [(("2025-11-25",), "notification", frozenset({S}), ("elicitation", "url"), "receiver")],
    "tasks/get": [(("2025-11-25",), "request", BOTH, ("tasks",), "receiver"),
                  (("2026-07-28",), "request", frozenset({C}), TASKS_EXT, "both")],
    "tasks/result": [(("2025-11-25",), "request", BOTH, ("tasks",), "receiver")],
    "tasks/list": [(("2025-11-25",), "request", BOTH, ("tasks", "list"), "receiver")],
    "tasks/cancel": [(("2025-11-25",), "request", BOTH, ("tasks", "cancel"), "receiver"),
                     (("2026-07-28",), "request", frozenset({C}), TASKS_EXT, "both")],
    "notifications/tasks/status": [(("2025-11-25",), "notification", BOTH, ("tasks",), "sender")],
    "server/discover": [(("2026-07-28",), "request", frozenset({C}), None, None)],
    "subscriptions/listen": [(("2026-07-28",), "request", frozenset({C}), None, None)],
    "notifications/subscriptions/acknowledged": [(("2026-07-28",), "notification", frozenset({S}), None, None)],
    "tasks/update": [(("2026-07-28",), "request", frozenset({C}), TASKS_EXT, "both")],
    "notifications/tasks": [(("2026-07-28",), "notification", frozenset({S}), TASKS_EXT, "both")],
}

SPEC_CASES = [(m, rev, *row[1:]) for m, rows in SPEC.items() for row in rows for rev in row[0]]


def _json_table() -> dict:
    return json.loads(resources.files("mcptap.protocol").joinpath("data/mcp-methods.json").read_text())


def test_revision_sets_partition_revisions():
    assert REVISIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
    assert LEGACY_REVISIONS | MODERN_REVISIONS == set(REVISIONS)
    assert not LEGACY_REVISIONS & MODERN_REVISIONS
    assert MODERN_REVISIONS == {"2026-07-28"}


@pytest.mark.parametrize("value,expected", [
    ("draft", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("2024-11-05", "2024-11-05"),
    ("2025-11-25", "2025-11-25"), ("2099-01-01", None), ("DRAFT", None), (" 2025-06-18", None),
    ("", None), (None, None), (20250618, None), (["draft"], None),
])
def test_normalize_revision(value, expected):
    assert normalize_revision(value) == expected


def test_is_modern_and_batching():
    assert [is_modern(r) for r in REVISIONS] == [False, False, False, False, True]
    assert is_modern("draft") and not is_modern(None) and not is_modern("2099-01-01")
    assert [batching_allowed(r) for r in REVISIONS] == [False, True, False, False, False]
    assert not batching_allowed(None) and not batching_allowed("draft")


def test_enforcement_should_is_warn_must_is_error():
    assert [enforcement(r) for r in REVISIONS] == [Severity.WARN, Severity.WARN, Severity.ERROR,
                                                   Severity.ERROR, Severity.ERROR]
    assert enforcement("draft") is Severity.ERROR
    assert enforcement(None) is Severity.WARN  # unknown revision: cannot claim a MUST
    assert rules.capability_strength("2025-03-26") == "SHOULD"
    assert rules.capability_strength("2025-06-18") == "MUST"


def test_spec_table_covers_every_method_in_the_json():
    assert rules.ALL_METHODS == set(SPEC)
    assert {m["method"] for m in _json_table()["methods"]} == set(SPEC)


@pytest.mark.parametrize("method,rev,kind,senders,gate,declared_by", SPEC_CASES)
def test_rule_matches_spec_facts(method, rev, kind, senders, gate, declared_by):
    rule = method_rule(method, rev)
    assert rule is not None
    assert (rule.method, rule.kind, rule.senders, rule.gate, rule.declared_by) == (
        method, kind, senders, gate, declared_by)


def test_every_json_entry_and_version_resolves():
    for entry in _json_table()["methods"]:
        for version in entry["versions"]:
            rule = method_rule(entry["method"], version)
            assert rule is not None, (entry["method"], version)
            if "version_overrides" not in entry:
                assert rule.kind == entry["kind"]
                assert {d.value for d in rule.senders} == {
                    {"client->server": "c2s", "server->client": "s2c"}[d] for d in entry["directions"]}


@pytest.mark.parametrize("method", sorted(SPEC))
def test_revisions_of_and_absence(method):
    expected = tuple(r for r in REVISIONS if any(r in row[0] for row in SPEC[method]))
    assert revisions_of(method) == expected
    for rev in REVISIONS:
        assert (method_rule(method, rev) is None) == (rev not in expected)


def test_draft_is_an_alias_of_2026_07_28():
    for m in rules.ALL_METHODS:
        assert method_rule(m, "draft") is method_rule(m, "2026-07-28")
    assert rules.rules_for("draft") is rules.rules_for("2026-07-28")


def test_unknown_method_and_revision():
    assert method_rule("vendor.example/do", "2025-06-18") is None
    assert method_rule("vendor.example/do", None) is None
    assert revisions_of("vendor.example/do") == ()
    # An unknown revision string falls back to the union, like None.
    assert method_rule("tools/call", "1999-01-01") is method_rule("tools/call", None)
    with pytest.raises(KeyError):
        rules.rules_for("1999-01-01")


def test_union_is_most_permissive():
    assert method_rule("notifications/progress", None).senders == BOTH
    assert method_rule("ping", None).allowed_before_initialized
    # gates that differ between revisions are dropped
    assert method_rule("completion/complete", None).gate is None
    assert method_rule("tasks/get", None).gate is None
    assert method_rule("tasks/get", None).senders == BOTH
    # a gate every revision agrees on is kept
    assert method_rule("tools/call", None).gate == ("tools",)
    # on the wire with an unknown revision, sampling is a JSON-RPC request
    assert method_rule("sampling/createMessage", None).kind == "request"
    # conditionals only present in some revisions are not part of the union
    assert method_rule("sampling/createMessage", None).conditional == ()


def test_allowed_before_initialized_flags():
    flagged = {m for m in rules.ALL_METHODS if method_rule(m, None).allowed_before_initialized}
    assert flagged == {"initialize", "ping", "notifications/message"}


def test_removed_before():
    assert rules.removed_before("ping", "2026-07-28")
    assert rules.removed_before("resources/subscribe", "draft")
    assert not rules.removed_before("ping", "2025-11-25")
    assert not rules.removed_before("server/discover", "2025-06-18")  # not yet, not removed
    assert not rules.removed_before("ping", None)
    assert not rules.removed_before("nope", "2026-07-28")


def _cond(method, rev, sub):
    return next(c for c in method_rule(method, rev).conditional if c.gate[-1] == sub)


def test_conditionals_per_revision():
    assert method_rule("tools/call", "2025-06-18").conditional == ()
    assert [c.gate for c in method_rule("tools/call", "2025-11-25").conditional] == [
        ("tasks", "requests", "tools", "call")]
    assert method_rule("tools/call", "2026-07-28").conditional == ()
    gates = {c.gate for c in method_rule("sampling/createMessage", "2026-07-28").conditional}
    assert gates == {("sampling", "tools"), ("sampling", "context")}  # no tasks in 2026
    assert method_rule("elicitation/create", "2025-06-18").conditional == ()


def test_conditional_predicates():
    url = _cond("elicitation/create", "2025-11-25", "url")
    form = _cond("elicitation/create", "2025-11-25", "form")
    assert url.applies({"mode": "url"}) and not url.applies({}) and not url.applies(None)
    assert not url.applies({"mode": "form"})
    assert form.applies({}) and form.applies(None) and form.applies({"mode": "form"})
    assert form.applies({"mode": None}) and not form.applies({"mode": "url"})
    assert form.empty_parent_ok and not url.empty_parent_ok
    tools = _cond("sampling/createMessage", "2025-11-25", "tools")
    assert tools.applies({"tools": []}) and tools.applies({"toolChoice": {"mode": "auto"}})
    assert not tools.applies({"messages": []}) and not tools.applies({"tools": None})
    ctx = _cond("sampling/createMessage", "2025-11-25", "context")
    assert ctx.applies({"includeContext": "thisServer"}) and ctx.applies({"includeContext": "allServers"})
    assert not ctx.applies({"includeContext": "none"}) and not ctx.applies({})
    assert not ctx.applies({"includeContext": 3})
    assert ctx.weak and not tools.weak
    task = _cond("tools/call", "2025-11-25", "call")
    assert task.applies({"name": "x", "task": {"ttl": 1000}}) and not task.applies({"name": "x"})
    assert not task.applies("not a dict")


@pytest.mark.parametrize("when", ["params.mode != 'url'", "always", "params.x == 'a' or y absent"])
def test_unsupported_condition_text_is_rejected(when):
    with pytest.raises(ValueError, match="unsupported condition"):
        rules._compile_when(when)


def test_gate_path_keeps_prefixed_extension_names_whole():
    assert rules.gate_path("tasks", "requests.tools.call") == ("tasks", "requests", "tools", "call")
    assert rules.gate_path("extensions", "io.modelcontextprotocol/tasks") == TASKS_EXT
    assert rules.gate_path("tools", None) == ("tools",)
    assert rules.gate_path(None, None) is None


def test_derived_result_tables():
    assert rules.INPUT_REQUIRED_METHODS == {"prompts/get", "resources/read", "tools/call"}
    assert dict(rules.EXTENSION_RESULT_TYPES) == {"task": TASKS_EXT}


def test_rules_are_frozen():
    rule = method_rule("tools/call", "2025-06-18")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.gate = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        rules.rules_for("2025-06-18")["x"] = rule  # type: ignore[index]
