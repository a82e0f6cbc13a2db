"""A redacted message's new bytes (pure): whether its recorded bytes may be
kept (edited in place) in a scrubbed capture, the exact compact encoding when
they may not, and ``rebuild``, which chooses between the two.

Redaction works on the parsed message; bytes kept verbatim must not hold
anything that parse dropped. Two things do: an object that repeats a key
(every JSON parser keeps one of the values, so redaction never sees the
others: ``{"token": "SECRET", "token": "x"}``), and bytes the stdlib parser
cannot read again to prove it. Numbers a peer may send that orjson cannot
encode (integers beyond 64 bits) are written exactly, and so is a lone UTF-16
surrogate escape (``"\\ud800"``: JSON grammar, not Unicode): a message that
holds one is redacted as ``exact_message`` reads it (every such string with its
surrogate) and written with the escape again, never U+FFFD.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from mcptap.capture.dumps import encode_deep
from mcptap.model import UNPARSED
from mcptap.protocol.jsonparse import parse_exact, parse_json

_dumps = orjson.dumps


def encode_exact(value: Any) -> bytes:
    """Compact JSON of a parsed message (bytes, no terminator), at any depth
    (orjson stops at 254 levels, the stdlib at the recursion limit). A peer's
    integer beyond 64 bits is written exactly; a number beyond any double
    (parsed as infinity) becomes null, as in a capture's own ``json`` field
    (docs/capture-format.md); a lone surrogate in a string (``exact_message``)
    is written as its escape, ``\\ud800``. Raises TypeError only for non-JSON
    types."""
    try:
        return _dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return encode_deep(value, nonfinite=b"null", lone=True)     # a lone surrogate (an exact id) as its escape, as the peer sent it


#: a JSON escape of a UTF-16 surrogate (lone or half of a pair: the exact parse tells)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_escape(raw: bytes) -> bool:
    """Whether ``raw`` holds a UTF-16 surrogate escape (``\\ud800``; maybe half of a pair)."""
    return _SURROGATE_ESCAPE.search(raw) is not None


def exact_message(raw: bytes) -> Any:
    """The message in ``raw`` (one frame's bytes) as redaction must see it:
    ``parse_json``'s value, except that when the bytes hold a lone surrogate
    escape every string keeps its surrogate (``parse_exact(exact_strings=True)``;
    ``parse_json`` reads one as U+FFFD outside ids, which written back would
    change the peer's bytes). UNPARSED when the bytes are not JSON; never raises."""
    if _SURROGATE_ESCAPE.search(raw):
        exact = parse_exact(raw, exact_strings=True)
        if exact is not None:
            return exact[0]
    return parse_json(raw)[0]


def has_surrogates(value: Any) -> bool:
    """Whether a string of ``value`` (keys too) holds a lone surrogate; iterative."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def record_json(value: Any) -> Any:
    """``value`` as a record's ``json`` holds it: each lone surrogate as U+FFFD
    (records are read by orjson, which reads none; the record's ``raw`` keeps the
    escape); ``value`` itself when it holds none. UNPARSED when a surrogate stays
    (in an id: such a record has no ``json``, docs/capture-format.md)."""
    if not has_surrogates(value):
        return value
    fixed = parse_json(encode_exact(value))[0]       # the lenient parse: U+FFFD, save in ids
    return UNPARSED if fixed is UNPARSED or has_surrogates(fixed) else fixed


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


def rebuild(raw: bytes, value: Any, red: Any, eol: bytes) -> bytes:
    """New bytes for a redacted message: in place when the source bytes
    were kept verbatim (and hold nothing the parsed value lacks), else the
    compact encoding + the terminator."""
    canonical = encode_exact(value) + eol
    compact = encode_exact(red)
    if raw == canonical:
        return compact + eol
    tail = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
    if hides_values(raw):
        return compact + tail
    # surrogateescape: invalid UTF-8 in the source survives (framing.invalid_utf8 stays)
    text = raw.decode("utf-8", "surrogateescape")
    try:
        new = _replace_secrets(text, value, red)
        if new is not None:
            new_raw = new.encode("utf-8", "surrogateescape")
            if exact_message(new_raw) == red:
                return new_raw
    except RecursionError:      # a deeply nested message: comparing it is not possible, re-encoding is
        pass
    # the terminator (CR LF, LF, nothing) stays; the body becomes canonical
    return compact + tail


def _replace_secrets(text: str, before: Any, after: Any) -> str | None:
    """Replace, in ``text``, the JSON encoding of every string that changed
    between ``before`` and ``after`` (same shape) by the new one."""
    pairs: list[tuple[str, str]] = []
    _diff_strings(before, after, pairs, 0)
    if not pairs:
        return None
    # encode_exact: a string with a lone surrogate is found by its escape (as a compact writer spells it)
    encoded = {(encode_exact(old).decode()[1:-1], encode_exact(new).decode()[1:-1]) if isinstance(old, str)
               else (encode_exact(old).decode(), encode_exact(new).decode()) for old, new in pairs}
    # longest first: a secret that contains another is replaced whole (a number under a
    # secret key is a pair too: its encoding is replaced by the placeholder string's)
    for enc_old, enc_new in sorted(encoded, key=lambda p: -len(p[0])):
        if not enc_old or enc_old not in text:
            return None
        text = text.replace(enc_old, enc_new)
    return text


def _diff_strings(a: Any, b: Any, out: list[tuple[Any, Any]], depth: int) -> None:
    if a is b or depth > 2000:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k, v in a.items():
            _diff_strings(v, b.get(k), out, depth + 1)
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            _diff_strings(x, y, out, depth + 1)
    elif a != b and isinstance(b, str) and (isinstance(a, str | int | float) and not isinstance(a, bool)):
        out.append((a, b))
