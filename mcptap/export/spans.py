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
  A request left open while a ``gap`` record covered its answer's direction
  may have been answered in the hole (``capture.answers_in_gap``): its span
  ends with ``mcptap.answer_in_gap`` true and no error status;
* a ``gap`` record is an ``INTERNAL`` span carrying its ``capture.gap`` finding,
  as eof and process records carry theirs.

Trace ids are deterministic per (capture start, session): the same capture
always exports the same ids, and the live exporter uses the same ids as a
later ``mcptap export`` of its capture. Pure and sans-IO: times are the
capture's ``t_us``; ``SpanBuilder.epoch_us`` turns them into wall-clock time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from mcptap.export.span_model import (
    CLIENT,
    INTERNAL,
    SERVER,
    STATUS_ERROR,
    STATUS_UNSET,
    Attr,
    Event,
    Span,
    epoch_us,
    event_attributes,
    exact_shown,
    finding_events,
    id_text,
    iso_us,
    params_of,
)
from mcptap.show.lone import LoneNames

__all__ = ["CLIENT", "INTERNAL", "SERVER", "STATUS_ERROR", "STATUS_UNSET", "Attr", "Event", "Span", "SpanBuilder", "epoch_us", "id_text",
           "iso_us", "iter_spans", "spans_of"]

#: notifications that are events of the request they refer to (record ``link``)
EVENT_METHODS = frozenset({"notifications/progress", "notifications/cancelled"})
#: methods whose ``params.uri`` is ``mcp.resource.uri`` (semconv note [4])
_URI_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"})


class _Open:
    __slots__ = ("span", "session", "revision", "dir", "in_gap")

    def __init__(self, span: Span, session: Any, revision: Any, direction: Any) -> None:
        self.span = span
        self.session = session
        self.revision = revision
        self.dir = direction            # the request's ("c2s" | "s2c")
        self.in_gap = False             # a gap covered its answer's direction while it was open


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
        self._names = LoneNames()       # the exact names of finding messages (show/lone.py)
        self._traces: dict[Any, bytes] = {}
        self._stdio_session: Any = None
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
        """One capture record in; the spans it finished out. A name with a lone
        surrogate (``tools/x\\ud800``: U+FFFD in the record) is given as the peer
        sent it, in escape form, in names, attributes and finding messages."""
        self._names.feed(rec)
        rec = exact_shown(self._names.findings(rec))
        if self.transport == "stdio":
            # a stdio capture's later sessions (replay's replay-session-N, serve --extend's episode-N)
            # key their messages and eofs; the server's process records carry no key: they belong to
            # the session running when they were written
            if rec.get("session") is not None:
                self._stdio_session = rec["session"]
            elif rec.get("type") != "message" and self._stdio_session is not None:
                rec = dict(rec, session=self._stdio_session)
        t = rec.get("t_us")
        if isinstance(t, int):
            self.last_t = max(self.last_t, t)
        if rec.get("type") != "message":
            if rec.get("type") == "gap":
                self._gap(rec.get("dir"))
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
        params = params_of(rec.get("json"))
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
        span.events += finding_events(rec)
        key = (seq, id_text(rec.get("id")) if batch else None)
        self._open[key] = _Open(span, rec.get("session"), rec.get("rev"), rec.get("dir"))

    def _gap(self, direction: Any) -> None:
        """A gap record in ``direction`` (no valid one: both): the open requests
        whose answers travel that way may be answered in it (protocol/gap_pending.py)."""
        for op in self._open.values():
            if direction not in ("c2s", "s2c") or op.dir != direction:
                op.in_gap = True

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
        span.events += finding_events(rec)
        return [span]

    def _notification(self, rec: dict[str, Any], sub: str) -> list[Span]:
        method = rec.get("method") or ""
        t = rec.get("t_us", 0)
        if method in EVENT_METHODS:
            key = self._find(rec.get("link"), params_of(rec.get("json")).get("requestId"))
            if key is not None:
                op = self._open[key]
                op.span.events.append(Event(method, t, event_attributes(rec, method)))
                op.span.events += finding_events(rec)
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
            attrs.update(event_attributes(rec, method))
        span = Span(self.trace_id(rec.get("session")), self.span_id(rec["seq"], sub), method, CLIENT if client else SERVER, t, t, attrs)
        span.events += finding_events(rec)
        return [span]

    def _attributes(self, rec: dict[str, Any], method: str, client: bool) -> dict[str, Attr]:
        attrs: dict[str, Attr] = {"mcp.method.name": method, **self.common}
        if client:
            attrs.update(self.client_side)
        if rec.get("session") is not None and self.transport != "stdio":    # stdio: mcptap's own session key, no MCP one
            attrs["mcp.session.id"] = str(rec["session"])
        if isinstance(rec.get("rev"), str):
            attrs["mcp.protocol.version"] = rec["rev"]
        value = rec.get("json")
        if isinstance(value, dict):
            jv = value.get("jsonrpc")
            if isinstance(jv, str) and jv != "2.0":
                attrs["jsonrpc.protocol.version"] = jv
        if method in _URI_METHODS:
            uri = params_of(value).get("uri")
            if isinstance(uri, str):
                attrs["mcp.resource.uri"] = uri
        return attrs

    def _record_span(self, rec: dict[str, Any]) -> list[Span]:
        """A record that is no pair (non-JSON line, unmatched response, HTTP
        or process event) becomes a span only to carry its findings."""
        events = finding_events(rec)
        if not events or not isinstance(rec.get("seq"), int):
            return []
        typ = rec.get("type", "record")
        what = rec.get("kind") if typ == "message" else rec.get("event") or rec.get("dir")
        t = rec.get("t_us", 0)
        attrs: dict[str, Attr] = {"mcptap.seq": rec["seq"], "mcptap.record": typ}
        if rec.get("session") is not None and self.transport != "stdio":    # stdio: mcptap's own session key, no MCP one
            attrs["mcp.session.id"] = str(rec["session"])
        name = f"mcptap {typ} {what}" if isinstance(what, str) else f"mcptap {typ}"
        return [Span(self.trace_id(rec.get("session")), self.span_id(rec["seq"], "record"), name, INTERNAL, t, t, attrs, events)]

    def finish(self, t_us: int | None = None) -> list[Span]:
        """End every open request's span at ``t_us`` (default: the last time
        seen) as ``error.type = no_response``; one a recording gap covered
        (its answer may be in the hole) as ``mcptap.answer_in_gap``, no error.
        Returns them (request order)."""
        t = self.last_t if t_us is None else t_us
        out = []
        for op in sorted(self._open.values(), key=lambda o: o.span.start_us):
            span = op.span
            span.end_us = max(span.start_us, t)
            if op.in_gap:
                span.attributes["mcptap.answer_in_gap"] = True
                out.append(span)
                continue
            span.attributes["error.type"] = "no_response"
            span.status_code, span.status_message = STATUS_ERROR, "no response before the capture ended"
            out.append(span)
        self._open.clear()
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
