"""capabilities.py: table-driven capability checks for every method of every
revision, plus direction, era, unknown-method and 2026-07-28 result checks.

Expected gates come from the hand-written spec table in test_rules.py
(mcp-spec-facts §1), not from rules.py."""

from __future__ import annotations

import copy

import pytest

from mcptap.model import Direction, Kind, Severity
from mcptap.protocol import rules
from mcptap.protocol.capabilities import CLIENT_CAPS_META, check_message, check_result

try:  # sibling test module: rootdir-relative import without tests/protocol/__init__.py
    from test_rules import SPEC_CASES
except ImportError:  # pragma: no cover - when tests/protocol becomes a package
    from .test_rules import SPEC_CASES

C, S = Direction.C2S, Direction.S2C
REQ, NOTIF = Kind.REQUEST, Kind.NOTIFICATION
ENFORCEMENT = {"2024-11-05": Severity.WARN, "2025-03-26": Severity.WARN, "2025-06-18": Severity.ERROR,
               "2025-11-25": Severity.ERROR, "2026-07-28": Severity.ERROR}
PARTY = {C: "client", S: "server"}
KIND = {"request": REQ, "notification": NOTIF}


def nested(path: tuple[str, ...], leaf=None) -> dict:
    """{"a": {"b": {}}} for ("a", "b"): a capability declared as an empty object."""
    node: dict = {} if leaf is None else leaf
    for key in reversed(path):
        node = {key: node}
    return node


def gated_parties(declared_by: str, sender: Direction) -> list[Direction]:
    return {"sender": [sender], "receiver": [sender.peer], "both": [C, S]}[declared_by]


def near_miss_caps(gate: tuple[str, ...]) -> list[dict]:
    """Capability objects that almost declare ``gate``: parent present, leaf
    missing or false; or nothing at all."""
    out = [{}, {"experimental": {}}]
    if len(gate) > 1:
        out += [nested(gate[:-1]), nested(gate[:-1], {gate[-1]: False}), nested(gate[:-1], {gate[-1]: None})]
    else:
        out += [{gate[0]: None}, {gate[0]: False}]
    return out


GATED = [c for c in SPEC_CASES if c[2] != "input_request" and c[4] is not None]
UNGATED = [c for c in SPEC_CASES if c[2] != "input_request" and c[4] is None]


def _ids(case):
    return f"{case[0]}@{case[1]}"


@pytest.mark.parametrize("case", GATED, ids=_ids)
def test_gate_declared_is_compliant(case):
    method, rev, kind, senders, gate, declared_by = case
    for sender in senders:
        caps = {C: None, S: None}
        for p in gated_parties(declared_by, sender):
            caps[p] = nested(gate)
        # the party that does not gate the message declares nothing at all
        caps = {d: ({} if c is None else c) for d, c in caps.items()}
        assert check_message(method, KIND[kind], sender, {}, rev, caps[C], caps[S]) == []
        # also with params absent
        assert check_message(method, KIND[kind], sender, None, rev, caps[C], caps[S]) == []


@pytest.mark.parametrize("case", GATED, ids=_ids)
def test_gate_missing_is_exactly_one_not_negotiated(case):
    method, rev, kind, senders, gate, declared_by = case
    path = ".".join(gate)
    for sender in senders:
        for missing in gated_parties(declared_by, sender):
            for bad in near_miss_caps(gate):
                # everyone else declares the gate, so the check must look at the right party
                caps = {C: nested(gate), S: nested(gate)}
                caps[missing] = copy.deepcopy(bad)
                found = check_message(method, KIND[kind], sender, {}, rev, caps[C], caps[S])
                assert [f.code for f in found] == ["capability.not_negotiated"], (sender, missing, bad)
                f = found[0]
                assert f.severity is ENFORCEMENT[rev]
                assert f.data["capability"] == path
                assert f.data["declared_by"] == PARTY[missing]
                assert method in f.message and f"capabilities.{path}" in f.message
                assert f"the {PARTY[missing]} did not declare" in f.message
                strength = "SHOULD" if ENFORCEMENT[rev] is Severity.WARN else "MUST"
                assert f"({rev}: {strength})" in f.message


