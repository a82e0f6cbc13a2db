"""Field checks of capture records (``malformed``) and headers
(``malformed_header``): cheap type checks every reader of a capture makes, so
its consumers can trust the fields they read; peer bytes themselves are never
judged here. Each returns what is wrong, as error text, or None.

    malformed(rec) -> str | None            # rec: a parsed record with a str "type"
    malformed_header(header) -> str | None
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from mcptap.escape import escape_controls
from mcptap.model import Phase
from mcptap.records import RECORD_TYPES

_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_PHASES = frozenset(p.value for p in Phase)
_TYPES = frozenset(RECORD_TYPES)


def malformed(rec: dict[str, Any]) -> str | None:
    """What is wrong with a record's field types, or None (cheap checks, so
    consumers can trust them; peer bytes themselves are never judged here).
    A type that is no capture record type is wrong too (docs/capture-format.md:
    show/check passed a hand-edited ``"type":"bogus"`` record silently)."""
    if rec["type"] not in _TYPES:
        return f"type {rec['type']!r} is not a capture record type (one of {', '.join(RECORD_TYPES)})"
    # (a present key is checked even when null, but seq: optional, and null in the writer's gap record)
    f = rec.get("findings")     # (a version-1 end record's findings are its counts: migrated later)
    if "findings" in rec and rec["type"] != "end" and not (
            isinstance(f, list) and all(isinstance(x, dict) and isinstance(x.get("code"), str) for x in f)):
        return "findings is not a list of {code, severity, message}"
    seq = rec.get("seq")
    if seq is not None and not _is_int(seq):
        return _not_int("seq", seq)
    t = rec.get("t_us")
    if "t_us" in rec and not _is_int(t) and not (t is None and rec["type"] == "message"):     # (that one: "without t_us")
        return _not_int("t_us", t)
    if rec["type"] == "message":
        if rec.get("dir") not in ("c2s", "s2c"):
            return f"dir {rec.get('dir')!r} is not c2s or s2c"
        if not isinstance(seq, int):
            return "message without seq"
        if t is None:
            return "message without t_us"
        for key in ("raw", "raw_b64", "session", "method", "eol", "rev", "phase"):
            v = rec.get(key)
            if v is not None and not isinstance(v, str):
                return f"{key} is {_kind(v)}, not a string"
        for key in ("raw", "raw_b64"):
            # the bytes, when present, are what every reader takes over json: null is none of them
            if key in rec and rec[key] is None:
                return f"{key} is null, not a string"
        if "eol" in rec and not (isinstance(rec["eol"], str) and rec["eol"].isascii()):
            return f"eol {rec['eol']!r} is not an ASCII string"
        for key in ("pair", "latency_us", "link"):
            v = rec.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                return f"{key} {v!r} is not an integer"
        if "raw_b64" in rec and (len(rec["raw_b64"]) % 4 or not _B64.fullmatch(rec["raw_b64"])):
            return "raw_b64 is not base64"
        if "raw" not in rec and "raw_b64" not in rec and "json" not in rec:
            return "neither json nor raw bytes"
        if not isinstance(rec.get("kind"), str):
            return "kind missing"
        if not isinstance(rec.get("transport", {}), dict):
            return "transport is not an object"
    elif rec["type"] == "http":
        return _malformed_http(rec)
    elif rec["type"] == "end":
        return _malformed_end(rec)
    elif rec["type"] == "eof":
        if rec.get("session") is not None and not isinstance(rec["session"], str):
            return f"session is {_kind(rec['session'])}, not a string"
    elif rec["type"] == "context":
        return _malformed_context(rec)
    elif rec["type"] in ("stderr", "chunk"):
        # the bytes every reader decodes (check's tallies, show, report): a wrong type or bad
        # base64 is this record's fault, not an internal error of theirs
        for key in ("data", "data_b64"):
            v = rec.get(key)
            if v is not None and not isinstance(v, str):
                return f"{key} is {_kind(v)}, not a string"
        b64 = rec.get("data_b64")
        if b64 is not None and (len(b64) % 4 or not _B64.fullmatch(b64)):
            return "data_b64 is not base64"
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_KINDS = {bool: "a boolean", int: "an integer", float: "a number", dict: "an object", list: "a list", type(None): "null"}


def _kind(v: Any) -> str:
    """What JSON value ``v`` is, for an error message ("an object", "a list", …)."""
    return _KINDS.get(type(v), f"a {type(v).__name__}")


def _not_int(key: str, v: Any) -> str:
    """Why ``v`` is not an integer field: orjson reads an integer literal
    beyond 64 bits as a float, which ``!r`` would print as if it were one."""
    if type(v) is float and v.is_integer() and abs(v) >= 2**63:
        return f"{key} is beyond 64 bits ({v:.4g})"
    return f"{key} {v!r} is not an integer"


#: what a context record's ``state`` may say (``Annotator.assume``'s arguments), and of which type
_CONTEXT_STATE = {"phase": str, "revision": str, "session": str, "client_caps": dict, "server_caps": dict}


def _malformed_context(rec: dict[str, Any]) -> str | None:
    """The state a capture that started mid-session assumes (re-annotation starts from it)."""
    state = rec.get("state")
    if not isinstance(state, dict):
        return "state is not an object"
    for key, v in state.items():
        if key not in _CONTEXT_STATE:
            return f"state has an unknown key {key!r} (known: {', '.join(_CONTEXT_STATE)})"
        if v is not None and not isinstance(v, _CONTEXT_STATE[key]):
            return f"state.{key} is {_kind(v)}, not a{'n object' if _CONTEXT_STATE[key] is dict else ' string'}"
    if state.get("phase") is not None and state["phase"] not in _PHASES:
        return f"state.phase {state['phase']!r} is not a phase ({', '.join(sorted(_PHASES))})"
    return None


def _malformed_http(rec: dict[str, Any]) -> str | None:
    """An http record's fields that the HTTP commands (show, diff, export, replay) read."""
    if not isinstance(rec.get("event"), str):
        return "event missing"
    for key in ("exchange", "conn", "status"):
        if key in rec and not _is_int(rec[key]):
            return f"{key} {rec[key]!r} is not an integer"
    for key in ("method", "target", "reason", "version"):
        if key in rec and not isinstance(rec[key], str):
            return f"{key} is {_kind(rec[key])}, not a string"
    h = rec.get("headers", [])
    if not isinstance(h, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in h):
        return "headers is not a list of [name, value] pairs"
    return None


