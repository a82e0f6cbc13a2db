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


def test_errors_of_the_fast_scanners_keep_their_wording() -> None:
    for text, where in (('{"a": "x\\q"}', "bad string escape at line 1 column 7"), ('{"a": "x\ty"}', "bad string escape"),
                        ('{"a": "x', "unterminated string at line 1 column 7"), ('{"a": 1e}', "bad number '1e'"),
                        ('{"a": 1 /* x', r"unterminated /\* comment at line 1 column 9")):
        with pytest.raises(ConfigSyntaxError, match=where):
            jsonc.parse(text)


def test_a_deeply_nested_file_is_read_without_recursion() -> None:
    """Before: 500 levels ended in a RecursionError (an internal error of mcptap)."""
    n = 20000
    text = '{"deep": ' + '{"a": ['*n + '1' + ']}'*n + ', "mcpServers": {}}'
    root = jsonc.parse(text)
    assert isinstance(root, jsonc.Object) and [m.key for m in root.members] == ["deep", "mcpServers"]
    node = root.members[0].value
    for _ in range(n):
        assert isinstance(node, jsonc.Object)
        inner = node.members[0].value
        assert isinstance(inner, jsonc.Array)
        node = inner.items[0]
    assert isinstance(node, jsonc.Scalar) and node.value == 1 and text[node.start:node.end] == "1"


def test_wrap_and_unwrap_parse_each_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: every step (servers, digests, each splice, each check) parsed
    the whole file again: a 36 MB ~/.claude.json took minutes. Each distinct
    text is read once now."""
    from mcptap.hosts.dialects import MCP_SERVERS
    from mcptap.hosts.wrap import WrapSpec, unwrap, wrap

    parsed: list[str] = []
    real = jsonc._Parser.__init__

    def counting(self: jsonc._Parser, text: str) -> None:
        parsed.append(text)
        real(self, text)

    monkeypatch.setattr(jsonc._Parser, "__init__", counting)
    servers = {f"s{i}": {"command": "x", "args": [str(i)]} for i in range(5)}
    text = json.dumps({"projects": {"/p": {"history": ["x"] * 50}}, "mcpServers": servers}, indent=2)
    out = wrap(MCP_SERVERS, text, None, WrapSpec(("/bin/mcptap",), "/caps"))
    assert all(n.action == "wrapped" for n in out.notes)
    assert len(parsed) == len(set(parsed)) and len(parsed) <= len(servers) + 1, len(parsed)
    parsed.clear()
    back = unwrap(MCP_SERVERS, out.text, out.memo)
    assert back.text == text
    assert len(parsed) == len(set(parsed)) and len(parsed) <= len(servers) + 1, len(parsed)


def _naive_change(old: str, new: str) -> tuple[str, str]:
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    while True:
        before, after = old[p:len(old) - s], new[p:len(new) - s]
        if (after and new.count(after) == 1) or (p == 0 and s == 0):
            return before, after
        p, s = max(p - 16, 0), max(s - 16, 0)


@settings(max_examples=60, deadline=None)
@given(st.text("ab", max_size=14), st.text("ab", max_size=14), st.sampled_from([0, 3, 65535, 65536, 70000]))
def test_text_change_is_the_differing_middle(old: str, new: str, pad: int) -> None:
    """The block-wise comparison (a 36 MB file took 6 s character by
    character) finds what the character loop found."""
    from mcptap.hosts.wrap import text_change

    for o, n in ((old, new), ("x" * pad + old + "yz", "x" * pad + new + "yz"), (old + "z" * pad, new + "z" * pad)):
        assert text_change(o, n) == _naive_change(o, n)
