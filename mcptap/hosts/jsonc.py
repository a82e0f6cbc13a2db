"""A position-tracking reader for JSON with comments (JSONC), the dialect of
host configuration files: ``//`` and ``/* */`` comments, trailing commas in
objects and arrays, a leading byte order mark. Plain JSON is a subset.

It does not rebuild text: it returns a tree whose every node knows its span
``[start, end)`` in the source string, so an editor can replace exactly one
value and leave every other character (comments, indentation, key order,
duplicate keys, number spellings) as it was. Pure; raises ConfigSyntaxError
(with line and column) for anything that is not JSONC.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcptap.hosts.errors import ConfigSyntaxError


@dataclass
class Scalar:
    """A string, number, true, false or null; ``value`` is its Python value."""

    start: int
    end: int
    value: Any


@dataclass
class Member:
    """``"key": value`` inside an object; ``start`` is the key's first
    character, ``value.end`` the member's last."""

    key: str
    start: int
    value: Node


@dataclass
class Object:
    start: int
    end: int
    members: list[Member] = field(default_factory=list)

    def get(self, key: str) -> Member | None:
        """The member named ``key`` (the last one, as JSON.parse takes it)."""
        found = None
        for m in self.members:
            if m.key == key:
                found = m
        return found


@dataclass
class Array:
    start: int
    end: int
    items: list[Node] = field(default_factory=list)


Node = Scalar | Object | Array

_WS = " \t\r\n\ufeff"
_NUMBER_CHARS = frozenset("+-0123456789.eE")


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail(self, what: str, at: int | None = None) -> ConfigSyntaxError:
        pos = self.i if at is None else at
        line = self.s.count("\n", 0, pos) + 1
        col = pos - (self.s.rfind("\n", 0, pos) + 1) + 1
        return ConfigSyntaxError(f"{what} at line {line} column {col}")

    def skip(self) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c in _WS:
                self.i += 1
            elif s.startswith("//", self.i):
                nl = s.find("\n", self.i)
                self.i = n if nl < 0 else nl + 1
            elif s.startswith("/*", self.i):
                close = s.find("*/", self.i + 2)
                if close < 0:
                    raise self.fail("unterminated /* comment")
                self.i = close + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.i >= len(self.s):
            raise self.fail("unexpected end of file")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self._string_node()
        return self.literal()

    def _string_node(self) -> Scalar:
        start = self.i
        text = self.string()
        return Scalar(start, self.i, text)

    def string(self) -> str:
        s, start = self.s, self.i
        j = start + 1
        n = len(s)
        while j < n:
            c = s[j]
            if c == '"':
                break
            if c == "\\":
                j += 2
                continue
            if c in "\n\r":
                raise self.fail("unterminated string", start)
            j += 1
        else:
            raise self.fail("unterminated string", start)
        self.i = j + 1
        try:
            out = json.loads(s[start:j + 1])
        except ValueError:
            raise self.fail("bad string escape", start) from None
        assert isinstance(out, str)
        return out

    def literal(self) -> Scalar:
        s, start = self.s, self.i
        for word, val in (("true", True), ("false", False), ("null", None)):
            if s.startswith(word, start):
                self.i = start + len(word)
                return Scalar(start, self.i, val)
        j = start
        while j < len(s) and s[j] in _NUMBER_CHARS:
            j += 1
        if j == start:
            raise self.fail(f"unexpected {s[start]!r}")
        try:
            val = json.loads(s[start:j])
        except ValueError:
            raise self.fail(f"bad number {s[start:j]!r}", start) from None
        self.i = j
        return Scalar(start, j, val)

    def obj(self) -> Object:
        node = Object(self.i, -1)
        self.i += 1
        while True:
            self.skip()
            if self.i >= len(self.s):
                raise self.fail("unterminated object", node.start)
            if self.s[self.i] == "}":
                self.i += 1
                node.end = self.i
                return node
            if self.s[self.i] != '"':
                raise self.fail("expected a quoted key")
            kstart = self.i
            key = self.string()
            self.skip()
            if self.i >= len(self.s) or self.s[self.i] != ":":
                raise self.fail("expected ':'")
            self.i += 1
            node.members.append(Member(key, kstart, self.value()))
            self.skip()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
            elif self.i < len(self.s) and self.s[self.i] != "}":
                raise self.fail("expected ',' or '}'")

    def arr(self) -> Array:
        node = Array(self.i, -1)
        self.i += 1
        while True:
            self.skip()
            if self.i >= len(self.s):
                raise self.fail("unterminated array", node.start)
            if self.s[self.i] == "]":
                self.i += 1
                node.end = self.i
                return node
            node.items.append(self.value())
            self.skip()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
            elif self.i < len(self.s) and self.s[self.i] != "]":
                raise self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    """The tree of ``text`` (one JSONC value, surrounded by whitespace and
    comments only). Raises ConfigSyntaxError."""
    p = _Parser(text)
    node = p.value()
    p.skip()
    if p.i != len(text):
        raise p.fail("unexpected text after the end")
    return node


def to_python(node: Node) -> Any:
    """The plain Python value of ``node`` (dicts keep the last of duplicate keys)."""
    if isinstance(node, Scalar):
        return node.value
    if isinstance(node, Array):
        return [to_python(x) for x in node.items]
    return {m.key: to_python(m.value) for m in node.members}


def dumps(value: Any) -> str:
    """``value`` as compact one-line JSON text (non-ASCII kept as is, a lone
    surrogate escaped: see ``escape_surrogates``)."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(json_text: str) -> str:
    """``json_text`` (JSON written with ``ensure_ascii=False``) with each lone
    UTF-16 surrogate written as its ``\\uXXXX`` escape. JSON allows such an
    escape (a string cut inside an emoji) and reading one gives a surrogate
    code point, which UTF-8 cannot encode: written raw it made the file
    unwritable. A surrogate only occurs inside a JSON string, where the
    escape means the same."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
