"""Filter expressions over capture records, in MCP terms (pure, level 1).

In the spirit of mitmproxy's filter expressions (``~q``, ``~s``, ``!``, ``&``,
``|``); the language is documented in ``docs/filters.md``::

    ~req & ~tool echo             tools/call requests for the tool "echo" (and, with
                                  the request context, their responses)
    ~s2c & ~lat >100ms            server responses slower than 100 ms
    ~f framing.* | ~sev error     framing findings, or any error finding
    ~j params.name=echo           JSON-path predicate on the message

``compile_filter(text) -> Filter``; a ``Filter`` is called as
``flt(record, request=None) -> bool`` where ``record`` is a capture record
dict (docs/capture-format.md; usually re-annotated) and ``request`` is an
optional dict describing the request the record belongs to (a response's,
a progress notification's or a cancellation's): ``{"seq", "method", "tool"}``.
Bad input raises :class:`~mcptap.errors.FilterSyntaxError` whose ``column``
(1-based) points at the offending character.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from mcptap.errors import FilterSyntaxError

Pred = Callable[[dict[str, Any], "dict[str, Any] | None"], bool]

_SEV_RANK = {"info": 0, "warn": 1, "warning": 1, "error": 2}
_KINDS = {"~req": ("request",), "~notif": ("notification",), "~resp": ("response", "error"), "~err": ("error",)}
_DIRS = {"~c2s": "c2s", "~s2c": "s2c"}
#: operators that take one argument
_WITH_ARG = frozenset({"~m", "~tool", "~id", "~phase", "~session", "~f", "~sev", "~lat", "~t", "~j"})
_ALL_OPS = frozenset(_KINDS) | frozenset(_DIRS) | _WITH_ARG
_SPECIAL = "()&|!"


def _error(expr: str, column: int, text: str) -> FilterSyntaxError:
    caret = " " * (column - 1) + "^"
    exc = FilterSyntaxError(f"bad filter at column {column}: {text}\n  {expr}\n  {caret}")
    exc.column = column  # type: ignore[attr-defined]
    exc.expr = expr  # type: ignore[attr-defined]
    return exc


# -- lexer ---------------------------------------------------------------------------

@dataclass(slots=True)
class _Tok:
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
        self._peeked: _Tok | None = None

    def _skip_ws(self) -> None:
        while self.pos < len(self.expr) and self.expr[self.pos].isspace():
            self.pos += 1

    def peek(self) -> _Tok | None:
        if self._peeked is None:
            self._peeked = self._next()
        return self._peeked

    def take(self) -> _Tok:
        t = self.peek()
        assert t is not None
        self._peeked = None
        return t

    def _next(self) -> _Tok | None:
        self._skip_ws()
        e, i = self.expr, self.pos
        if i >= len(e):
            return None
        c = e[i]
        if c in _SPECIAL:
            self.pos += 1
            return _Tok(c, c, c, i + 1)
        if c == "~":
            m = _OP_NAME.match(e, i)
            assert m is not None
            self.pos = m.end()
            return _Tok("op", m.group(0), m.group(0), i + 1)
        return self._word(stop=_SPECIAL, balance=False)

    def argument(self) -> _Tok | None:
        """The argument of the operator just taken (None at end of input or
        before an operator character)."""
        assert self._peeked is None
        self._skip_ws()
        if self.pos >= len(self.expr) or self.expr[self.pos] in ")&|":
            return None
        return self._word(stop="", balance=True)

    def _word(self, stop: str, balance: bool) -> _Tok:
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
        return _Tok("word", "".join(text), e[start:i], start + 1)


# -- parser (recursive descent: or > and > not > atom) ---------------------------

class _Parser:
    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.lex = _Lexer(expr)

    def peek(self) -> _Tok | None:
        return self.lex.peek()

    def take(self) -> _Tok:
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
        return lambda r, q, ps=tuple(parts): any(p(r, q) for p in ps)

    def and_(self) -> Pred:
        parts = [self.not_()]
        while (t := self.peek()) is not None and t.kind not in ("|", ")"):
            if t.kind == "&":
                self.take()
            parts.append(self.not_())
        if len(parts) == 1:
            return parts[0]
        return lambda r, q, ps=tuple(parts): all(p(r, q) for p in ps)

    def not_(self) -> Pred:
        t = self.peek()
        if t is not None and t.kind == "!":
            self.take()
            inner = self.not_()
            return lambda r, q: not inner(r, q)
        return self.atom()

    def atom(self) -> Pred:
        t = self.peek()
        if t is None:
            raise _error(self.expr, self.end_col(), "expression expected at end of filter")
        if t.kind == "(":
            self.take()
            p = self.or_()
            close = self.peek()
            if close is None or close.kind != ")":
                raise _error(self.expr, close.col if close else self.end_col(), f"')' expected to close the '(' at column {t.col}")
            self.take()
            return p
        if t.kind in (")", "&", "|"):
            raise _error(self.expr, t.col, f"expression expected before {t.raw!r}")
        self.take()
        if t.kind == "word":
            return _text(t.text)  # a bare word searches the message text, like ~t
        op = t.raw
        if op not in _ALL_OPS:
            near = _close_op(op)
            raise _error(self.expr, t.col, f"unknown filter {op!r}" + (f" (did you mean {near}?)" if near else ""))
        if op in _KINDS:
            kinds = _KINDS[op]
            return lambda r, q: r.get("type") == "message" and r.get("kind") in kinds
        if op in _DIRS:
            d = _DIRS[op]
            return lambda r, q: r.get("type") == "message" and r.get("dir") == d
        arg = self.lex.argument()
        if arg is None:
            raise _error(self.expr, self.lex.pos + 1, f"{op} needs an argument")
        try:
            return _BUILDERS[op](arg)
        except _ArgError as exc:
            raise _error(self.expr, arg.col + exc.offset, str(exc)) from None


class _ArgError(Exception):
    def __init__(self, text: str, offset: int = 0) -> None:
        super().__init__(text)
        self.offset = offset


def _close_op(op: str) -> str | None:
    import difflib

    m = difflib.get_close_matches(op, sorted(_ALL_OPS), n=1, cutoff=0.5)
    return m[0] if m else None


# -- predicates ----------------------------------------------------------------------

def _glob(pat: str) -> Callable[[str], bool]:
    if any(c in pat for c in "*?["):
        rx = re.compile(fnmatch.translate(pat))
        return lambda s: rx.match(s) is not None
    return lambda s: s == pat


def _method_of(r: dict[str, Any], q: dict[str, Any] | None) -> str | None:
    m = r.get("method")
    if m is None and q is not None and r.get("kind") in ("response", "error"):
        m = q.get("method")
    return m


def _method(t: _Tok) -> Pred:
    try:
        rx = re.compile(t.text)
    except re.error as exc:
        raise _ArgError(f"bad regular expression: {exc}", exc.pos or 0) from None

    def p(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
        m = _method_of(r, q)
        return m is not None and rx.search(m) is not None
    return p


def tool_of(r: dict[str, Any]) -> str | None:
    """The tool name of a ``tools/call`` request record (params.name), else None."""
    if r.get("method") != "tools/call":
        return None
    v = message_json(r)
    params = v.get("params") if isinstance(v, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def _tool(t: _Tok) -> Pred:
    match = _glob(t.text)

    def p(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
        if r.get("type") != "message":
            return False
        name = tool_of(r)
        if name is None and q is not None and q.get("method") == "tools/call" and r.get("method") != "tools/call":
            name = q.get("tool")
        return name is not None and match(name)
    return p


def _id(t: _Tok) -> Pred:
    want = t.text

    def p(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
        if "id" not in r:
            return False
        v = r["id"]
        return (v if isinstance(v, str) else orjson.dumps(v).decode()) == want
    return p


def _field_glob(key: str) -> Callable[[_Tok], Pred]:
    def build(t: _Tok) -> Pred:
        match = _glob(t.text)
        return lambda r, q: isinstance(r.get(key), str) and match(r[key])
    return build


def record_findings(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings a record carries: ``findings`` (a list) on most records,
    ``unanswered`` on the end record (whose ``findings`` holds counts)."""
    fs = r.get("findings")
    if isinstance(fs, list):
        return fs
    if r.get("type") == "end" and isinstance(r.get("unanswered"), list):
        return r["unanswered"]
    return []


