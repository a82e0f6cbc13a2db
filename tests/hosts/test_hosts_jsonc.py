"""The JSONC reader: values, spans, comments, trailing commas, errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.hosts import jsonc
from mcptap.hosts.errors import ConfigSyntaxError

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES, st.sampled_from([None, 0, 2, 4]))
def test_plain_json_reads_as_json_does(value: object, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    assert jsonc.to_python(jsonc.parse(text)) == json.loads(text)


def test_comments_trailing_commas_bom_and_spans() -> None:
    text = '\ufeff// head\n{\n  /* a */ "a": [1, 2,], // tail\n  "b": {"c": "d\\u00e9",},\n}\n'
    root = jsonc.parse(text)
    assert jsonc.to_python(root) == {"a": [1, 2], "b": {"c": "dé"}}
    assert isinstance(root, jsonc.Object)
    a = root.get("a")
    assert a is not None and text[a.value.start:a.value.end] == "[1, 2,]"
    b = root.get("b")
    assert b is not None and text[b.start:b.value.end] == '"b": {"c": "d\\u00e9",}'


def test_duplicate_keys_last_wins() -> None:
    root = jsonc.parse('{"a": 1, "a": 2}')
    assert isinstance(root, jsonc.Object)
    m = root.get("a")
    assert m is not None and isinstance(m.value, jsonc.Scalar) and m.value.value == 2


@pytest.mark.parametrize("text, where", [
    ('{"a": }', "line 1 column 7"),
    ('{"a": 1', "unterminated object"),
    ('{\n  "a": "x\n"}', "unterminated string at line 2"),
    ('{"a": 1} x', "unexpected text after the end"),
    ('/* open', r"unterminated /\* comment"),
    ('{a: 1}', "expected a quoted key"),
    ('{"a": 1 "b": 2}', "expected ',' or '}'"),
    ('', "unexpected end of file"),
])
def test_errors_name_the_place(text: str, where: str) -> None:
    with pytest.raises(ConfigSyntaxError, match=where):
        jsonc.parse(text)


@settings(max_examples=200)
@given(st.text(max_size=40))
def test_never_raises_anything_but_syntax_errors(text: str) -> None:
    try:
        jsonc.parse(text)
    except ConfigSyntaxError:
        pass
