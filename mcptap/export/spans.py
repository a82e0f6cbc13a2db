"""Capture records → spans, by the OpenTelemetry semantic conventions for MCP.

Source: open-telemetry/semantic-conventions ``docs/gen-ai/mcp.md`` and
``model/mcp/{spans,common,registry}.yaml`` (status Development; since May 2026
maintained in open-telemetry/semantic-conventions-genai). What they give and
how mcptap uses it (docs/export.md has the full table):

* one span per JSON-RPC request/response pair, named ``{mcp.method.name}
  {target}`` where target is ``gen_ai.tool.name`` / ``gen_ai.prompt.name``,
  else ``{mcp.method.name}``;
* kind: the tap records what the host (MCP client) sent and received, so a
  request the client sent is a ``CLIENT`` span and one the server sent
  (sampling, elicitation, roots) is a ``SERVER`` span — the conventions' MCP
  server span "reported by the MCP client when server initiates the operation";
* progress and cancellation notifications are events of the request's span;
  other notifications are spans of their own (zero length, same kind rule);
* findings are span events ``mcptap.finding`` with code, severity, message;
* ``error.type``: the JSON-RPC error code (also ``rpc.response.status_code``),
  ``tool_error`` for a ``CallToolResult`` with ``isError``; mcptap's own
  values ``cancelled`` (the sender cancelled; the span ends there) and
  ``no_response`` (never answered before the capture ended). Span status
  ERROR when ``error.type`` is set, described by the JSON-RPC error message.

Trace ids are deterministic per (capture start, session): the same capture
always exports the same ids, and the live exporter uses the same ids as a
later ``mcptap export`` of its capture. Pure and sans-IO: times are the
capture's ``t_us``; ``SpanBuilder.epoch_us`` turns them into wall-clock time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson

#: OTLP ``Span.SpanKind`` values (opentelemetry/proto/trace/v1/trace.proto).
INTERNAL, SERVER, CLIENT = 1, 2, 3
#: OTLP ``Status.StatusCode`` values.
STATUS_UNSET, STATUS_ERROR = 0, 2

#: notifications that are events of the request they refer to (record ``link``)
EVENT_METHODS = frozenset({"notifications/progress", "notifications/cancelled"})
#: methods whose ``params.uri`` is ``mcp.resource.uri`` (semconv note [4])
_URI_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"})

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


class _Open:
    __slots__ = ("span", "session", "revision")

    def __init__(self, span: Span, session: Any, revision: Any) -> None:
        self.span = span
        self.session = session
        self.revision = revision


class SpanBuilder:
    """Incremental: ``feed(record)`` returns the spans that record finished;
    ``finish(t_us)`` ends what is still open (unanswered requests).

    ``header``: the capture's header record (``started``, ``transport``,
    ``target``). Records are capture record dicts (``export.digest`` makes one
    from a live Message). Raises nothing on odd records: what it cannot map
    it leaves out.
    """

    def __init__(self, header: dict[str, Any]) -> None:
        self.started = str(header.get("started") or "")
        try:
            self.epoch_us = epoch_us(self.started)
        except ValueError:
            self.epoch_us = 0
        self.transport = header.get("transport", "stdio")
        self.common: dict[str, Attr] = {}
        self.client_side: dict[str, Attr] = {}
        if self.transport == "http":
            self.common.update({"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1"})
            url = (header.get("target") or {}).get("url") or (header.get("target") or {}).get("upstream")
            if isinstance(url, str):
                try:
                    u = urlsplit(url)
                    if u.hostname:
                        self.client_side["server.address"] = u.hostname
                        self.client_side["server.port"] = u.port or (443 if u.scheme == "https" else 80)
                except ValueError:
                    pass
        else:
            self.common["network.transport"] = "pipe"
        self._open: dict[tuple[int, str | None], _Open] = {}
        self._traces: dict[Any, bytes] = {}
        self.last_t = 0

    # -- ids -------------------------------------------------------------------------------
    def trace_id(self, session: Any) -> bytes:
        """16 bytes, deterministic per (capture start, session)."""
        tid = self._traces.get(session)
        if tid is None:
            key = f"mcptap\0{self.started}\0{'' if session is None else session}".encode()
            tid = self._traces[session] = hashlib.sha256(key).digest()[:16]
        return tid

    def span_id(self, seq: int, sub: str = "") -> bytes:
        return hashlib.sha256(f"mcptap\0{self.started}\0{seq}\0{sub}".encode()).digest()[:8]

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, rec: dict[str, Any]) -> list[Span]:
        """One capture record in; the spans it finished out."""
        t = rec.get("t_us")
        if isinstance(t, int):
            self.last_t = max(self.last_t, t)
        if rec.get("type") != "message":
            return self._record_span(rec)
        kind = rec.get("kind")
        value = rec.get("json")
        members = rec.get("members")
        if kind == "batch" and isinstance(value, list) and isinstance(members, list):
            out: list[Span] = []
            for m in members:
                if not isinstance(m, dict):
                    continue
                i = m.get("index")
                member = value[i] if isinstance(i, int) and 0 <= i < len(value) else None
                sub = {**rec, **{k: v for k, v in m.items() if k != "index"}, "json": member, "findings": ()}
                out += self._message(sub, f"#{i}", batch=True)
            return out + self._record_span(rec)
        return self._message(rec, "", batch=False)

    def _message(self, rec: dict[str, Any], sub: str, batch: bool) -> list[Span]:
        kind = rec.get("kind")
        if kind == "request":
            self._request(rec, sub, batch)
            return []
        if kind in ("response", "error"):
            return self._response(rec)
        if kind == "notification":
            return self._notification(rec, sub)
        return self._record_span(rec)

    def _request(self, rec: dict[str, Any], sub: str, batch: bool) -> None:
        seq, t = rec["seq"], rec.get("t_us", 0)
        method = rec.get("method") or ""
        client = rec.get("dir") == "c2s"
        attrs = self._attributes(rec, method, client)
        params = _params(rec.get("json"))
        target = None
        if method == "tools/call" and isinstance(params.get("name"), str):
            target = attrs["gen_ai.tool.name"] = params["name"]
            attrs["gen_ai.operation.name"] = "execute_tool"
        elif method == "prompts/get" and isinstance(params.get("name"), str):
            target = attrs["gen_ai.prompt.name"] = params["name"]
        if "id" in rec and rec["id"] is not None:
            attrs["jsonrpc.request.id"] = id_text(rec["id"])
        attrs["mcptap.request.seq"] = seq
        exchange = (rec.get("transport") or {}).get("exchange")
        if isinstance(exchange, int):
            attrs["mcptap.http.exchange"] = exchange
        span = Span(self.trace_id(rec.get("session")), self.span_id(seq, sub), f"{method} {target}" if target else method,
                    CLIENT if client else SERVER, t, t, attrs)
        span.events += _finding_events(rec)
        key = (seq, id_text(rec.get("id")) if batch else None)
        self._open[key] = _Open(span, rec.get("session"), rec.get("rev"))

    def _find(self, seq: Any, rid: Any) -> tuple[int, str | None] | None:
        if not isinstance(seq, int):
            return None
        for key in ((seq, None), (seq, id_text(rid))):
            if key in self._open:
                return key
        return None

    def _response(self, rec: dict[str, Any]) -> list[Span]:
        key = self._find(rec.get("pair"), rec.get("id"))
        if key is None:
            return self._record_span(rec)   # unmatched (or after a cancel): findings only
        op = self._open.pop(key)
        span = op.span
        t = rec.get("t_us", span.start_us)
        span.end_us = max(span.start_us, t)
        span.attributes["mcptap.response.seq"] = rec["seq"]
        if "mcp.protocol.version" not in span.attributes and isinstance(rec.get("rev"), str):
            span.attributes["mcp.protocol.version"] = rec["rev"]
        value = rec.get("json")
        if rec.get("kind") == "error":
            err = value.get("error") if isinstance(value, dict) else None
            code = err.get("code") if isinstance(err, dict) else None
            if isinstance(code, int) and not isinstance(code, bool):
                span.attributes["error.type"] = span.attributes["rpc.response.status_code"] = str(code)
            else:
                span.attributes["error.type"] = "_OTHER"
            msg = err.get("message") if isinstance(err, dict) else None
            span.status_code, span.status_message = STATUS_ERROR, msg if isinstance(msg, str) else ""
        elif span.attributes.get("mcp.method.name") == "tools/call":
            result = value.get("result") if isinstance(value, dict) else None
            if isinstance(result, dict) and result.get("isError") is True:
                span.attributes["error.type"] = "tool_error"
                span.status_code = STATUS_ERROR
        span.events += _finding_events(rec)
        return [span]

    def _notification(self, rec: dict[str, Any], sub: str) -> list[Span]:
        method = rec.get("method") or ""
        t = rec.get("t_us", 0)
        if method in EVENT_METHODS:
            key = self._find(rec.get("link"), _params(rec.get("json")).get("requestId"))
            if key is not None:
                op = self._open[key]
                op.span.events.append(Event(method, t, _event_attributes(rec, method)))
                op.span.events += _finding_events(rec)
                if method == "notifications/cancelled":
                    del self._open[key]
                    span = op.span
                    span.end_us = max(span.start_us, t)
                    span.attributes["error.type"] = "cancelled"
                    span.status_code, span.status_message = STATUS_ERROR, "cancelled by its sender"
                    return [span]
                return []
        client = rec.get("dir") == "c2s"
        attrs = self._attributes(rec, method, client)
        attrs["mcptap.seq"] = rec["seq"]
        if method in EVENT_METHODS:
            attrs.update(_event_attributes(rec, method))
        span = Span(self.trace_id(rec.get("session")), self.span_id(rec["seq"], sub), method, CLIENT if client else SERVER, t, t, attrs)
        span.events += _finding_events(rec)
        return [span]

    def _attributes(self, rec: dict[str, Any], method: str, client: bool) -> dict[str, Attr]:
        attrs: dict[str, Attr] = {"mcp.method.name": method, **self.common}
        if client:
            attrs.update(self.client_side)
        if rec.get("session") is not None:
            attrs["mcp.session.id"] = str(rec["session"])
        if isinstance(rec.get("rev"), str):
            attrs["mcp.protocol.version"] = rec["rev"]
        value = rec.get("json")
        if isinstance(value, dict):
            jv = value.get("jsonrpc")
            if isinstance(jv, str) and jv != "2.0":
                attrs["jsonrpc.protocol.version"] = jv
        if method in _URI_METHODS:
            uri = _params(value).get("uri")
            if isinstance(uri, str):
                attrs["mcp.resource.uri"] = uri
        return attrs

    def _record_span(self, rec: dict[str, Any]) -> list[Span]:
        """A record that is no pair (non-JSON line, unmatched response, HTTP
        or process event) becomes a span only to carry its findings."""
        events = _finding_events(rec)
        if not events or not isinstance(rec.get("seq"), int):
            return []
        typ = rec.get("type", "record")
        what = rec.get("kind") if typ == "message" else rec.get("event") or rec.get("dir")
        t = rec.get("t_us", 0)
        attrs: dict[str, Attr] = {"mcptap.seq": rec["seq"], "mcptap.record": typ}
        if rec.get("session") is not None:
            attrs["mcp.session.id"] = str(rec["session"])
        name = f"mcptap {typ} {what}" if isinstance(what, str) else f"mcptap {typ}"
        return [Span(self.trace_id(rec.get("session")), self.span_id(rec["seq"], "record"), name, INTERNAL, t, t, attrs, events)]

    def finish(self, t_us: int | None = None) -> list[Span]:
        """End every open request's span at ``t_us`` (default: the last time
        seen) as ``error.type = no_response``. Returns them (request order)."""
        t = self.last_t if t_us is None else t_us
        out = []
        for op in sorted(self._open.values(), key=lambda o: o.span.start_us):
            span = op.span
            span.end_us = max(span.start_us, t)
            span.attributes["error.type"] = "no_response"
            span.status_code, span.status_message = STATUS_ERROR, "no response before the capture ended"
            out.append(span)
        self._open.clear()
        return out


def _params(value: Any) -> dict[str, Any]:
    p = value.get("params") if isinstance(value, dict) else None
    return p if isinstance(p, dict) else {}


def _event_attributes(rec: dict[str, Any], method: str) -> dict[str, Attr]:
    p = _params(rec.get("json"))
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


def _finding_events(rec: dict[str, Any]) -> list[Event]:
    out = []
    t = rec.get("t_us", 0)
    for f in rec.get("findings") or ():
        if isinstance(f, dict) and isinstance(f.get("code"), str):
            out.append(Event("mcptap.finding", t, {"mcptap.finding.code": f["code"], "mcptap.finding.severity": str(f.get("severity", "")),
                                                   "mcptap.finding.message": str(f.get("message", "")), "mcptap.seq": rec.get("seq", 0)}))
    return out


def iter_spans(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> Iterator[Span]:
    """Every span of a capture (records after its header), in end order, as
    the records come (only open requests' spans are held)."""
    b = SpanBuilder(header)
    for rec in records:
        if rec.get("type") == "end":
            yield from b._record_span(rec)
            yield from b.finish(rec.get("t_us") if isinstance(rec.get("t_us"), int) else None)
            continue
        yield from b.feed(rec)
    yield from b.finish()


def spans_of(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> list[Span]:
    """Every span of a capture (records after its header), in end order."""
    return list(iter_spans(header, records))
