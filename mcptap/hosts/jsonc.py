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

#: whitespace (a BOM counts as one) and comments, any number of them
_SKIP = re.compile(r"(?:[ \t\r\n\ufeff]+|//[^\n]*|/\*.*?\*/)*", re.S)
_SKIP_START = frozenset(" \t\r\n\ufeff/")
_NUMBER = re.compile(r"[+\-0-9.eE]+")
_scanstring = json.decoder.scanstring          # type: ignore[attr-defined]  # C, where available


class _Parser:
    """Iterative (an explicit stack, not recursion: a file nested thousands
    of levels deep is read like any other), strings and whitespace by the
    C scanner and regular expressions: a 36 MB ``~/.claude.json`` takes
    seconds, not minutes."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail(self, what: str, at: int | None = None) -> ConfigSyntaxError:
        pos = self.i if at is None else at
        line = self.s.count("\n", 0, pos) + 1
        col = pos - (self.s.rfind("\n", 0, pos) + 1) + 1
        return ConfigSyntaxError(f"{what} at line {line} column {col}")

    def skip(self) -> None:
        s, i = self.s, self.i
        if i >= len(s) or s[i] not in _SKIP_START:
            return                              # the usual cases: nothing, or one space (", ", ": "),
        if s[i] == " " and i + 1 < len(s) and s[i + 1] not in _SKIP_START:
            self.i = i + 1                      # without a regex call
            return
        m = _SKIP.match(self.s, self.i)
        assert m is not None                    # the pattern matches the empty string
        self.i = m.end()
        if self.s.startswith("/*", self.i):
            raise self.fail("unterminated /* comment")

    def string(self) -> str:
        s, start = self.s, self.i
        try:
            out, self.i = _scanstring(s, start + 1, True)
        except ValueError as exc:
            bad = getattr(exc, "pos", start)
            if "Unterminated" in str(exc) or (bad < len(s) and s[bad] in "\n\r"):
                raise self.fail("unterminated string", start) from None
            raise self.fail("bad string escape", start) from None
        return str(out)

    def literal(self) -> Scalar:
        s, start = self.s, self.i
        for word, val in (("true", True), ("false", False), ("null", None)):
            if s.startswith(word, start):
                self.i = start + len(word)
                return Scalar(start, self.i, val)
        m = _NUMBER.match(s, start)
        if m is None:
            raise self.fail(f"unexpected {s[start]!r}")
        j = m.end()
        try:
            val = json.loads(s[start:j])
        except ValueError:
            raise self.fail(f"bad number {s[start:j]!r}", start) from None
        self.i = j
        return Scalar(start, j, val)

    def _next(self, node: Object | Array, keys: list[tuple[str, int]]) -> bool:
        """Inside ``node``, where an item or its end may come: True when it
        ended (consumed), else positioned at the next item's value (an
        object's key and ':' consumed, pushed on ``keys``)."""
        self.skip()
        s = self.s
        if self.i >= len(s):
            raise self.fail("unterminated object" if isinstance(node, Object) else "unterminated array", node.start)
        if s[self.i] == ("}" if isinstance(node, Object) else "]"):
            self.i += 1
            node.end = self.i
            return True
        if isinstance(node, Object):
            if s[self.i] != '"':
                raise self.fail("expected a quoted key")
            kstart = self.i
            key = self.string()
            self.skip()
            if self.i >= len(s) or s[self.i] != ":":
                raise self.fail("expected ':'")
            self.i += 1
            keys.append((key, kstart))
        return False

    def value(self) -> Node:
        s = self.s
        stack: list[Object | Array] = []
        keys: list[tuple[str, int]] = []        # the key of each open object's pending member
        while True:
            self.skip()
            if self.i >= len(s):
                raise self.fail("unexpected end of file")
            c = s[self.i]
            node: Node
            if c == "{" or c == "[":
                opened: Object | Array = Object(self.i, -1) if c == "{" else Array(self.i, -1)
                self.i += 1
                if not self._next(opened, keys):
                    stack.append(opened)
                    continue                    # its first item's value comes next
                node = opened
            elif c == '"':
                start = self.i
                node = Scalar(start, -1, self.string())
                node.end = self.i
            else:
                node = self.literal()
            while True:                         # hand the finished node to its parent
                if not stack:
                    return node
                parent = stack[-1]
                if isinstance(parent, Object):
                    key, kstart = keys.pop()
                    parent.members.append(Member(key, kstart, node))
                else:
                    parent.items.append(node)
                self.skip()
                close = "}" if isinstance(parent, Object) else "]"
                if self.i < len(s) and s[self.i] == ",":
                    self.i += 1
                elif self.i < len(s) and s[self.i] != close:
                    raise self.fail(f"expected ',' or '{close}'")
                if not self._next(parent, keys):
                    break                       # the next item's value
                node = stack.pop()


#: the last texts parsed and their trees: wrap and unwrap read one text several
#: times (servers, digests, splices); a tree is never changed once built
_CACHE: list[tuple[str, Node]] = []
_CACHE_SIZE = 2


def parse(text: str) -> Node:
    """The tree of ``text`` (one JSONC value, surrounded by whitespace and
    comments only). The tree is shared with later calls on an equal text:
    do not change it. Raises ConfigSyntaxError."""
    for i, (seen, tree) in enumerate(_CACHE):
        if seen is text or seen == text:
            _CACHE.insert(0, _CACHE.pop(i))
            return tree
    p = _Parser(text)
    node = p.value()
    p.skip()
    if p.i != len(text):
        raise p.fail("unexpected text after the end")
    _CACHE.insert(0, (text, node))
    del _CACHE[_CACHE_SIZE:]
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
