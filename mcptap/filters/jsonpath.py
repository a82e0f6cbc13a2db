"""The ``~j`` operator of the filter language: JSON-path predicates on a message
(docs/filters.md; the rest of the language is filters/operators.py).

:func:`json_path` builds the predicate of ``~j PATH`` (the path exists in the
message's JSON) or ``~j PATH OP VALUE`` (some value at the path compares; for
``!=``: values exist and none equals). PATH: ``params.name``,
``result.content[0].text`` (or ``.0.``), ``*`` / ``[*]`` for every member;
OP one of :data:`JOPS` (``~=`` is a regular expression search, ``<``/``>``…
need a number); VALUE is exact JSON (big integers stay integers, ``1`` equals
``1.0`` but not ``"1"`` or ``true``), else text. The whole argument may be
quoted. Bad input raises :class:`~mcptap.filters.parse.ArgError` with the
offending column within the argument. :data:`CMP` (comparison operators)
is shared with ``~lat``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.fields import message_json
from mcptap.filters.parse import ArgError, Pred, Tok, unquote
from mcptap.model import UNPARSED
from mcptap.protocol.jsonparse import exact_json

#: the comparison operators of ``~lat`` and ``~j``, by their spelling
CMP: dict[str, Callable[[Any, Any], bool]] = {
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, "=": lambda a, b: a == b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}

#: the comparison operators of ``~j PATH OP VALUE`` (longest first where one starts another)
JOPS = ("!=", ">=", "<=", "~=", "=", ">", "<")


def _parse_path(path: str) -> list[str | int]:
    """``params.name``, ``result.content[0].text``, ``result.content.0.text``,
    ``params.*`` -> list of keys / indexes / "*"."""
    out: list[str | int] = []
    i, n = 0, len(path)
    if not path:
        raise ArgError("empty JSON path")
    while i < n:
        if path[i] == "[":
            j = path.find("]", i)
            if j < 0:
                raise ArgError("unclosed '[' in JSON path", i)
            inner = path[i + 1:j]
            if inner == "*":
                out.append("*")
            elif inner.lstrip("-").isdigit():
                out.append(int(inner))
            else:
                raise ArgError("index in [] must be a number or *", i + 1)
            i = j + 1
        else:
            j = i
            while j < n and path[j] not in ".[":
                j += 1
            seg = path[i:j]
            if not seg:
                raise ArgError("empty segment in JSON path", i)
            out.append(int(seg) if seg.isdigit() else seg)
            i = j
        if i < n and path[i] == ".":
            i += 1
            if i == n:
                raise ArgError("JSON path ends with '.'", i)
    return out


def _walk(v: Any, path: list[str | int]) -> list[Any]:
    cur = [v]
    for part in path:
        nxt: list[Any] = []
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


def _outer_quoted(raw: str) -> str | None:
    """The inside of an argument quoted as a whole (``'a.b=c'``, ``"id=\\"5\\""``),
    its backslash escapes resolved, or None when it is not one quoted string."""
    if len(raw) < 2 or raw[0] not in "\"'":
        return None
    q, out, i = raw[0], [], 1
    while i < len(raw) and raw[i] != q:
        if raw[i] == "\\" and i + 1 < len(raw):
            i += 1
        out.append(raw[i])
        i += 1
    return "".join(out) if i == len(raw) - 1 else None


def _split_jop(raw: str) -> tuple[int, str | None]:
    """Where the first comparison operator outside quotes starts, and which."""
    quote = None
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote is not None:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "\\":
            i += 1
        else:
            for o in JOPS:
                if raw.startswith(o, i):
                    return i, o
        i += 1
    return -1, None


def json_path(t: Tok) -> Pred:
    raw = t.raw
    inner = _outer_quoted(raw)
    shift = 0
    if inner is not None:            # ~j 'result.content[*].type=text': the whole argument quoted
        raw, shift = inner, 1
    cut, op = _split_jop(raw)
    path = _parse_path(unquote(raw if op is None else raw[:cut]))
    if op is None:
        return lambda r, q: bool(_walk(message_json(r), path)) if r.get("type") == "message" else False
    lit = raw[cut + len(op):]
    want = exact_json(lit.encode("utf-8"))      # exact: 2**64+1 must not read as a float
    if want is UNPARSED:
        want = unquote(lit)
    if op == "~=":
        try:
            rx = re.compile(want if isinstance(want, str) else lit)
        except (re.error, OverflowError, RecursionError) as exc:     # OverflowError: a{99999999999}
            raise ArgError(f"bad regular expression: {exc}", shift + cut + 2) from None

        def test(v: Any) -> bool:
            return rx.search(v if isinstance(v, str) else dumps(v).decode()) is not None
    elif op in ("=", "!="):
        def test(v: Any) -> bool:
            return _same(v, want)
    else:
        if not isinstance(want, (int, float)) or isinstance(want, bool):
            raise ArgError(f"{op} needs a number, not {lit!r}", shift + cut + len(op))
        cmp = CMP[op]

        def test(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and cmp(v, want)

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