@pytest.mark.parametrize("case", GATED, ids=_ids)
def test_unknown_caps_skip_the_check(case):
    method, rev, kind, senders, gate, declared_by = case
    for sender in senders:
        parties = gated_parties(declared_by, sender)
        caps = {C: {}, S: {}}
        for p in parties:
            caps[p] = None
        assert check_message(method, KIND[kind], sender, {}, rev, caps[C], caps[S]) == []


@pytest.mark.parametrize("case", UNGATED, ids=_ids)
def test_ungated_methods_need_no_capability(case):
    method, rev, kind, senders, *_ = case
    for sender in senders:
        assert check_message(method, KIND[kind], sender, {}, rev, {}, {}) == []


@pytest.mark.parametrize("case", [c for c in SPEC_CASES if c[2] != "input_request" and len(c[3]) == 1],
                         ids=_ids)
def test_wrong_sender_is_flagged(case):
    method, rev, kind, senders, gate, _ = case
    (only,) = senders
    found = check_message(method, KIND[kind], only.peer, {}, rev, {}, {})
    assert [f.code for f in found] == ["capability.wrong_direction"]
    assert found[0].severity is Severity.ERROR
    assert method in found[0].message and f"sent by the {PARTY[only.peer]}" in found[0].message


def test_wrong_direction_examples():
    f = check_message("tools/call", REQ, S, {"name": "x"}, "2025-06-18", {}, {"tools": {}})
    assert [x.code for x in f] == ["capability.wrong_direction"]
    f = check_message("notifications/tools/list_changed", NOTIF, C, None, "2025-06-18", {}, {})
    assert [x.code for x in f] == ["capability.wrong_direction"]
    # progress flows both ways in legacy revisions, only server->client in 2026-07-28
    assert check_message("notifications/progress", NOTIF, C, {}, "2025-11-25", {}, {}) == []
    f = check_message("notifications/progress", NOTIF, C, {}, "2026-07-28", {}, {})
    assert [x.code for x in f] == ["capability.wrong_direction"]


@pytest.mark.parametrize("rev", [*rules.REVISIONS, "draft", None, "1999-01-01"])
@pytest.mark.parametrize("method", ["vendor.example/custom", "experimental/foo", "tools/calls", ""])
def test_unknown_method_is_only_a_warning(rev, method):
    for kind, sender in [(REQ, C), (NOTIF, S)]:
        found = check_message(method, kind, sender, {}, rev, {}, {})
        assert [(f.code, f.severity) for f in found] == [("capability.unknown_method", Severity.WARN)]
        assert found[0].data == {"method": method}


