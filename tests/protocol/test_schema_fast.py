"""The quick schema check (protocol/schema_fast.py) is sound: whenever it says
"valid", jsonschema finds no error; and it does answer for the schemas MCP
SDKs write, so tools/call is not judged by jsonschema every time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.protocol.contracts import _compile, _errors
from mcptap.protocol.schema_fast import compile_quick

#: schemas as the SDKs write them (pydantic / FastMCP, zod-to-json-schema), and some outside the subset
SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {"properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "number", "default": 1}}, "required": ["a"],
     "title": "addArguments", "type": "object"},
    {"type": "object", "properties": {"q": {"type": "string", "minLength": 2, "maxLength": 5}, "n": {"type": "integer", "minimum": 0, "maximum": 10}},
     "additionalProperties": False, "$schema": "http://json-schema.org/draft-07/schema#"},
    {"type": "object", "properties": {"opt": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}, "mode": {"enum": ["a", "b"]}}},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                                                "minItems": 1, "maxItems": 3}}},
    {"type": "object", "properties": {"x": {"type": ["string", "integer"]},
                                      "y": {"allOf": [{"type": "number"}, {"exclusiveMinimum": 0, "exclusiveMaximum": 5}]}},
     "additionalProperties": {"type": "boolean"}},
    {"type": "object", "properties": {"t": True, "f": False, "u": {"format": "uri", "type": "string"}, "b": {"type": "boolean"}}},
    {"type": "object", "properties": {"e": {"enum": ["x", 1, None, True]}, "arr": {"type": "array", "items": {"type": "string"}}}, "required": ["e"],
     "$schema": "https://json-schema.org/draft/2019-09/schema"},
    # outside the subset: no quick check, jsonschema judges alone
    {"type": "object", "properties": {"p": {"type": "string", "pattern": "^a+$"}}},
    {"type": "object", "properties": {"o": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
    {"type": "object", "$defs": {"n": {"type": "integer"}}, "properties": {"r": {"$ref": "#/$defs/n"}}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"i": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
    {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
]
IN_SUBSET = 8

KEYS = ["text", "a", "b", "q", "n", "opt", "mode", "items", "id", "x", "y", "zz", "t", "f", "u", "e", "arr", "p", "o", "r", "i"]
values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-3, 12, allow_nan=False) | st.sampled_from(["", "a", "x", "ab", "abcdef", "é", "y"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(KEYS), c, max_size=4),
    max_leaves=10,
)


def jsonschema_valid(schema: dict[str, Any], instance: Any) -> bool:
    compiled = _compile(schema)
    assert compiled is not None
    return not list(compiled[0].iter_errors(instance))


@pytest.mark.parametrize("i", range(len(SCHEMAS)))
@settings(max_examples=300, deadline=None)
@given(instance=values)
def test_quick_valid_implies_jsonschema_valid(i: int, instance: Any) -> None:
    schema = SCHEMAS[i]
    quick = compile_quick(schema)
    if quick is not None and quick(instance):
        assert jsonschema_valid(schema, instance), (schema, instance)


def test_the_subset_gets_a_quick_check_and_the_rest_none() -> None:
    assert all(compile_quick(s) is not None for s in SCHEMAS[:IN_SUBSET])
    assert [compile_quick(s) for s in SCHEMAS[IN_SUBSET:]] == [None] * (len(SCHEMAS) - IN_SUBSET)
    # draft 4 means other things by some keywords (integer, exclusiveMinimum): the contracts build no quick check for it
    compiled = _compile({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"})
    assert compiled is not None and compiled[1] is None
    plain = _compile(SCHEMAS[0])
    assert plain is not None and plain[1] is not None


@pytest.mark.parametrize(("schema", "instance"), [
    (SCHEMAS[0], {"text": "hi"}),
    (SCHEMAS[1], {"a": 1, "b": 2.5}),
    (SCHEMAS[2], {"q": "abc", "n": 10}),
    (SCHEMAS[3], {"opt": None, "mode": "b"}),
    (SCHEMAS[4], {"items": [{"id": 1}, {"id": 2, "x": "y"}]}),
    (SCHEMAS[5], {"x": 3, "y": 0.5, "zz": True}),
    (SCHEMAS[6], {"t": [1], "u": "not a uri, and format is not asserted", "b": False}),
    (SCHEMAS[7], {"e": "x", "arr": ["a"]}),
])
def test_valid_arguments_are_answered_quickly(schema: dict[str, Any], instance: Any) -> None:
    quick = compile_quick(schema)
    assert quick is not None and quick(instance)
    assert jsonschema_valid(schema, instance)


@pytest.mark.parametrize(("schema", "instance"), [
    (SCHEMAS[0], {}),                       # required missing
    (SCHEMAS[0], {"text": 5}),
    (SCHEMAS[1], {"a": True}),              # bool is not an integer
    (SCHEMAS[1], {"a": 1.0}),               # an integer to jsonschema: only it can say so
    (SCHEMAS[2], {"q": "a"}),
    (SCHEMAS[2], {"n": 11}),
    (SCHEMAS[2], {"z": 1}),                 # additionalProperties false
    (SCHEMAS[3], {"mode": "c"}),
    (SCHEMAS[3], {"opt": 1}),
    (SCHEMAS[4], {"items": []}),
    (SCHEMAS[5], {"y": 5}),
    (SCHEMAS[5], {"zz": 1}),
    (SCHEMAS[6], {"f": 1}),                 # a false schema
    (SCHEMAS[7], {"e": 1}),                 # non-string enum members: jsonschema's equality
])
def test_not_sure_leaves_the_verdict_and_messages_to_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    quick = compile_quick(schema)
    assert quick is not None and not quick(instance)
    compiled = _compile(schema)
    assert compiled is not None
    slow = sorted(str(e.message) for e in compiled[0].iter_errors(instance))
    assert len(_errors(compiled, instance)) == min(3, len(slow))


def test_a_str_subclass_is_not_judged_quickly() -> None:
    class Placeholder(str):
        pass
    quick = compile_quick(SCHEMAS[0])
    assert quick is not None
    assert quick({"text": "plain"}) and not quick({"text": Placeholder("marker")})


def test_deep_schemas_get_no_quick_check() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        schema = {"type": "object", "properties": {"k": schema}}
    assert compile_quick(schema) is None
