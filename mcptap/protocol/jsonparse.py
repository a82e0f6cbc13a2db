"""Parsing one frame's bytes as JSON (pure): leniently, as a peer's line is
read (a BOM skipped, invalid UTF-8 replaced, a number beyond any double read
as infinity), and exactly, for what orjson cannot hold (integers beyond 64
bits). Used by the framer (protocol/framing.py) and by whatever reads a
payload back from a capture (reader, show, serve, replay, diff)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from mcptap.model import UNPARSED

BOM = b"\xef\xbb\xbf"

_LEAD_WS = re.compile(rb"[ \t\r\n]*")


def _first_byte(data: bytes) -> bytes:
    """The first non-whitespace byte (b"" if none), without copying ``data``."""
    m = _LEAD_WS.match(data)    # always matches (maybe empty)
    i = m.end() if m is not None else 0
    return data[i:i + 1]


_JSON_FIRST = frozenset(bytes([c]) for c in b'{["-0123456789tfn')


def bad_utf8_offsets(data: bytes, limit: int = 64) -> tuple[int, ...]:
    """Offsets of bytes that do not decode as UTF-8 (at most ``limit``)."""
    out: list[int] = []
    pos = 0
    while len(out) < limit:
        try:
            data[pos:].decode("utf-8")
            break
        except UnicodeDecodeError as exc:
            out.extend(range(pos + exc.start, pos + exc.end))
            pos += exc.end
    return tuple(out[:limit])


def _not_json(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON")


#: ``parse_json_full``'s third element: bit flags of what the exact parse read
NON_FINITE = 1          # a number beyond any double (``1e400``) reads as ±infinity
LONE_SURROGATE = 2      # a ``\\uD800``-``\\uDFFF`` escape without its pair reads as U+FFFD (not in an id: ``parse_exact``)
LITERAL = 4             # (``literals=True``) a number orjson would write as another one was kept as its literal

#: a JSON escape of a UTF-16 surrogate (a lone one is valid JSON grammar, not Unicode: RFC 8259 §8.2)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_exact(raw: bytes, literals: bool = False, exact_strings: bool = False) -> tuple[Any, int] | None:
    """The slow, exact parse for the payloads orjson cannot read faithfully:
    integers of any size stay ``int`` (orjson reads those beyond 64 bits as
    float), a number beyond any double (``1e400``) reads as ±infinity instead
    of failing, and a lone surrogate escape (``"\\ud83d"``: text cut inside an
    emoji by a JavaScript peer; orjson and the Python SDK refuse the message)
    reads as U+FFFD, as invalid UTF-8 does, except in a JSON-RPC id (the
    ``"id"`` string of the object, or of each object of a top-level array) and
    the other strings that name something by identity (``_KEY_PATHS``: a
    cancel's ``requestId``, progress tokens, task ids): they are compared and
    echoed as sent, so ``"\\ud800"`` stays that one lone surrogate (a ``str`` orjson refuses to write: ``capture.dumps`` writes it
    as the escape again), never U+FFFD, which another id may be.
    ``exact_strings``: no string read as U+FFFD (a capture's own records, whose
    only such string is an id; ``LONE_SURROGATE`` then flags ids only). ``NaN``/``Infinity`` literals are
    still not JSON. ``literals``: a number orjson would write as another number
    (beyond any double, ``1e400``, which it writes as null; below the smallest,
    ``1e-400``; more digits than a double holds, ``0.30000000000000001``) is an
    ``orjson.Fragment`` of its literal instead, which orjson and ``capture.dumps``
    write verbatim (to send a peer's message again as it was). Returns
    ``(value, flags)`` (``NON_FINITE``, ``LONE_SURROGATE``, ``LITERAL``), or None
    when the bytes are not JSON; never raises."""
    body = raw[3:] if raw.startswith(BOM) else raw
    flags = 0

    def number(s: str) -> Any:
        nonlocal flags
        f = float(s)
        if math.isinf(f):
            flags |= NON_FINITE
        if literals and not _writes_as(f, s):
            flags |= LITERAL
            return orjson.Fragment(s)
        return f

    try:
        value = json.loads(body.decode("utf-8", "replace"), parse_float=number, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return None
    if _SURROGATE_ESCAPE.search(body):
        kept = _key_strings(value)
        lone = any(_SURROGATE.search(s) for _, _, s in kept)
        if not exact_strings:
            value, replaced = _without_surrogates(value)
            lone = lone or replaced
            for holder, key, s in kept:
                holder[key] = s
        if lone:
            flags |= LONE_SURROGATE
    return value, flags


#: where a JSON-RPC message holds a string that names something by identity, compared
#: as sent (``parse_exact``): its id, the request a cancel names, progress tokens, task ids
_KEY_PATHS = (("id",), ("params", "requestId"), ("params", "progressToken"), ("params", "_meta", "progressToken"),
              ("params", "taskId"), ("result", "task", "taskId"))


def _key_strings(value: Any) -> list[tuple[dict[str, Any], str, str]]:
    """(holder object, key, string) of each ``_KEY_PATHS`` string of the
    message ``value`` (or of each message of a top-level array)."""
    out = []
    for m in value if type(value) is list else (value,):
        for path in _KEY_PATHS:
            holder = m
            for k in path[:-1]:
                holder = holder.get(k) if type(holder) is dict else None
            if type(holder) is dict and type(holder.get(path[-1])) is str:
                out.append((holder, path[-1], holder[path[-1]]))
    return out


def _writes_as(f: float, literal: str) -> bool:
    """orjson writes ``f``, read from ``literal``, as the same number (maybe spelt otherwise)."""
    # decimal only here, on a float literal of the exact parse: the taps never import it
    # otherwise (its C module is ~0.3 MiB of every tap's resident pages)
    from decimal import Decimal

    written = orjson.dumps(f)
    if written == b"null":
        return False
    try:
        return Decimal(written.decode()) == Decimal(literal)
    except ArithmeticError:
        return False


def _without_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with each lone surrogate in its strings (keys too) replaced by
    U+FFFD (the stdlib joined every valid pair already), and whether any was;
    iterative: as deep as the stdlib's parse went."""
    lone = False

    def fix(s: str) -> str:
        nonlocal lone
        if _SURROGATE.search(s) is None:
            return s
        lone = True
        return _SURROGATE.sub("\ufffd", s)

    if isinstance(value, str):
        return fix(value), lone
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            items = list(v.items())
            if any(type(k) is str and _SURROGATE.search(k) for k, _ in items):
                v.clear()
                v.update((fix(k), x) for k, x in items)
            for k, x in v.items():
                if isinstance(x, str):
                    v[k] = fix(x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, str):
                    v[i] = fix(x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
    return value, lone


#: an integer literal orjson may not hold: beyond 64 bits needs 19 digits or more
LONG_DIGITS = re.compile(rb"[0-9]{19}")


def exact_json(raw: bytes) -> Any:
    """``parse_json(raw)[0]`` with every integer exact: when the bytes hold a
    run of 19 or more digits (an integer orjson would read as a float) they are
    parsed again by ``parse_exact``. For payloads read back from a capture
    (raw records), so show, serve, replay and diff see the ids and numbers the
    peer sent. Returns the value or UNPARSED; never raises."""
    value = parse_json(raw)[0]
    if value is not UNPARSED and LONG_DIGITS.search(raw):
        exact = parse_exact(raw)
        if exact is not None:
            return exact[0]
    return value


def exact_value(value: Any, raw: bytes) -> Any:
    """``value`` (parsed from ``raw`` by orjson, e.g. a Frame's or Message's)
    with every integer exact: ``raw`` parsed again when it holds a run of 19+
    digits. For consumers that compare or echo a live peer's values (replay,
    serve); the relay's hot path keeps orjson's value."""
    if value is UNPARSED or not LONG_DIGITS.search(raw):
        return value
    return exact_json(raw)


def parse_json(raw: bytes) -> tuple[Any, tuple[int, ...]]:
    """Parse one frame's bytes leniently: a BOM is skipped, invalid UTF-8 is
    replaced by U+FFFD (so ids stay readable, cases/B06), trailing CR/LF is JSON
    whitespace. Returns ``(value or UNPARSED, invalid_utf8_offsets)``; never raises."""
    value, bad, _ = parse_json_full(raw)
    return value, bad


def parse_json_full(raw: bytes) -> tuple[Any, tuple[int, ...], int]:
    """``parse_json`` plus the flags of what only the exact parse could read
    (``NON_FINITE``, ``LONE_SURROGATE``: then the value comes from
    ``parse_exact``; a finding, never \"not JSON\"); 0 for the common case."""
    body = raw[3:] if raw.startswith(BOM) else raw
    if body[:1] not in _JSON_FIRST:     # (a message's first byte is its first non-whitespace byte: no scan)
        first = _first_byte(body)
        if first and first not in _JSON_FIRST:
            return UNPARSED, (), 0      # cheap exit for log lines and banners
    try:
        return orjson.loads(body), (), 0
    except orjson.JSONDecodeError as exc:
        if _exact_may_read(exc):
            exact = parse_exact(raw)
            if exact is not None:
                return exact[0], bad_utf8_offsets(raw) if _invalid_utf8(body) else (), exact[1]
    except Exception:  # noqa: BLE001 - arbitrary peer bytes must never raise
        return UNPARSED, (), 0
    if not _invalid_utf8(body):
        return UNPARSED, (), 0
    bad = bad_utf8_offsets(raw)
    try:
        return orjson.loads(body.decode("utf-8", "replace")), bad, 0
    except orjson.JSONDecodeError as exc:
        exact = parse_exact(raw) if _exact_may_read(exc) else None
        return (UNPARSED, bad, 0) if exact is None else (exact[0], bad, exact[1])
    except Exception:  # noqa: BLE001
        return UNPARSED, bad, 0


def _exact_may_read(exc: Exception) -> bool:
    """orjson refused what ``parse_exact`` reads: a number beyond a double, a lone surrogate."""
    text = str(exc)
    return "infinity" in text or "surrogate" in text


def _invalid_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True
