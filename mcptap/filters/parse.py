"""Lexer and parser of the filter language (pure, level 1; docs/filters.md).

The syntax half of :mod:`mcptap.filters`: this module knows the grammar
(``!`` binds tighter than ``&`` or juxtaposition, which binds tighter than
``|``; parentheses group) but not what an operator means. The caller passes
the operator tables, and :func:`parse` composes what they build::

    parse(expr, nullary={"~req": pred, …}, unary={"~m": build, …}, word=build_text) -> Pred

* ``nullary[op]`` — the predicate of an operator without an argument;
* ``unary[op](tok)`` — builds the predicate of an operator from its argument
  :class:`Tok`, raising :class:`ArgError` (``offset`` 0-based into the
  argument) when the argument is invalid;
* ``word(text)`` — the predicate of a bare word.

A predicate is ``pred(record, request) -> bool`` (:data:`Pred`). Bad input
raises :class:`~mcptap.errors.FilterSyntaxError` with ``column`` (1-based)
and ``expr`` attributes and a caret line in its message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcptap.errors import FilterSyntaxError
from mcptap.escape import escape_controls

#: ``pred(record, request) -> bool``: a capture record dict and the optional
#: dict describing the request it belongs to (``{"seq", "method", "tool"}``).
Pred = Callable[[dict[str, Any], "dict[str, Any] | None"], bool]

_SPECIAL = "()&|!"


def _error(expr: str, column: int, text: str) -> FilterSyntaxError:
    # the expression is shown with its control characters escaped (ESC as \x1b): the caret
    # goes under the offending character of what is shown, not of the raw text
    caret = " " * len(escape_controls(expr[:column - 1])) + "^"
    exc = FilterSyntaxError(f"bad filter at column {column}: {text}\n  {escape_controls(expr)}\n  {caret}")
    exc.column = column
    exc.expr = expr
    return exc


class ArgError(Exception):
    """An operator's argument is invalid; ``offset`` (0-based, in characters
    of the argument's source text) says where, for the error's column."""

    def __init__(self, text: str, offset: int = 0) -> None:
        super().__init__(text)
        self.offset = offset


# -- lexer ---------------------------------------------------------------------------

@dataclass(slots=True)
class Tok:
    """One token of a filter expression."""

    kind: str      # "op" (~name), "word", "(", ")", "&", "|", "!"
    text: str      # unquoted text
    raw: str       # source text, quotes kept (~j compares JSON literals)
    col: int       # 1-based column of the first character


_OP_NAME = re.compile(r"~[A-Za-z0-9_]*")


class _Lexer:
    """Context-dependent: an operator's argument runs to the next whitespace
    (quotes group, balanced parentheses stay inside, so ``~m (call|list)``
    works); elsewhere ``( ) & | !`` are operators and words stop at them."""

    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.pos = 0
        self._peeked: Tok | None = None

    def _skip_ws(self) -> None:
        while self.pos < len(self.expr) and self.expr[self.pos].isspace():
            self.pos += 1

    def peek(self) -> Tok | None:
        if self._peeked is None:
            self._peeked = self._next()
        return self._peeked

    def take(self) -> Tok:
        t = self.peek()
        assert t is not None
        self._peeked = None
        return t

    def _next(self) -> Tok | None:
        self._skip_ws()
        e, i = self.expr, self.pos
        if i >= len(e):
            return None
        c = e[i]
        if c in _SPECIAL:
            self.pos += 1
            return Tok(c, c, c, i + 1)
        if c == "~":
            m = _OP_NAME.match(e, i)
            assert m is not None
            self.pos = m.end()
            return Tok("op", m.group(0), m.group(0), i + 1)
        return self._word(stop=_SPECIAL, balance=False)

    def argument(self) -> Tok | None:
        """The argument of the operator just taken (None at end of input or
        before an operator character)."""
        assert self._peeked is None
        self._skip_ws()
        if self.pos >= len(self.expr) or self.expr[self.pos] in ")&|":
            return None
        return self._word(stop="", balance=True)

    def _word(self, stop: str, balance: bool) -> Tok:
        e, n = self.expr, len(self.expr)
        start = i = self.pos
        depth = 0
        text: list[str] = []
        while i < n and not e[i].isspace():
            ch = e[i]
            if ch in stop:
                break
            if balance:
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    if depth == 0:
                        break
                    depth -= 1
            if ch in "\"'":
                j = i + 1
                while j < n and e[j] != ch:
                    if e[j] == "\\" and j + 1 < n:
                        j += 1
                    text.append(e[j])
                    j += 1
                if j >= n:
                    raise _error(e, i + 1, f"unterminated {ch} string")
                i = j + 1
                continue
            if ch == "\\" and i + 1 < n:
                text.append(e[i + 1])
                i += 2
                continue
            text.append(ch)
            i += 1
        self.pos = i
        return Tok("word", "".join(text), e[start:i], start + 1)


def unquote(s: str) -> str:
    """``s`` with quotes removed and backslash escapes resolved, as the lexer
    reads a word (``"a b"`` -> ``a b``, ``\\"`` -> ``"``)."""
    if not s or not any(c in s for c in "\"'\\"):
        return s
    lex = _Lexer(s)
    return lex._word(stop="", balance=False).text


# -- parser (recursive descent: or > and > not > atom) ---------------------------

#: Deepest nesting of '(' and '!' a filter may have: the parser and the compiled
#: predicate recurse once per level, and Python's stack would end in a RecursionError.
MAX_DEPTH = 100

class _Parser:
    def __init__(self, expr: str, nullary: Mapping[str, Pred], unary: Mapping[str, Callable[[Tok], Pred]],
                 word: Callable[[str], Pred]) -> None:
        self.expr = expr
        self.lex = _Lexer(expr)
        self.nullary = nullary
        self.unary = unary
        self.word = word
        self.depth = 0

    def _enter(self, t: Tok) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _error(self.expr, t.col, f"filter nested too deeply (more than {MAX_DEPTH} levels of '(' and '!')")

    def peek(self) -> Tok | None:
        return self.lex.peek()

    def take(self) -> Tok:
        return self.lex.take()

    def end_col(self) -> int:
        return len(self.expr) + 1

    def parse(self) -> Pred:
        if self.peek() is None:
            raise _error(self.expr, 1, "empty filter")
        p = self.or_()
        t = self.peek()
        if t is not None:
            raise _error(self.expr, t.col, f"unexpected {t.raw!r}" + (" (no matching '(')" if t.kind == ")" else ""))
        return p

    def or_(self) -> Pred:
        parts = [self.and_()]
        while (t := self.peek()) is not None and t.kind == "|":
            self.take()
            parts.append(self.and_())
        if len(parts) == 1:
            return parts[0]
        ps = tuple(parts)
        return lambda r, q: any(p(r, q) for p in ps)

    def and_(self) -> Pred:
        parts = [self.not_()]
        while (t := self.peek()) is not None and t.kind not in ("|", ")"):
            if t.kind == "&":
                self.take()
            parts.append(self.not_())
        if len(parts) == 1:
            return parts[0]
        ps = tuple(parts)
        return lambda r, q: all(p(r, q) for p in ps)

    def not_(self) -> Pred:
        t = self.peek()
        if t is not None and t.kind == "!":
            self.take()
            self._enter(t)
            inner = self.not_()
            self.depth -= 1
            return lambda r, q: not inner(r, q)
        return self.atom()

    def atom(self) -> Pred:
        t = self.peek()
        if t is None:
            raise _error(self.expr, self.end_col(), "expression expected at end of filter")
        if t.kind == "(":
            self.take()
            self._enter(t)
            p = self.or_()
            self.depth -= 1
            close = self.peek()
            if close is None or close.kind != ")":
                raise _error(self.expr, close.col if close else self.end_col(), f"')' expected to close the '(' at column {t.col}")
            self.take()
            return p
        if t.kind in (")", "&", "|"):
            raise _error(self.expr, t.col, f"expression expected before {t.raw!r}")
        self.take()
        if t.kind == "word":
            return self.word(t.text)
        op = t.raw
        if op in self.nullary:
            return self.nullary[op]
        if op not in self.unary:
            near = self._close_op(op)
            raise _error(self.expr, t.col, f"unknown filter {op!r}" + (f" (did you mean {near}?)" if near else ""))
        arg = self.lex.argument()
        if arg is None:
            raise _error(self.expr, self.lex.pos + 1, f"{op} needs an argument")
        try:
            return self.unary[op](arg)
        except ArgError as exc:
            raise _error(self.expr, arg.col + exc.offset, str(exc)) from None

    def _close_op(self, op: str) -> str | None:
        import difflib

        m = difflib.get_close_matches(op, sorted({*self.nullary, *self.unary}), n=1, cutoff=0.5)
        return m[0] if m else None


def parse(expr: str, nullary: Mapping[str, Pred], unary: Mapping[str, Callable[[Tok], Pred]],
          word: Callable[[str], Pred]) -> Pred:
    """Parse ``expr`` into one predicate, built from the operator tables (see
    the module docstring). Raises FilterSyntaxError."""
    return _Parser(expr, nullary, unary, word).parse()