def _finding_code(t: _Tok) -> Pred:
    pat = t.text
    if not any(c in pat for c in "*?[."):
        pat += ".*"                     # a bare family name: ~f lifecycle
    match = _glob(pat)
    return lambda r, q: any(match(f.get("code", "")) for f in record_findings(r))


def _severity(t: _Tok) -> Pred:
    rank = _SEV_RANK.get(t.text.lower())
    if rank is None:
        raise _ArgError(f"severity must be error, warn or info, not {t.text!r}")
    return lambda r, q: any(_SEV_RANK.get(f.get("severity"), -1) >= rank for f in record_findings(r))


_LAT = re.compile(r"^(>=|<=|>|<|=|==)?\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s)?$")
_UNIT = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000, None: 1000}
_CMP: dict[str, Callable[[Any, Any], bool]] = {
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, "=": lambda a, b: a == b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def _latency(t: _Tok) -> Pred:
    m = _LAT.match(t.text.strip())
    if m is None:
        raise _ArgError(f"latency must look like >100ms, <=2s, >500us (unit defaults to ms), not {t.text!r}")
    cmp = _CMP[m.group(1) or ">="]
    bound = float(m.group(2)) * _UNIT[m.group(3)]
    return lambda r, q: isinstance(r.get("latency_us"), int) and cmp(r["latency_us"], bound)


def message_text(r: dict[str, Any]) -> str:
    """The record's payload as text: a message's exact bytes (decoded with
    replacement), a stderr record's data; "" for other records."""
    if "raw" in r:
        return r["raw"]
    if "json" in r:
        return orjson.dumps(r["json"]).decode()
    if "data" in r and isinstance(r["data"], str):
        return r["data"]
    for k in ("raw_b64", "data_b64"):
        if k in r:
            import base64

            return base64.b64decode(r[k]).decode("utf-8", "replace")
    return ""


def _text(s: str) -> Pred:
    needle = s.lower()
    return lambda r, q: needle in message_text(r).lower()


def message_json(r: dict[str, Any]) -> Any:
    """The parsed JSON of a message record (its ``json``, or its raw bytes
    parsed), or None."""
    if "json" in r:
        return r["json"]
    if r.get("type") != "message" or "raw" not in r:
        return None
    try:
        return orjson.loads(r["raw"])
    except orjson.JSONDecodeError:
        return None


_JOPS = ("!=", ">=", "<=", "~=", "=", ">", "<")


def _parse_path(path: str) -> list[str | int]:
    """``params.name``, ``result.content[0].text``, ``result.content.0.text``,
    ``params.*`` -> list of keys / indexes / "*"."""
    out: list[str | int] = []
    i, n = 0, len(path)
    if not path:
        raise _ArgError("empty JSON path")
    while i < n:
        if path[i] == "[":
            j = path.find("]", i)
            if j < 0:
                raise _ArgError("unclosed '[' in JSON path", i)
            inner = path[i + 1:j]
            if inner == "*":
                out.append("*")
            elif inner.lstrip("-").isdigit():
                out.append(int(inner))
            else:
                raise _ArgError("index in [] must be a number or *", i + 1)
            i = j + 1
        else:
            j = i
            while j < n and path[j] not in ".[":
                j += 1
            seg = path[i:j]
            if not seg:
                raise _ArgError("empty segment in JSON path", i)
            out.append(int(seg) if seg.isdigit() else seg)
            i = j
        if i < n and path[i] == ".":
            i += 1
            if i == n:
                raise _ArgError("JSON path ends with '.'", i)
    return out


def _walk(v: Any, path: list[str | int]) -> list[Any]:
    cur = [v]
    for part in path:
        nxt = []
        for x in cur:
            if part == "*":
                if isinstance(x, dict):
                    nxt.extend(x.values())
                elif isinstance(x, list):
                    nxt.extend(x)
            elif isinstance(x, dict):
                key = str(part)
                if key in x:
                    nxt.append(x[key])
            elif isinstance(x, list) and isinstance(part, int) and -len(x) <= part < len(x):
                nxt.append(x[part])
        cur = nxt
        if not cur:
            break
    return cur


def _json_path(t: _Tok) -> Pred:
    raw = t.raw
    cut, op = -1, None
    for i in range(len(raw)):
        for o in _JOPS:
            if raw.startswith(o, i):
                cut, op = i, o
                break
        if op is not None:
            break
    path = _parse_path(_unquote(raw if op is None else raw[:cut]))
    if op is None:
        return lambda r, q: bool(_walk(message_json(r), path)) if r.get("type") == "message" else False
    lit = raw[cut + len(op):]
    try:
        want = orjson.loads(lit)
    except orjson.JSONDecodeError:
        want = _unquote(lit)
    if op == "~=":
        try:
            rx = re.compile(want if isinstance(want, str) else lit)
        except re.error as exc:
            raise _ArgError(f"bad regular expression: {exc}", cut + 2) from None
        test: Callable[[Any], bool] = lambda v: rx.search(v if isinstance(v, str) else orjson.dumps(v).decode()) is not None  # noqa: E731
    elif op in ("=", "!="):
        test = lambda v: _same(v, want)  # noqa: E731
    else:
        if not isinstance(want, (int, float)) or isinstance(want, bool):
            raise _ArgError(f"{op} needs a number, not {lit!r}", cut + len(op))
        cmp = _CMP[op]
        test = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and cmp(v, want)  # noqa: E731

    if op == "!=":
        def differs(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
            if r.get("type") != "message":
                return False
            vals = _walk(message_json(r), path)
            return bool(vals) and not any(test(v) for v in vals)
        return differs
    return lambda r, q: r.get("type") == "message" and any(test(v) for v in _walk(message_json(r), path))


def _same(v: Any, want: Any) -> bool:
    # JSON equality: 1 and 1.0 are equal numbers, but 1 and "1" or 1 and true are not
    if isinstance(v, bool) or isinstance(want, bool):
        return isinstance(v, bool) and isinstance(want, bool) and v == want
    return type(v) is type(want) and v == want or (isinstance(v, (int, float)) and isinstance(want, (int, float)) and v == want)


def _unquote(s: str) -> str:
    if not s or not any(c in s for c in "\"'\\"):
        return s
    lex = _Lexer(s)
    return lex._word(stop="", balance=False).text


_BUILDERS: dict[str, Callable[[_Tok], Pred]] = {
    "~m": _method, "~tool": _tool, "~id": _id, "~phase": _field_glob("phase"), "~session": _field_glob("session"),
    "~f": _finding_code, "~sev": _severity, "~lat": _latency, "~t": lambda t: _text(t.text), "~j": _json_path,
}


class Filter:
    """A compiled filter expression. ``flt(record, request=None) -> bool``."""

    __slots__ = ("expr", "_pred")

    def __init__(self, expr: str, pred: Pred) -> None:
        self.expr = expr
        self._pred = pred

    def __call__(self, record: dict[str, Any], request: dict[str, Any] | None = None) -> bool:
        return self._pred(record, request)

    def __repr__(self) -> str:
        return f"Filter({self.expr!r})"


def compile_filter(expr: str) -> Filter:
    """Parse ``expr`` (see docs/filters.md). Raises FilterSyntaxError."""
    return Filter(expr, _Parser(expr).parse())
