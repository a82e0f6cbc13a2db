"""JSON output of values that came from peers: orjson, falling back to the
stdlib for what orjson refuses (an integer beyond 64 bits, e.g. a peer's
JSON-RPC id ``2**80``), so the value is written exactly instead of raising
``TypeError`` half-way through ``show`` / ``export`` / ``report``."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any, *, indent: bool = False, sort: bool = False, newline: bool = False) -> bytes:
    """``value`` as compact UTF-8 JSON (``indent``: 2-space indented; ``sort``:
    object keys sorted; ``newline``: a final newline), as ``orjson.dumps``
    writes it. Raises TypeError/ValueError only for values no JSON text can
    hold (NaN, non-JSON types): never for a peer's big integer."""
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort else 0) | (orjson.OPT_APPEND_NEWLINE if newline else 0)
    try:
        return orjson.dumps(value, option=option)
    except (TypeError, orjson.JSONEncodeError):
        pass
    end = "\n" if newline else ""
    if indent:
        return (json.dumps(value, ensure_ascii=False, indent=2, sort_keys=sort, allow_nan=False) + end).encode("utf-8")
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort, allow_nan=False) + end).encode("utf-8")