@pytest.mark.parametrize("method,kind,sender,rev,code,severity", [
    ("initialize", REQ, C, "2026-07-28", "lifecycle.wrong_era", Severity.ERROR),
    ("initialize", REQ, C, "draft", "lifecycle.wrong_era", Severity.ERROR),
    ("notifications/initialized", NOTIF, C, "2026-07-28", "lifecycle.wrong_era", Severity.ERROR),
    ("ping", REQ, C, "2026-07-28", "capability.not_in_revision", Severity.ERROR),
    ("ping", REQ, S, "draft", "capability.not_in_revision", Severity.ERROR),
    ("logging/setLevel", REQ, C, "2026-07-28", "capability.not_in_revision", Severity.ERROR),
    ("resources/subscribe", REQ, C, "2026-07-28", "capability.not_in_revision", Severity.ERROR),
    ("notifications/roots/list_changed", NOTIF, C, "2026-07-28", "capability.not_in_revision", Severity.WARN),
    ("notifications/elicitation/complete", NOTIF, S, "2026-07-28", "capability.not_in_revision", Severity.WARN),
    ("elicitation/create", REQ, S, "2024-11-05", "capability.not_in_revision", Severity.WARN),
    ("server/discover", REQ, C, "2025-06-18", "capability.not_in_revision", Severity.WARN),
    ("tasks/update", REQ, C, "2025-11-25", "capability.not_in_revision", Severity.WARN),
    ("tasks/get", REQ, C, "2025-06-18", "capability.not_in_revision", Severity.WARN),
    # 2026-07-28 has no server requests: these exist only as embedded input requests
    ("sampling/createMessage", REQ, S, "2026-07-28", "lifecycle.wrong_era", Severity.ERROR),
    ("roots/list", REQ, S, "draft", "lifecycle.wrong_era", Severity.ERROR),
    ("elicitation/create", REQ, S, "2026-07-28", "lifecycle.wrong_era", Severity.ERROR),
])
def test_method_outside_its_revision(method, kind, sender, rev, code, severity):
    found = check_message(method, kind, sender, {}, rev, {}, {})
    assert [(f.code, f.severity) for f in found] == [(code, severity)]
    assert method in found[0].message


def test_legacy_handshake_is_fine_in_legacy_revisions():
    for rev in rules.LEGACY_REVISIONS:
        assert check_message("initialize", REQ, C, {"protocolVersion": rev}, rev, None, None) == []
        assert check_message("notifications/initialized", NOTIF, C, None, rev, {}, {}) == []


def test_draft_alias_gives_the_same_findings():
    cases = [("tools/call", REQ, C, {}, {}, {}), ("notifications/tools/list_changed", NOTIF, S, None, {}, {}),
             ("ping", REQ, C, {}, {}, {}), ("tasks/get", REQ, C, {}, {}, {"extensions": {}})]
    for method, kind, d, params, cc, sc in cases:
        a = check_message(method, kind, d, params, "draft", cc, sc)
        b = check_message(method, kind, d, params, "2026-07-28", cc, sc)
        assert a == b and a


def test_unknown_revision_uses_the_union_with_should_strength():
    for rev in (None, "1999-01-01"):
        f = check_message("tools/call", REQ, C, {"name": "x"}, rev, {}, {})
        assert [(x.code, x.severity) for x in f] == [("capability.not_negotiated", Severity.WARN)]
        assert "revision unknown" in f[0].message
        # gates that differ between revisions are not enforced without a revision
        assert check_message("completion/complete", REQ, C, {}, rev, {}, {}) == []
        assert check_message("notifications/progress", NOTIF, C, {}, rev, {}, {}) == []


def test_non_message_kinds_are_ignored():
    for kind in (Kind.RESPONSE, Kind.ERROR, Kind.BATCH, Kind.INVALID, Kind.NON_JSON):
        assert check_message("tools/call", kind, S, {}, "2025-06-18", {}, {}) == []


def test_b11_roots_list_without_roots_capability():
    # cases/B11 wire #5: roots/list although the client declared no roots capability
    f = check_message("roots/list", REQ, S, None, "2025-06-18", {}, {"tools": {"listChanged": True}})
    assert [(x.code, x.severity) for x in f] == [("capability.not_negotiated", Severity.ERROR)]
    assert f[0].message == "roots/list sent but the client did not declare capabilities.roots (2025-06-18: MUST)"
    assert f[0].data["capability"] == "roots" and f[0].data["declared_by"] == "client"
    # the early list_changed notifications of B11 come before capabilities are known
    assert check_message("notifications/tools/list_changed", NOTIF, S, None, "2025-06-18", {}, None) == []


def test_brief_example_message():
    f = check_message("notifications/tools/list_changed", NOTIF, S, None, "2025-06-18", {}, {"tools": {}})
    assert f[0].message == ("notifications/tools/list_changed sent but the server did not declare "
                            "capabilities.tools.listChanged (2025-06-18: MUST)")
    assert {"capability": "tools.listChanged", "declared_by": "server"}.items() <= f[0].data.items()


