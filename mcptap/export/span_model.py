"""The span model of the OTLP mapping (pure): ``Span`` and ``Event``, OTLP
enum values, capture times as Unix time, and the attribute helpers
``SpanBuilder`` (``export/spans.py``) shares with the HAR and message exports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from mcptap.escape import escape_surrogates
from mcptap.protocol.gap_pending import gap_finding
from mcptap.records.message import exact_payload

#: OTLP ``Span.SpanKind`` values (opentelemetry/proto/trace/v1/trace.proto).
INTERNAL, SERVER, CLIENT = 1, 2, 3
#: OTLP ``Status.StatusCode`` values.
STATUS_UNSET, STATUS_ERROR = 0, 2

Attr = str | int | float | bool


@dataclass(slots=True)
class Event:
    """A span event at ``t_us`` (µs since capture start)."""

    name: str
    t_us: int
    attributes: dict[str, Attr] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    """One finished span. ``trace_id``: 16 bytes, ``span_id``: 8 bytes;
    ``kind``/``status_code``: OTLP enum values; times in µs since capture start."""

    trace_id: bytes
    span_id: bytes
    name: str
    kind: int
    start_us: int
    end_us: int
    attributes: dict[str, Attr] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    status_code: int = STATUS_UNSET
    status_message: str = ""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(started: str) -> int:
    """µs since the Unix epoch of a header ``started`` time (ISO 8601, ``Z``;
    one without an offset is read as UTC, as the writer means it), exact.
    Raises ValueError for a malformed time."""
    dt = datetime.fromisoformat(started.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    # exact integers: dt.timestamp() is a float, a second off by the year 9999
    return (dt - _EPOCH) // timedelta(microseconds=1)


def iso_us(us: int) -> str | None:
    """µs since the Unix epoch as ISO 8601 UTC (``2026-01-15T09:30:00.000000Z``);
    None when that is outside the years 1-9999 ISO 8601 and ``datetime`` hold
    (a hand-edited record's ``t_us`` of, say, ``2**62``)."""
    try:
        return (_EPOCH + timedelta(microseconds=us)).isoformat(timespec="microseconds").replace("+00:00", "Z")
    except OverflowError:
        return None


def id_text(v: Any) -> str:
    """``jsonrpc.request.id``: the id's string representation (strings as
    they are, numbers in JSON form)."""
    if isinstance(v, str):
        return v
    try:
        return orjson.dumps(v).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(v)    # integers beyond 64 bits: Python's encoder has no limit


def params_of(value: Any) -> dict[str, Any]:
    p = value.get("params") if isinstance(value, dict) else None
    return p if isinstance(p, dict) else {}


def event_attributes(rec: dict[str, Any], method: str) -> dict[str, Attr]:
    p = params_of(rec.get("json"))
    attrs: dict[str, Attr] = {"mcptap.seq": rec["seq"]}
    if method == "notifications/progress":
        for src, dst in (("progress", "mcptap.progress"), ("total", "mcptap.progress.total")):
            v = p.get(src)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                attrs[dst] = v
        if isinstance(p.get("message"), str):
            attrs["mcptap.progress.message"] = p["message"]
    elif isinstance(p.get("reason"), str):
        attrs["mcptap.cancel.reason"] = p["reason"]
    return attrs


def finding_events(rec: dict[str, Any]) -> list[Event]:
    """The ``mcptap.finding`` events of a record's findings (a gap record: its ``capture.gap``)."""
    out = []
    t = rec.get("t_us", 0)
    fs = rec.get("findings")
    if rec.get("type") == "gap" and not fs:
        fs = [gap_finding(rec).to_json()]       # as check reports it: a gap record is a capture.gap finding
    for f in fs or ():
        if isinstance(f, dict) and isinstance(f.get("code"), str):
            out.append(Event("mcptap.finding", t, {"mcptap.finding.code": f["code"], "mcptap.finding.severity": str(f.get("severity", "")),
                                                   "mcptap.finding.message": str(f.get("message", "")), "mcptap.seq": rec.get("seq", 0)}))
    return out


def exact_shown(rec: dict[str, Any]) -> dict[str, Any]:
    """A message record whose raw bytes hold a lone surrogate escape (a method
    ``"tools/x\\ud800"``, read as U+FFFD into ``json``, ``method`` and ``id``)
    with those three as the peer sent them, each lone surrogate in escape form
    (``tools/x\\ud800``, ``escape.escape_surrogates``: OTLP JSON and protobuf
    take UTF-8 only); any other record as it is."""
    exact = exact_payload(rec) if rec.get("type") == "message" else None
    if exact is None:
        return rec
    try:
        value = _escaped(exact)
    except RecursionError:      # (nested deeper than Python recurses: the record's own values)
        return rec
    out = dict(rec, json=value)
    if isinstance(value, dict):
        for k in ("method", "id"):
            if isinstance(value.get(k), str):
                out[k] = value[k]
    return out


def _escaped(v: Any) -> Any:
    if isinstance(v, str):
        return escape_surrogates(v)
    if isinstance(v, dict):
        return {escape_surrogates(k): _escaped(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_escaped(x) for x in v]
    return v
