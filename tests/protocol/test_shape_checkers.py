"""``annotator_state.ShapeCheckers`` (the annotator's shape check: one
``shapes.checker`` per key) gives exactly ``shapes.check``'s findings, for
requests, notifications and responses (answers to task-augmented requests
included), payloads valid or not, any revision, in any order of keys."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.model import Direction, Kind
from mcptap.protocol import shapes
from mcptap.protocol.annotator_state import ShapeCheckers

C2S, S2C = Direction.C2S, Direction.S2C
KEYS = [(C2S, Kind.REQUEST, "tools/call"), (S2C, Kind.RESPONSE, "tools/call"), (C2S, Kind.REQUEST, "tools/list"),
        (S2C, Kind.RESPONSE, "tools/list"), (S2C, Kind.NOTIFICATION, "notifications/progress"), (C2S, Kind.REQUEST, "ping"),
        (S2C, Kind.RESPONSE, "ping"), (C2S, Kind.REQUEST, "no/such/method"), (S2C, Kind.REQUEST, "sampling/createMessage")]
REVS = [None, "2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01"]
LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.sampled_from(["text", "echo", "image"]))
VALUE = st.recursive(LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(
    st.sampled_from(["name", "arguments", "content", "type", "text", "tools", "progressToken", "progress", "task", "_meta",
                     "isError", "structuredContent", "cursor", "x"]), inner, max_size=4)), max_leaves=8)
PAYLOADS = st.one_of(VALUE, st.just({"name": "echo", "arguments": {"n": 1}}), st.just({"content": [{"type": "text", "text": "a"}]}),
                     st.just({"tools": []}), st.just({"progressToken": 1, "progress": 1}), st.just({}),
                     st.just({"task": {"taskId": "t", "status": "working", "createdAt": "2025-01-01T00:00:00Z", "ttl": 1}}))
REQUEST_PARAMS = st.one_of(st.none(), st.just({"name": "echo"}), st.just({"name": "echo", "task": {"ttl": 5}}), VALUE)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(REVS), PAYLOADS, REQUEST_PARAMS), min_size=1, max_size=12))
def test_same_findings_as_shapes_check(calls: list[tuple[Any, ...]]) -> None:
    checkers = ShapeCheckers()
    for (direction, kind, method), rev, payload, request_params in calls:
        want = [f.to_json() for f in shapes.check(direction, kind, method, payload, rev, request_params)]
        got = [f.to_json() for f in checkers(direction, kind, method, payload, rev, request_params)]
        assert got == want, (method, kind, rev, payload, request_params)


def test_an_answer_to_a_task_augmented_request() -> None:
    """Checked as a CreateTaskResult (shapes.task_created), not as the method's result."""
    checkers = ShapeCheckers()
    result = {"task": {"taskId": "t", "status": "working", "createdAt": "2025-01-01T00:00:00Z", "ttl": 1}}
    for params in ({"name": "echo"}, {"name": "echo", "task": {"ttl": 5}}, None):
        for payload in (result, {"content": []}, {"task": 3}):
            want = [f.to_json() for f in shapes.check(S2C, Kind.RESPONSE, "tools/call", payload, "2025-11-25", params)]
            assert [f.to_json() for f in checkers(S2C, Kind.RESPONSE, "tools/call", payload, "2025-11-25", params)] == want