# --- param-dependent (conditional) gates -----------------------------------------

def _codes(found):
    return [(f.code, f.severity, f.data.get("capability")) for f in found]


NN = "capability.not_negotiated"
E, W = Severity.ERROR, Severity.WARN


@pytest.mark.parametrize("method,sender,params,rev,client,server,expected", [
    # elicitation modes (2025-11-25+): {} means form only
    ("elicitation/create", S, {"mode": "url", "url": "https://x"}, "2025-11-25", {"elicitation": {}}, {},
     [(NN, E, "elicitation.url")]),
    ("elicitation/create", S, {"mode": "url"}, "2025-11-25", {"elicitation": {"url": {}}}, {}, []),
    ("elicitation/create", S, {}, "2025-11-25", {"elicitation": {}}, {}, []),
    ("elicitation/create", S, {"mode": "form"}, "2025-11-25", {"elicitation": {"form": {}}}, {}, []),
    ("elicitation/create", S, {}, "2025-11-25", {"elicitation": {"url": {}}}, {}, [(NN, E, "elicitation.form")]),
    ("elicitation/create", S, {"mode": "form"}, "2025-11-25", {"elicitation": {"url": {}}}, {},
     [(NN, E, "elicitation.form")]),
    ("elicitation/create", S, {"mode": "url"}, "2025-06-18", {"elicitation": {}}, {}, []),  # no modes yet
    ("elicitation/create", S, {"mode": "url"}, "2025-11-25", {}, {}, [(NN, E, "elicitation")]),  # base only
    # sampling tools / context
    ("sampling/createMessage", S, {"tools": [{"name": "t"}]}, "2025-11-25", {"sampling": {}}, {},
     [(NN, E, "sampling.tools")]),
    ("sampling/createMessage", S, {"toolChoice": {"mode": "auto"}}, "2025-11-25", {"sampling": {"tools": {}}}, {}, []),
    ("sampling/createMessage", S, {"tools": []}, "2025-06-18", {"sampling": {}}, {}, []),
    ("sampling/createMessage", S, {"includeContext": "thisServer"}, "2025-11-25", {"sampling": {}}, {},
     [(NN, W, "sampling.context")]),  # SHOULD-level even in a MUST revision
    ("sampling/createMessage", S, {"includeContext": "none"}, "2025-11-25", {"sampling": {}}, {}, []),
    ("sampling/createMessage", S, {"includeContext": "allServers"}, "2025-11-25",
     {"sampling": {"context": {}}}, {}, []),
    ("sampling/createMessage", S, {"tools": [], "includeContext": "allServers"}, "2025-11-25",
     {"sampling": {}}, {}, [(NN, E, "sampling.tools"), (NN, W, "sampling.context")]),
    # task augmentation (2025-11-25): the receiver's tasks.requests.<...>
    ("tools/call", C, {"name": "x", "task": {}}, "2025-11-25", {}, {"tools": {}, "tasks": {}},
     [(NN, E, "tasks.requests.tools.call")]),
    ("tools/call", C, {"name": "x", "task": {}}, "2025-11-25", {"tasks": {"requests": {"tools": {"call": {}}}}},
     {"tools": {}}, [(NN, E, "tasks.requests.tools.call")]),  # declared by the wrong side
    ("tools/call", C, {"name": "x", "task": {}}, "2025-11-25", {},
     {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}, []),
    ("tools/call", C, {"name": "x", "task": {}}, "2025-06-18", {}, {"tools": {}}, []),
    ("sampling/createMessage", S, {"task": {"ttl": 1}}, "2025-11-25", {"sampling": {}}, {},
     [(NN, E, "tasks.requests.sampling.createMessage")]),
    ("elicitation/create", S, {"task": {}}, "2025-11-25",
     {"elicitation": {}, "tasks": {"requests": {"elicitation": {"create": {}}}}}, {}, []),
    # tasks/list and tasks/cancel need their own sub-capabilities; either side may be the receiver
    ("tasks/list", C, {}, "2025-11-25", {}, {"tasks": {"cancel": {}}}, [(NN, E, "tasks.list")]),
    ("tasks/cancel", S, {"taskId": "t"}, "2025-11-25", {"tasks": {"list": {}}}, {}, [(NN, E, "tasks.cancel")]),
    ("tasks/get", S, {"taskId": "t"}, "2025-11-25", {"tasks": {}}, {}, []),
    # a false leaf declares nothing
    ("resources/subscribe", C, {"uri": "f:///a"}, "2025-03-26", {}, {"resources": {"subscribe": False}},
     [(NN, W, "resources.subscribe")]),
])
def test_conditional_gates(method, sender, params, rev, client, server, expected):
    assert _codes(check_message(method, REQ, sender, params, rev, client, server)) == expected