def _malformed_end(rec: dict[str, Any]) -> str | None:
    """The end record's counts, read by every summary (show, ls, report)."""
    for key in ("severities", "codes"):
        v = rec.get(key, {})
        if not isinstance(v, dict) or not all(_is_int(n) for n in v.values()):
            return f"{key} is not an object of counts"
    for key in ("pending", "cancelled_unanswered", "unanswered"):
        v = rec.get(key, [])
        if not isinstance(v, list) or not all(isinstance(p, dict) for p in v):
            return f"{key} is not a list of objects"
    for key in ("c2s", "s2c", "stderr", "chunks"):
        v = rec.get(key, {})
        if not isinstance(v, dict):
            return f"{key} is not an object"
        for count in ("bytes", "messages", "records"):
            if count in v and not _is_int(v[count]):
                return f"{key}.{count} {v[count]!r} is not an integer"
        if "sha256" in v and not isinstance(v["sha256"], str):
            return f"{key}.sha256 is not a string"
    return None


def malformed_header(header: dict[str, Any]) -> str | None:
    """The header fields every command reads (transport, target, start time)."""
    for key in ("transport", "started", "mcptap", "rules"):
        v = header.get(key)
        if v is not None and not isinstance(v, str):
            return f"{key} is {_kind(v)}, not a string"
    started = header.get("started")
    if isinstance(started, str) and not _iso_time(started):
        # every time of the capture counts from it (show, export's spans and message times, HTML):
        # one that does not parse put them at 1970 or left them out, silently
        return f"started {escape_controls(repr(started[:80]))} is not an ISO 8601 time (2026-01-15T09:30:00.000000Z)"
    if header.get("transport", "stdio") not in ("stdio", "http"):
        return f"transport {header['transport']!r} is not stdio or http"
    if not isinstance(header.get("target", {}), dict):
        return "target is not an object"
    return None


def _iso_time(text: str) -> bool:
    """Whether a header's ``started`` reads as ISO 8601 (``Z`` or an offset; none: UTC), as
    ``export.span_model.epoch_us`` reads it."""
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
