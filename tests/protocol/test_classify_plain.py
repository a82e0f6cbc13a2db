"""``jsonrpc.classify_plain`` (check --full's way to classify the common
message without building a Classified) says what ``classify`` says, or
nothing: never another kind, id or method, never for a message ``classify``
has a finding about."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.protocol.jsonrpc import MAX_SAFE_INTEGER, classify, classify_plain

_VALUES = st.one_of(st.sampled_from(["2.0", "1.0", "", "tools/call", "notifications/progress", "notifications/", "x"]),
                    st.integers(-3, 3), st.sampled_from([MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1, 1 << 70]),
                    st.booleans(), st.none(), st.floats(allow_nan=False), st.just({}), st.just({"code": -32601, "message": "m"}),
                    st.just({"a": 1}), st.just([]), st.just([1]))
_MESSAGES = st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "other"]), _VALUES)


def _common(kind: str) -> Any:
    """A well-formed message of ``kind``, any of its fields then changed."""
    base = {"request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}},
            "notification": {"jsonrpc": "2.0", "method": "notifications/progress"},
            "response": {"jsonrpc": "2.0", "id": "a", "result": {}}}[kind]
    return st.builds(lambda extra, drop: {k: v for k, v in base.items() if k not in drop} | extra,
                     st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]), _VALUES, max_size=2),
                     st.sets(st.sampled_from(sorted(base)), max_size=1))


@settings(max_examples=600, deadline=None)
@given(st.one_of(_MESSAGES, _common("request"), _common("notification"), _common("response"), _VALUES))
def test_classify_plain_is_classify_or_nothing(value: Any) -> None:
    cls = classify(value)
    got = classify_plain(value)
    if got is not None:
        assert got == (cls.kind, cls.id, cls.has_id, cls.method)
        assert type(got[1]) is type(cls.id)
        assert cls.findings == []


def test_the_common_messages_take_it() -> None:
    for value in ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}, {"jsonrpc": "2.0", "method": "ping"},
                  {"jsonrpc": "2.0", "id": "a", "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                  {"jsonrpc": "2.0", "id": 1, "result": {}}, {"jsonrpc": "2.0", "id": "x", "result": {"content": []}}):
        assert classify_plain(value) is not None, value