def test_conditional_finding_names_the_condition():
    f = check_message("sampling/createMessage", REQ, S, {"tools": []}, "2025-11-25", {"sampling": {}}, {})
    assert f[0].data["condition"] == "params.tools or params.toolChoice present"
    assert "capabilities.sampling.tools" in f[0].message and "the client did not declare" in f[0].message


def test_modern_client_caps_from_request_meta():
    ext = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    params = {"taskId": "t", "_meta": {CLIENT_CAPS_META: {}}}
    f = check_message("tasks/get", REQ, C, params, "2026-07-28", None, ext)
    assert _codes(f) == [(NN, E, "extensions.io.modelcontextprotocol/tasks")]
    assert f[0].data["declared_by"] == "client"
    params["_meta"][CLIENT_CAPS_META] = ext
    assert check_message("tasks/get", REQ, C, params, "2026-07-28", None, ext) == []
    # no _meta: client capabilities unknown, only the server side is checked
    f = check_message("tasks/get", REQ, C, {"taskId": "t"}, "2026-07-28", None, {})
    assert [x.data["declared_by"] for x in f] == ["server"]


# --- 2026-07-28 results ------------------------------------------------------------

def _meta_caps(caps):
    return {"_meta": {CLIENT_CAPS_META: caps}}


def test_results_outside_2026_are_not_checked():
    for rev in (*rules.LEGACY_REVISIONS, None, "bogus"):
        assert check_result("tools/list", {"tools": []}, {}, rev, {}, {}) == []
        assert check_result("tools/list", {"resultType": "zzz"}, {}, rev, {}, {}) == []


@pytest.mark.parametrize("result,method,expected", [
    ({"tools": []}, "tools/list", [("lifecycle.result_type_missing", W)]),
    ({"resultType": "complete", "tools": []}, "tools/list", []),
    ({"resultType": "partial"}, "tools/list", [("lifecycle.result_type_invalid", E)]),
    ({"resultType": 1}, "tools/list", [("lifecycle.result_type_invalid", E)]),
    ({"resultType": None}, "tools/list", [("lifecycle.result_type_invalid", E)]),
    ({"resultType": "input_required", "requestState": "s"}, "tools/list", [("lifecycle.result_type_invalid", E)]),
    ({"resultType": "input_required", "requestState": "s"}, "completion/complete",
     [("lifecycle.result_type_invalid", E)]),
    ({"resultType": "input_required", "requestState": "s"}, "tools/call", []),
    ({"resultType": "input_required", "requestState": "s"}, "prompts/get", []),
    ({"resultType": "input_required", "requestState": "s"}, "resources/read", []),
    ({"resultType": "input_required"}, "tools/call", [("lifecycle.input_required_invalid", E)]),
    ({"resultType": "input_required", "inputRequests": []}, "tools/call", [("lifecycle.input_required_invalid", E)]),
    ({"resultType": "input_required", "inputRequests": {"a": {"method": "ping"}}}, "tools/call",
     [("lifecycle.input_required_invalid", E)]),
    ({"resultType": "input_required", "inputRequests": {"a": "x"}}, "tools/call",
     [("lifecycle.input_required_invalid", E)]),
    ({"resultType": "input_required", "inputRequests": {"a": {"method": "roots/list"}}}, "tools/call", []),
])
def test_result_type(result, method, expected):
    caps = {"roots": {}, "sampling": {}, "elicitation": {}}
    found = check_result(method, result, _meta_caps(caps), "2026-07-28", None, None)
    assert [(f.code, f.severity) for f in found] == expected
    assert check_result(method, result, _meta_caps(caps), "draft", None, None) == found
    if found:
        assert method in found[0].message


