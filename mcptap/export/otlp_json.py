"""Spans → OTLP/JSON: the JSON encoding of ``ExportTraceServiceRequest``
(opentelemetry-proto ``opentelemetry/proto/collector/trace/v1``), one request
per line, as the OpenTelemetry Collector's ``otlpjsonfile`` receiver reads and
its ``file`` exporter writes.

The OTLP specification's JSON rules ("JSON Protobuf Encoding",
opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding) differ from plain
proto3 JSON in one place and are followed exactly: ``traceId``/``spanId``
are lowercase hex (not base64); keys are lowerCamelCase; enums are integers;
64-bit integers (``startTimeUnixNano``, ``intValue``) are decimal strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from mcptap import __version__
from mcptap.errors import ExportError
from mcptap.export.spans import Attr, Span, SpanBuilder, iso_us, iter_spans

#: spans per ExportTraceServiceRequest line (keeps each line a modest size)
SPANS_PER_LINE = 512
#: OTLP times are ``fixed64`` nanoseconds since the Unix epoch: 1970 to 2554
MAX_UNIX_NANO = (1 << 64) - 1


def unix_nano(epoch_us: int, t_us: int, what: str) -> str:
    """A ``*TimeUnixNano`` value (decimal string) of capture time ``t_us`` (µs
    after the header's ``started``, ``epoch_us`` µs since the Unix epoch).
    Raises ExportError, naming ``what``, when the time is outside what OTLP
    can carry (a hand-edited ``t_us`` or ``started``): a collector refuses
    the whole request for one such span."""
    ns = (epoch_us + t_us) * 1000
    if 0 <= ns <= MAX_UNIX_NANO:
        return str(ns)
    at = iso_us(epoch_us + t_us) or f"{epoch_us + t_us} µs since 1970"
    start = iso_us(epoch_us) or f"{epoch_us} µs since 1970"
    raise ExportError(f"{what} is at {at} (t_us {t_us} after the capture's start, {start}): outside what OTLP can carry "
                      "(nanoseconds since 1970 in 64 bits: the years 1970 to 2554); was the capture edited?")


def any_value(v: Attr) -> dict[str, Any]:
    """An OTLP ``AnyValue`` for a scalar attribute value."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        # AnyValue.int_value is int64: larger integers (a peer's id) are kept as text
        return {"intValue": str(v)} if -(1 << 63) <= v < (1 << 63) else {"stringValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def key_values(attrs: dict[str, Attr]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items()]


def resource_attributes(header: dict[str, Any]) -> dict[str, Attr]:
    """The resource of exported spans: the tap itself (``service.name``
    mcptap) and what it tapped (``mcptap.target``: argv or upstream URL)."""
    target = header.get("target") or {}
    shown = target.get("url") or target.get("upstream") or " ".join(str(a) for a in target.get("argv") or ())
    attrs: dict[str, Attr] = {"service.name": "mcptap", "service.version": str(header.get("mcptap") or __version__)}
    if shown:
        attrs["mcptap.target"] = str(shown)
    attrs["mcptap.transport"] = str(header.get("transport", "stdio"))
    return attrs


def span_json(span: Span, epoch_us: int) -> dict[str, Any]:
    """One OTLP/JSON ``Span``. ``epoch_us``: wall-clock µs of capture time 0.
    Raises ExportError for a time OTLP cannot carry (``unix_nano``)."""
    d: dict[str, Any] = {
        "traceId": span.trace_id.hex(), "spanId": span.span_id.hex(), "name": span.name, "kind": span.kind,
        "startTimeUnixNano": unix_nano(epoch_us, span.start_us, f"span {span.name!r}"),
        "endTimeUnixNano": unix_nano(epoch_us, span.end_us, f"the end of span {span.name!r}"),
        "attributes": key_values(span.attributes),
    }
    if span.events:
        d["events"] = [{"timeUnixNano": unix_nano(epoch_us, e.t_us, f"event {e.name!r} of span {span.name!r}"), "name": e.name,
                        "attributes": key_values(e.attributes)}
                       for e in span.events]
    status: dict[str, Any] = {}
    if span.status_code:
        status["code"] = span.status_code
    if span.status_message:
        status["message"] = span.status_message
    d["status"] = status
    return d


def request_json(header: dict[str, Any], spans: list[Span], epoch_us: int) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest`` holding ``spans``."""
    return {"resourceSpans": [{
        "resource": {"attributes": key_values(resource_attributes(header))},
        "scopeSpans": [{"scope": {"name": "mcptap", "version": __version__}, "spans": [span_json(s, epoch_us) for s in spans]}],
    }]}


def otlp_json_lines(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """The OTLP/JSON file of a capture: ``ExportTraceServiceRequest`` lines
    (bytes, newline-terminated), at most SPANS_PER_LINE spans each, spans in
    the order they ended. A capture without spans gives no line. Raises
    ExportError for a time OTLP cannot carry (``unix_nano``)."""
    epoch = SpanBuilder(header).epoch_us
    spans: list[Span] = []
    for span in iter_spans(header, records):      # streamed: memory stays flat for any capture
        spans.append(span)
        if len(spans) == SPANS_PER_LINE:
            yield orjson.dumps(request_json(header, spans, epoch)) + b"\n"
            spans = []
    if spans:
        yield orjson.dumps(request_json(header, spans, epoch)) + b"\n"
