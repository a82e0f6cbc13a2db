"""protocol/shape_fast.py: the quick check says "valid" only where the wire
model's own validator (``by_name=False``, as shapes.check calls it) accepts,
on every model the shape surfaces name; it covers every one of them on the
installed mcp-types; and it does say "valid" for the common messages (else
it would be a cost, not a saving)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcptap.model import Direction, Kind
from mcptap.protocol import shape_fast, shapes

pytestmark = pytest.mark.skipif(not shapes.available(), reason="mcp-types not installed")

ROOT = Path(__file__).resolve().parents[2]


def _models() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in shapes.SURFACES:
        for (method, revision), model in sorted(shapes.surface(name).items()):
            out[f"{name} {method} {revision}"] = model
    out["CreateTaskResult"] = shapes._model(Direction.S2C, Kind.RESPONSE, "(CreateTaskResult)", "2025-11-25")
    return out


MODELS = _models()
QUICK = {key: shape_fast.compile_model(m) for key, m in MODELS.items()}


def _accepts(model: Any, body: Any) -> bool:
    arms = model.__args__ if hasattr(model, "__args__") else (model,)
    for arm in arms:
        try:
            arm.__pydantic_validator__.validate_python(body, by_name=False)
            return True
        except Exception:  # noqa: BLE001 - any refusal
            pass
    return False


def test_every_surface_model_gets_a_quick_check() -> None:
    refused = [key for key, q in QUICK.items() if q is None]
    assert not refused, f"outside the quick subset (shapes fall back to pydantic for these): {refused}"


# ---- instances drawn from the core schema itself, with wrong values mixed in ----

WRONG = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, -1, 1, 2 ** 53, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 63, 2 ** 64 + 3, 10 ** 400]),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1.5, -1.5, 1e300, 2.0 ** 60, float("inf"), float("-inf"), float("nan")]),
    st.sampled_from(["", "2.0", "text", "image", "user", "assistant", "1", "true", "info", "object"]),
    # built fresh each time: st.just's one object would be shared by bodies, and _one_change's
    # mutations could then put a container inside itself
    st.builds(list), st.builds(dict), st.builds(lambda: [None]), st.builds(lambda: {"type": "text"}), st.builds(lambda: {1: "x"}),
)


def instance(s: dict[str, Any], refs: dict[str, Any], depth: int, wrong: bool) -> st.SearchStrategy[Any]:
    """Values of core schema ``s``; with ``wrong``, one in eight is a wrong one."""
    right = _right(s, refs, depth, wrong)
    return st.one_of(WRONG, right, right, right, right, right, right, right) if wrong else right


def _right(s: dict[str, Any], refs: dict[str, Any], depth: int, wrong: bool) -> st.SearchStrategy[Any]:
    t = s["type"]
    if t == "definition-ref":
        return st.deferred(lambda: _right(refs[s["schema_ref"]], refs, depth, wrong))
    if t == "definitions":
        return _right(s["schema"], refs, depth, wrong)
    if depth > 5:
        return WRONG
    if t == "any":
        return st.one_of(st.none(), st.integers(), st.text(max_size=3), st.builds(lambda: {"a": [1]}))
    if t == "none":
        return st.none()
    if t == "str":
        return st.text(max_size=4)
    if t == "bool":
        return st.booleans()
    if t == "int":
        return st.integers(min_value=s.get("ge"), max_value=s.get("le")) | st.integers()
    if t == "float":
        return st.floats(min_value=s.get("ge"), max_value=s.get("le")) | st.integers(-3, 3) | st.floats()
    if t == "literal":
        return st.sampled_from(s["expected"])
    if t == "nullable":
        return st.none() | instance(s["schema"], refs, depth, wrong)
    if t == "default":
        return instance(s["schema"], refs, depth, wrong)
    if t == "list":
        return st.lists(instance(s.get("items_schema", {"type": "any"}), refs, depth + 1, wrong), max_size=min(3, s.get("max_length") or 3))
    if t == "dict":
        return st.dictionaries(st.text(max_size=3), instance(s.get("values_schema", {"type": "any"}), refs, depth + 1, wrong), max_size=2)
    if t == "union":
        return st.one_of([instance(c[0] if isinstance(c, tuple) else c, refs, depth, wrong) for c in s["choices"]])
    if t == "model":
        return _object(s["schema"], refs, depth, wrong)
    raise AssertionError(f"no strategy for {t}")


def _object(fields_schema: dict[str, Any], refs: dict[str, Any], depth: int, wrong: bool) -> st.SearchStrategy[Any]:
    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, field in fields_schema["fields"].items():
            alias = field.get("validation_alias", name)
            optional = field["schema"]["type"] == "default"
            roll = draw(st.integers(0, 11))
            if (roll == 0 and wrong) or (optional and roll < 4):
                continue                                    # missing
            key = name if roll == 1 and alias != name else alias   # by name: not the field under by_name=False
            out[key] = draw(instance(field["schema"], refs, depth + 1, wrong))
        if wrong and draw(st.integers(0, 5)) == 0:
            out[draw(st.sampled_from(["extra", "_meta", "type", "x-y"]))] = draw(WRONG)
        return out

    return build()


def _bodies(key: str, wrong: bool) -> st.SearchStrategy[Any]:
    arms = MODELS[key].__args__ if hasattr(MODELS[key], "__args__") else (MODELS[key],)
    return st.one_of([_right(arm.__pydantic_core_schema__, shape_fast.refs_of(arm.__pydantic_core_schema__, {}), 0, wrong) for arm in arms])


def _places(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) inside ``value``."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k))
            _places(v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((value, i))
            _places(v, out)
    return out


@st.composite
def _one_change(draw: Any) -> tuple[str, Any]:
    """A valid body with one change somewhere in it: a value made wrong, a member dropped or added."""
    key = draw(st.sampled_from(sorted(MODELS)))
    body = draw(_bodies(key, wrong=False))
    places = _places(body, [])
    if places:
        container, at = draw(st.sampled_from(places))
        how = draw(st.integers(0, 3))
        if how == 0 and isinstance(container, dict):
            del container[at]
        elif how == 1 and isinstance(container, dict):
            container[draw(st.sampled_from(["type", "_meta", "extra", 1, "uri", "name"]))] = draw(WRONG)
        else:
            container[at] = draw(WRONG)
    return key, body


#: valid bodies changed in one place, and bodies with wrong values anywhere
CASES = st.one_of(_one_change(), st.sampled_from(sorted(MODELS)).flatmap(lambda key: st.tuples(st.just(key), _bodies(key, wrong=True))))


@settings(max_examples=3000, suppress_health_check=list(HealthCheck), deadline=None)
@given(CASES)
def test_quick_valid_means_the_model_accepts(case: tuple[str, Any]) -> None:
    key, body = case
    quick = QUICK[key]
    if quick is not None and quick(body):
        assert _accepts(MODELS[key], body), (key, body)


def _nested(depth: int, kind: type = list) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind is list else {"a": value}
    return value


#: bodies the model refuses, each where a looser check would say "valid"
REFUSED = [
    # a name is not an alias under by_name=False
    ("SERVER_NOTIFICATIONS notifications/progress 2025-11-25", {"jsonrpc": "2.0", "method": "notifications/progress",
                                                                "params": {"progress_token": 1, "progress": 1}}),
    ("SERVER_RESULTS tools/call 2025-11-25", {"content": [{"type": "text", "text": "a", "annotations": {"priority": 1.5}}]}),   # le 1.0
    ("SERVER_RESULTS tools/call 2025-11-25", {"content": [{"type": "text"}]}),                                                  # required text
    ("SERVER_RESULTS tools/call 2025-11-25", {"content": [{"type": ["text"], "text": "a"}]}),                                   # unhashable tag
    ("SERVER_RESULTS tools/call 2025-11-25", {"content": [], "_meta": {1: 2}}),                                                 # dict[str, Any]
    # a model that keeps its extra members needs string keys for them (one that ignores them does not)
    ("SERVER_RESULTS resources/read 2026-07-28", {"_meta": {1: "x"}, "resultType": "x", "cacheScope": [None], "contents": [None]}),
    # … and keys that are UTF-8 (json.loads, unlike orjson, lets a lone surrogate through)
    ("SERVER_RESULTS ping 2025-11-25", {"\ud800": 1}),
    ("CLIENT_REQUESTS prompts/list 2026-07-28", {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "x-\udfff": 1}}}),
    # pydantic-core refuses recursive values 255 definition-refs deep (2026-07-28's JSONValue)
    ("CLIENT_REQUESTS prompts/list 2026-07-28", {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {"experimental": {"e": {"k": _nested(255)}}},
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
    ("CLIENT_REQUESTS prompts/list 2026-07-28", {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {"experimental": {"e": {"k": _nested(255, dict)}}},
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
]
#: bodies the model accepts that the check leaves to pydantic: a bool for a number, an int that no float holds exactly
NOT_SURE = [
    ("SERVER_NOTIFICATIONS notifications/progress 2025-11-25", {"jsonrpc": "2.0", "method": "notifications/progress",
                                                                "params": {"progressToken": 1, "progress": True}}),
    ("SERVER_NOTIFICATIONS notifications/progress 2025-11-25", {"jsonrpc": "2.0", "method": "notifications/progress",
                                                                "params": {"progressToken": 1, "progress": 2 ** 60 + 1}}),
]


@pytest.mark.parametrize(("key", "body"), REFUSED)
def test_refused_bodies_are_not_sure(key: str, body: Any) -> None:
    assert not _accepts(MODELS[key], body)
    assert QUICK[key](body) is False


@pytest.mark.parametrize(("key", "body"), NOT_SURE)
def test_lax_conversions_are_left_to_pydantic(key: str, body: Any) -> None:
    assert _accepts(MODELS[key], body)
    assert QUICK[key](body) is False
    fs = shapes.check(Direction.S2C, Kind.NOTIFICATION, "notifications/progress", body["params"], "2025-11-25")
    assert fs == []                                          # pydantic's verdict stands


def _capture_payloads() -> list[tuple[str, Any]]:
    """(surface key, body) of the messages of the shipped captures that pydantic accepts."""
    out = []
    for path in sorted((ROOT / "captures").glob("*.jsonl")):
        pending: dict[Any, str] = {}
        revision = None
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue                # the damaged captures' damage
            if not isinstance(rec, dict) or rec.get("type") != "message" or not isinstance(rec.get("json"), dict):
                continue
            msg, d, kind = rec["json"], rec.get("dir"), rec.get("kind")
            revision = rec.get("rev") or revision
            if kind in ("request", "notification") and isinstance(msg.get("method"), str):
                surface = {("c2s", "request"): "CLIENT_REQUESTS", ("s2c", "request"): "SERVER_REQUESTS",
                           ("c2s", "notification"): "CLIENT_NOTIFICATIONS", ("s2c", "notification"): "SERVER_NOTIFICATIONS"}[(d, kind)]
                if kind == "request":
                    pending[(d, json.dumps(msg.get("id")))] = msg["method"]
                out.append((f"{surface} {msg['method']} {revision}", msg))
            elif kind == "response" and "result" in msg:
                method = pending.pop(("c2s" if d == "s2c" else "s2c", json.dumps(msg.get("id"))), None)
                if method:
                    out.append((f"{'SERVER_RESULTS' if d == 's2c' else 'CLIENT_RESULTS'} {method} {revision}", msg["result"]))
    return [(k, b) for k, b in out if k in MODELS and _accepts(MODELS[k], b)]


def test_the_shipped_captures_valid_messages_are_quick() -> None:
    cases = _capture_payloads()
    assert len(cases) > 20
    slow = [(k, b) for k, b in cases if not QUICK[k](b)]
    assert not slow, slow[:3]


@pytest.mark.parametrize("kind", [list, dict])
def test_a_recursive_value_of_moderate_depth_is_still_quick(kind: type) -> None:
    key = "CLIENT_REQUESTS prompts/list 2026-07-28"
    body = {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {"experimental": {"e": {"k": _nested(100, kind)}}},
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "x-é": 1}}}
    assert _accepts(MODELS[key], body)
    assert QUICK[key](body) is True


#: surface -> (sender, kind) of its messages
_SENDERS = {"CLIENT_REQUESTS": (Direction.C2S, Kind.REQUEST), "SERVER_REQUESTS": (Direction.S2C, Kind.REQUEST),
            "CLIENT_NOTIFICATIONS": (Direction.C2S, Kind.NOTIFICATION), "SERVER_NOTIFICATIONS": (Direction.S2C, Kind.NOTIFICATION),
            "CLIENT_RESULTS": (Direction.C2S, Kind.RESPONSE), "SERVER_RESULTS": (Direction.S2C, Kind.RESPONSE)}


@settings(max_examples=1500, suppress_health_check=list(HealthCheck), deadline=None)
@given(CASES, st.sampled_from(["2025-06-18", None]))
def test_a_key_s_checker_finds_what_check_finds(case: tuple[str, Any], other_revision: str | None) -> None:
    """shapes.checker (check's scan: one callable per key, the quick check first)
    gives check's findings for every payload parsed from JSON, valid or not; also under another
    revision of the same method (a pre-2026 era: warnings) and for a revision
    without models (none)."""
    key, body = case
    if key == "CreateTaskResult":
        return
    surface, method, revision = key.split(" ")
    direction, kind = _SENDERS[surface]
    payload = body if kind is Kind.RESPONSE else (body.get("params") if isinstance(body, dict) else body)
    try:
        payload = json.loads(json.dumps(payload))   # as check's scan gives it: parsed from JSON text
    except (TypeError, ValueError):
        assume(False)
    for rev in (revision, other_revision or "1999-01-01"):
        want = [f.to_json() for f in shapes.check(direction, kind, method, payload, rev)]
        one = _CHECKERS.get((key, rev)) or _CHECKERS.setdefault((key, rev), shapes.checker(direction, kind, method, rev))
        assert [f.to_json() for f in one(payload)] == want, (key, rev, payload)
        # a fresh one too: its first payload goes through the whole quick check (a kept one may
        # already check a request's params alone: a body passed before)
        assert [f.to_json() for f in shapes.checker(direction, kind, method, rev)(payload)] == want, (key, rev, payload)


#: checkers kept across the examples, as check's scan keeps them
_CHECKERS: dict[tuple[str, str], Any] = {}


def test_a_request_s_params_alone_once_a_body_passed() -> None:
    """After one body passed the whole quick check, a request's checker checks
    the params alone, and still finds what check finds in bad ones."""
    one = shapes.checker(Direction.C2S, Kind.REQUEST, "tools/call", "2025-11-25")
    assert one({"name": "a", "arguments": {"x": 1}}) == []
    for bad in ({"name": 3}, {"arguments": {}}, {"name": "a", "arguments": [1]}, {"name": "a", "task": {"ttl": "x"}}):
        want = [f.to_json() for f in shapes.check(Direction.C2S, Kind.REQUEST, "tools/call", bad, "2025-11-25")]
        assert want and [f.to_json() for f in one(bad)] == want
    assert shape_fast.compile_model(MODELS["CLIENT_REQUESTS tools/call 2025-11-25"], "params") is not None
    assert shape_fast.compile_model(MODELS["CLIENT_REQUESTS tools/call 2025-11-25"], "nothing") is None


def _generated_calls(quick: Any, body: Any) -> tuple[bool, int]:
    """(the check's verdict, how many generated functions it entered)."""
    import sys

    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith("<shape_fast"):
            calls[0] += 1

    sys.setprofile(count)
    try:
        verdict = bool(quick(body))
    finally:
        sys.setprofile(None)
    return verdict, calls[0]


def test_the_common_messages_take_few_generated_calls() -> None:
    """A function that only calls another is that other one, a list of a tagged
    union dispatches inline, and the member it dispatches to does not test the
    dict and its tag again: a tools/call result with one text block enters
    the result's check, the content loop and the text block's check; a
    request's params check is the params model's own function."""
    result = QUICK["SERVER_RESULTS tools/call 2025-11-25"]
    assert _generated_calls(result, {"content": [{"type": "text", "text": "a"}]}) == (True, 3)
    assert _generated_calls(result, {"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "x"}]}) == (True, 4)
    assert _generated_calls(result, {"content": [{"type": "text", "text": 1}]})[0] is False
    assert _generated_calls(result, {"content": [{"type": "image", "text": "a"}]})[0] is False
    params = shape_fast.compile_model(MODELS["CLIENT_REQUESTS tools/call 2025-11-25"], "params")
    assert params is not None
    assert _generated_calls(params, {"name": "echo"}) == (True, 1)


QUICK_JSON = {key: shape_fast.compile_model(m, json_keys=True) for key, m in MODELS.items()}


@settings(max_examples=1500, suppress_health_check=list(HealthCheck), deadline=None)
@given(CASES)
def test_the_json_keys_check_agrees_on_values_parsed_from_json(case: tuple[str, Any]) -> None:
    """check's scan asks the checks that skip the key type test (json_keys) only
    about values parsed from JSON text: on those they say what the full checks say."""
    key, body = case
    try:
        parsed = json.loads(json.dumps(body))
    except (TypeError, ValueError):
        assume(False)
    quick, fast = QUICK[key], QUICK_JSON[key]
    assert (fast is None) == (quick is None)
    if quick is not None and fast is not None:
        assert fast(parsed) == quick(parsed), (key, parsed)
    model = MODELS[key]
    if not hasattr(model, "__args__") and isinstance(parsed, dict) and isinstance(parsed.get("params"), dict):
        p, pf = shape_fast.compile_model(model, "params"), shape_fast.compile_model(model, "params", json_keys=True)
        if p is not None and pf is not None:
            assert pf(parsed["params"]) == p(parsed["params"]), (key, parsed)


def test_the_json_keys_check_does_not_test_keys() -> None:
    import sys

    params = shape_fast.compile_model(MODELS["CLIENT_REQUESTS tools/call 2025-11-25"], "params", json_keys=True)
    assert params is not None
    calls = []
    sys.setprofile(lambda frame, event, arg: calls.append(frame.f_code.co_name) if event == "call" else None)
    try:
        assert params({"name": "echo", "arguments": {"text": "a", "n": 1}})
    finally:
        sys.setprofile(None)
    assert len(calls) == 1, calls          # the params model alone: no key loop
