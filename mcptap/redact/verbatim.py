"""Whether a message's recorded bytes may be kept (edited in place) in a
scrubbed capture, and the exact compact encoding when they may not (pure).

Redaction works on the parsed message; bytes kept verbatim must not hold
anything that parse dropped. Two things do: an object that repeats a key
(every JSON parser keeps one of the values, so redaction never sees the
others: ``{"token": "SECRET", "token": "x"}``), and bytes the stdlib parser
cannot read again to prove it. Numbers a peer may send that orjson cannot
encode (integers beyond 64 bits) are written exactly.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from mcptap.capture.dumps import encode_deep

_dumps = orjson.dumps


def encode_exact(value: Any) -> bytes:
    """Compact JSON of a parsed message (bytes, no terminator), at any depth
    (orjson stops at 254 levels, the stdlib at the recursion limit). A peer's
    integer beyond 64 bits is written exactly; a number beyond any double
    (parsed as infinity) becomes null, as in a capture's own ``json`` field
    (docs/capture-format.md)."""
    try:
        return _dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return encode_deep(value, nonfinite=b"null")


class _Repeated(Exception):
    pass


def _no_repeats(pairs: list[tuple[str, Any]]) -> None:
    if len({k for k, _ in pairs}) != len(pairs):
        raise _Repeated


def hides_values(raw: bytes) -> bool:
    """True when the JSON text ``raw`` (one message's bytes, any terminator,
    BOM and invalid UTF-8 allowed) may hold values its parsed form lacks: an
    object repeats a key, or the text cannot be parsed again to check
    (nesting beyond the stdlib parser's recursion limit)."""
    text = raw.decode("utf-8", "replace").lstrip("\ufeff")
    try:
        json.loads(text, object_pairs_hook=_no_repeats)
    except _Repeated:
        return True
    except (ValueError, RecursionError):
        return True
    return False
