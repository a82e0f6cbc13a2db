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


def parse_exact(raw: bytes) -> tuple[Any, bool] | None:
    """The slow, exact parse for the payloads orjson cannot read faithfully:
    integers of any size stay ``int`` (orjson reads those beyond 64 bits as
    float), a number beyond any double (``1e400``) reads as ±infinity instead
    of failing. ``NaN``/``Infinity`` literals are still not JSON. Returns
    ``(value, overflow)``, or None when the bytes are not JSON; never raises."""
    body = raw[3:] if raw.startswith(BOM) else raw
    overflow = False

    def number(s: str) -> float:
        nonlocal overflow
        f = float(s)
        if math.isinf(f):
            overflow = True
        return f

    try:
        return json.loads(body.decode("utf-8", "replace"), parse_float=number, parse_constant=_not_json), overflow
    except (ValueError, RecursionError):
        return None


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


def parse_json_full(raw: bytes) -> tuple[Any, tuple[int, ...], bool]:
    """``parse_json`` plus whether a number overflowed a double (then the
    value comes from ``parse_exact``: a finding, never \"not JSON\")."""
    body = raw[3:] if raw.startswith(BOM) else raw
    if body[:1] not in _JSON_FIRST:     # (a message's first byte is its first non-whitespace byte: no scan)
        first = _first_byte(body)
        if first and first not in _JSON_FIRST:
            return UNPARSED, (), False  # cheap exit for log lines and banners
    try:
        return orjson.loads(body), (), False
    except orjson.JSONDecodeError as exc:
        if "infinity" in str(exc):
            exact = parse_exact(raw)
            if exact is not None:
                return exact[0], bad_utf8_offsets(raw) if _invalid_utf8(body) else (), exact[1]
    except Exception:  # noqa: BLE001 - arbitrary peer bytes must never raise
        return UNPARSED, (), False
    if not _invalid_utf8(body):
        return UNPARSED, (), False
    bad = bad_utf8_offsets(raw)
    try:
        return orjson.loads(body.decode("utf-8", "replace")), bad, False
    except Exception:  # noqa: BLE001
        return UNPARSED, bad, False


def _invalid_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True
