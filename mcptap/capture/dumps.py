"""JSON output of values that came from peers: orjson, falling back to the
stdlib for what orjson refuses (an integer beyond 64 bits, e.g. a peer's
JSON-RPC id ``2**80``), so the value is written exactly instead of raising
``TypeError`` half-way through ``show`` / ``export`` / ``report``; and at any
depth (orjson writes up to 254 levels, the stdlib up to Python's recursion
limit; a peer's message may nest 1024 levels, all orjson parses)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

#: a lone UTF-16 surrogate in a str (a peer's id ``"\\ud800"``, kept exact by ``protocol.jsonparse``)
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_json(text: str) -> bytes:
    """JSON text (as the stdlib writes it) as UTF-8 bytes, each lone surrogate
    (which UTF-8 cannot carry; in JSON text it can only stand in a string)
    written as its escape again, ``\\ud800``: the value read back is the same."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def dumps(value: Any, *, indent: bool = False, sort: bool = False, newline: bool = False) -> bytes:
    """``value`` as compact UTF-8 JSON (``indent``: 2-space indented; ``sort``:
    object keys sorted; ``newline``: a final newline), as ``orjson.dumps``
    writes it: a non-finite float (a peer's ``1e400``, read as infinity) as
    null. An ``orjson.Fragment`` (replay's ``1e400`` id, ``replay/steps.wire_id``)
    is written verbatim on every path. Raises TypeError only for non-JSON
    types: never for a peer's big integer, beside a non-finite number, a
    fragment or not, nor for a lone surrogate in a string (a peer's id
    ``"\\ud800"``), written as that escape."""
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort else 0) | (orjson.OPT_APPEND_NEWLINE if newline else 0)
    try:
        return orjson.dumps(value, option=option)
    except (TypeError, orjson.JSONEncodeError):
        pass
    end = "\n" if newline else ""
    try:
        if indent:
            return utf8_json(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=sort, allow_nan=False) + end)
        return utf8_json(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort, allow_nan=False) + end)
    except (ValueError, RecursionError, TypeError):
        # a non-finite float (null, as orjson writes it), deeper than the stdlib's
        # recursion, or a Fragment beside a big integer (the stdlib knows no fragment):
        # written without recursion, compact (also when indent was asked); a value
        # that is not JSON raises TypeError there too
        return encode_deep(value, sort=sort, nonfinite=b"null", lone=True) + end.encode()


def encode_deep(value: Any, *, sort: bool = False, nonfinite: bytes | None = None, lone: bool = False) -> bytes:
    """Compact UTF-8 JSON of ``value`` at any depth, without recursion (an
    explicit stack); integers of any size exactly; ``sort``: object keys
    sorted. A non-finite float is written as ``nonfinite`` (e.g. ``b"null"``),
    or raises ValueError when that is None; an ``orjson.Fragment`` verbatim.
    ``lone``: a lone surrogate in a string is written as its escape (which
    orjson cannot read back: not for capture records, whose readers use
    orjson), else it raises TypeError, as for non-JSON types."""
    out: list[bytes] = []
    stack: list[Any] = [value]     # pending pieces: bytes are written as they are
    while stack:
        v = stack.pop()
        if isinstance(v, bytes):
            out.append(v)
        elif isinstance(v, dict):
            todo: list[Any] = [b"{"]
            for n, (k, x) in enumerate(sorted(v.items()) if sort else v.items()):
                todo += [b"," if n else b"", _str(str(k), lone) + b":", x]
            todo.append(b"}")
            stack += reversed(todo)
        elif isinstance(v, list | tuple):
            todo = [b"["]
            for n, x in enumerate(v):
                todo += [b"," if n else b"", x]
            todo.append(b"]")
            stack += reversed(todo)
        elif isinstance(v, str):
            out.append(_str(v, lone))
        elif isinstance(v, bool) or v is None or isinstance(v, orjson.Fragment):
            out.append(orjson.dumps(v))
        elif isinstance(v, int):
            out.append(str(v).encode())
        elif isinstance(v, float):
            if math.isfinite(v):
                out.append(orjson.dumps(v))
            elif nonfinite is None:
                raise ValueError(f"Out of range float values are not JSON compliant: {v!r}")
            else:
                out.append(nonfinite)
        else:
            raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")
    return b"".join(out)


def _str(s: str, lone: bool) -> bytes:
    try:
        return orjson.dumps(s)
    except orjson.JSONEncodeError:          # a lone surrogate
        if not lone:
            raise
        return utf8_json(json.dumps(s, ensure_ascii=False))