INPUT_REQUESTS = [c for c in SPEC_CASES if c[2] == "input_request"]


@pytest.mark.parametrize("case", INPUT_REQUESTS, ids=_ids)
@pytest.mark.parametrize("outer", sorted(rules.INPUT_REQUIRED_METHODS))
def test_embedded_input_requests_need_the_request_clientcapabilities(case, outer):
    method, rev, _, _, gate, _ = case
    result = {"resultType": "input_required", "inputRequests": {"k1": {"method": method, "params": {}}}}
    assert check_result(outer, result, _meta_caps(nested(gate)), rev, None, None) == []
    assert check_result(outer, result, {}, rev, nested(gate), {}) == []  # caller-supplied caps win
    for bad in near_miss_caps(gate):
        found = check_result(outer, result, _meta_caps(bad), rev, None, None)
        assert _codes(found) == [(NN, E, ".".join(gate))]
        assert found[0].data["declared_by"] == "client" and found[0].data["via"] == outer
        assert method in found[0].message and "k1" in found[0].message
    # clientCapabilities unknown: structure is still checked, capabilities are not
    assert check_result(outer, result, None, rev, None, None) == []


def test_embedded_input_request_conditionals():
    result = {"resultType": "input_required", "inputRequests": {
        "a": {"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}},
        "b": {"method": "sampling/createMessage", "params": {"tools": [], "messages": []}},
    }}
    found = check_result("tools/call", result, _meta_caps({"elicitation": {}, "sampling": {}}), "2026-07-28",
                         None, None)
    assert _codes(found) == [(NN, E, "elicitation.url"), (NN, E, "sampling.tools")]
    ok = _meta_caps({"elicitation": {"url": {}}, "sampling": {"tools": {}}})
    assert check_result("tools/call", result, ok, "2026-07-28", None, None) == []


def test_extension_result_type_needs_the_extension():
    ext = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    result = {"resultType": "task", "task": {"taskId": "t"}}
    assert check_result("tools/call", result, _meta_caps(ext), "2026-07-28", None, None) == []
    found = check_result("tools/call", result, _meta_caps({}), "2026-07-28", None, None)
    assert [(f.code, f.data["capability"]) for f in found] == [
        ("lifecycle.result_type_invalid", "extensions.io.modelcontextprotocol/tasks")]
    assert check_result("tools/call", result, None, "2026-07-28", None, None) == []


def test_garbage_results_never_raise():
    for result in (None, [], "x", 3, {"resultType": "input_required", "inputRequests": {"a": None}},
                   {"resultType": "input_required", "inputRequests": {"a": {"method": 5}}}):
        check_result("tools/call", result, {"_meta": "x"}, "2026-07-28", None, None)  # type: ignore[arg-type]
    for params in ("x", [1], 3):
        check_message("elicitation/create", REQ, S, params, "2025-11-25", {"elicitation": []}, {})  # type: ignore[arg-type]
        check_message("tasks/get", REQ, C, params, "2026-07-28", None, {"extensions": "x"})  # type: ignore[arg-type]
