"""Redacting a JSON value nested deeper than recursion can go (pure).

A peer's message may nest as deep as its parser allows (orjson: 1024 levels),
far beyond Python's recursion limit. ``Redactor`` walks by recursion (fast) to
``engine.RECURSE_TO`` levels and hands deeper containers to ``walk``, which does
the same walk with an explicit stack. What to do with a member is the
redactor's business, asked through three functions:

* ``member_rule(container, path, key)`` — the rule that makes the member's whole
  value a secret (``key:password``, ``path:…``), or None to walk it;
* ``leaf(x, path, rule, depth)`` — ``x`` redacted when it is no container (a
  string scanned, or all of it a placeholder under ``rule``), ``CONTAINER`` when
  it is one (then ``walk`` descends into it);
* ``rekey(key, path)`` — an object's key (from ``KEY_SCAN_FROM`` characters)
  after the string patterns.

Containers are copied only where something changed, so an unchanged value comes
back as the very same object (scrubbing twice is scrubbing once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptap.redact.rules import PathSeg

#: Nesting beyond this is not walked further (deeper values are left as they are).
MAX_DEPTH = 2000
#: Object keys this long or longer get the string patterns (token shapes are 20
#: characters or more; shorter keys are names).
KEY_SCAN_FROM = 20
#: What ``leaf`` returns for a container.
CONTAINER: Any = object()
#: scalar types a walk (no rule) leaves as they are
PLAIN = frozenset({int, float, bool, type(None)})

Path = tuple[PathSeg, ...]
MemberRule = Callable[[Any, Path, Any], "str | None"]
Leaf = Callable[[Any, Path, "str | None", int], Any]
Rekey = Callable[[str, Path], str]
Shaped = Callable[[list[Any], Path, int], Any]


class _Frame:
    """One container being walked: its members one by one, the copy made from
    the first changed one on."""

    __slots__ = ("value", "path", "rule", "depth", "it", "items", "n", "key", "child")

    def __init__(self, value: dict[str, Any] | list[Any], path: Path, rule: str | None, depth: int) -> None:
        self.value, self.path, self.rule, self.depth = value, path, rule, depth
        self.it: Any = iter(value.items()) if isinstance(value, dict) else enumerate(value)
        self.items: list[Any] | None = None     # copied from the first changed member on
        self.n = 0
        self.key: Any = None
        self.child: Any = None

    def take(self, done: Any, rekey: Rekey) -> None:
        """The current member's redacted value is ``done``."""
        if isinstance(self.value, dict):
            nk = self.key if len(self.key) < KEY_SCAN_FROM else rekey(self.key, self.path)
            if self.items is None and (done is not self.child or nk is not self.key):
                self.items = list(self.value.items())[:self.n]
            if self.items is not None:
                self.items.append((nk, done))
        else:
            if self.items is None and done is not self.child:
                self.items = self.value[:self.n]
            if self.items is not None:
                self.items.append(done)
        self.n += 1

    def result(self) -> Any:
        if self.items is None:
            return self.value
        return dict(self.items) if isinstance(self.value, dict) else self.items


def walk(v: Any, path: Path, rule: str | None, depth: int, member_rule: MemberRule, leaf: Leaf, rekey: Rekey,
         shaped: Shaped | None = None) -> Any:
    """``v`` at ``path`` (``depth`` levels down) redacted: under ``rule`` all of
    it, else walked (see module doc). ``shaped(list, path, depth)``: a list
    redacted as one (a command line), or None to walk it, as the recursive walk
    does. Raises nothing; beyond ``MAX_DEPTH`` values stay as they are."""
    if depth > MAX_DEPTH:
        return v
    done = leaf(v, path, rule, depth)
    if done is not CONTAINER:
        return done
    if rule is None and shaped is not None and isinstance(v, list):
        whole = shaped(v, path, depth)
        if whole is not None:
            return whole
    stack = [_Frame(v, path, rule, depth)]
    while True:
        f = stack[-1]
        d = f.depth + 1
        for key, x in f.it:      # resumable: a frame continues where it left off
            f.key, f.child = key, x
            if d > MAX_DEPTH:
                f.take(x, rekey)
                continue
            r = f.rule
            if r is None:
                r = member_rule(f.value, f.path, key)
                if r is None and type(x) in PLAIN:      # a walk leaves numbers as they are
                    f.take(x, rekey)
                    continue
            sub = f.path + (key,)
            done = leaf(x, sub, r, d)
            if done is CONTAINER and r is None and shaped is not None and isinstance(x, list):
                whole = shaped(x, sub, d)
                if whole is not None:
                    f.take(whole, rekey)
                    continue
            if done is CONTAINER:
                stack.append(_Frame(x, sub, r, d))
                break
            f.take(done, rekey)
        else:
            done = f.result()
            stack.pop()
            if not stack:
                return done
            stack[-1].take(done, rekey)
