"""Reading OTLP back in tests with the official protobuf classes
(``opentelemetry-proto``): OTLP/JSON lines and OTLP/HTTP protobuf bodies."""

from __future__ import annotations

import base64
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

_ID_KEYS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def _hex_ids_to_base64(node: Any) -> Any:
    # OTLP/JSON writes trace and span ids as hex (OTLP spec, "JSON Protobuf
    # Encoding"); protobuf's own JSON mapping reads bytes as base64. The
    # Collector's unmarshaler does this same conversion before decoding.
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in _ID_KEYS and isinstance(v, str):
                raw = bytes.fromhex(v)
                assert len(raw) == _ID_KEYS[k], f"{k} {v!r} is not {_ID_KEYS[k]} bytes of hex"
                out[k] = base64.b64encode(raw).decode()
            else:
                out[k] = _hex_ids_to_base64(v)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(x) for x in node]
    return node


def parse_otlp_json(line: bytes | str) -> ExportTraceServiceRequest:
    """One OTLP/JSON line → ExportTraceServiceRequest (unknown keys fail)."""
    doc = orjson.loads(line)
    msg = ExportTraceServiceRequest()
    json_format.Parse(orjson.dumps(_hex_ids_to_base64(doc)), msg, ignore_unknown_fields=False)
    return msg


def spans_of(req: ExportTraceServiceRequest) -> list[Any]:
    return [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attrs(span: Any) -> dict[str, Any]:
    """A span's (or event's) attributes as a plain dict."""
    out: dict[str, Any] = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out
