"""A tool parameter named like a secret is not a secret (mcptap/redact/engine.py,
keys.is_schema_property): a tools/list ``inputSchema`` with a ``password``
property came out as ``{"type": "«…»", "minLength": "«…»"}`` (a number became a
string: invalid schema served by report/serve); only instances in it go."""

from __future__ import annotations

import json

import pytest

from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules

R = Redactor(Rules(), Keyer(b"k" * 32))


def prop(**kw: object) -> dict[str, object]:
    return {"type": "string", "description": "the secret to use", "minLength": 8, **kw}


@pytest.mark.parametrize("name", ["password", "apiKey", "token", "credentials", "client_secret", "STRIPE_KEY"])
def test_tools_list_schema_keeps_secret_named_properties(name: str) -> None:
    schema = {"type": "object", "properties": {name: prop(), "nested": {"type": "object", "properties": {name: prop()}}},
              "required": [name], "$defs": {name: prop()}, "definitions": {name: {"$ref": "#/$defs/x"}},
              "patternProperties": {name: {"type": "integer", "maximum": 9}}}
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "login", "inputSchema": schema}]}}
    out, hits = R.message(msg)
    assert out == msg and not hits


def test_instances_under_a_secret_named_property_are_redacted() -> None:
    p = prop(default="default-pw-123", examples=["example-pw-1"], const="const-pw-12", enum=["enum-pw-1", 7])
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "login", "inputSchema": {"properties": {"password": p}}}]}}
    out, hits = R.message(msg)
    got = out["result"]["tools"][0]["inputSchema"]["properties"]["password"]
    text = json.dumps(out)
    assert not any(s in text for s in ("default-pw-123", "example-pw-1", "const-pw-12", "enum-pw-1"))
    assert got["type"] == "string" and got["minLength"] == 8 and got["description"] == "the secret to use"
    assert {h.rule for h in hits} == {"key:password"} and len(hits) == 5


def test_elicitation_requested_schema_and_schema_in_tool_text() -> None:
    schema = {"type": "object", "properties": {"apiKey": {"type": "string", "title": "API key"}}, "required": ["apiKey"]}
    msg = {"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {"message": "key?", "requestedSchema": schema}}
    assert R.message(msg) == (msg, [])
    text = {"content": [{"type": "text", "text": json.dumps({"inputSchema": schema})}]}
    assert R.value(text)[0] == text
    # the answer is a secret
    ans = {"jsonrpc": "2.0", "id": 5, "result": {"action": "accept", "content": {"apiKey": "ans-key-123456"}}}
    assert "ans-key-123456" not in json.dumps(R.message(ans)[0])


@pytest.mark.parametrize("value", [
    {"properties": {"password": "hunter2-pw"}},                      # a record's properties (CRM contact): no schema
    {"properties": {"password": {"value": "hunter2-pw"}}},           # not schema keywords
    {"properties": {"password": {"type": "x", "secret": "hunter2-pw"}}},
    {"settings": {"password": {"type": "hunter2-pw"}}},              # not under a schema map
])
def test_non_schema_values_under_secret_names_still_go(value: dict[str, object]) -> None:
    out, hits = R.value(value)
    assert "hunter2-pw" not in json.dumps(out) and hits


@pytest.mark.parametrize("extra", [{"sensitive": True}, {"markdownDescription": "the **password**"},
                                   {"errorMessage": "too short", "order": 2}])
def test_a_schema_with_a_non_standard_keyword_stays(extra: dict[str, object]) -> None:
    # ``"type": "«redacted…»"``: one keyword outside the standard made the schema a secret (serve then
    # answered tools/list with an invalid schema)
    schema = {"type": "object", "properties": {"password": {"type": "string", "description": "pw", **extra},
                                               "token": {"anyOf": [{"type": "string"}, {"type": "null"}], **extra},
                                               "api_key": {"$ref": "#/$defs/path", **extra}}}
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "login", "inputSchema": schema}]}}
    assert R.message(msg) == (msg, [])


def test_secrets_beside_a_schema_shape_still_go() -> None:
    value = {"properties": {"password": {"type": "string", "secret": "hunter2-pw", "default": "default-pw-1"}}}
    out, _ = R.value(value)
    assert "hunter2-pw" not in json.dumps(out) and "default-pw-1" not in json.dumps(out)
    assert out["properties"]["password"]["type"] == "string"
