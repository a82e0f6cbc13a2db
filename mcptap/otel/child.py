"""The export process of ``mcptap record --otlp-endpoint`` (``python -m
mcptap.otel.child``): the OpenTelemetry SDK side, in a process of its own so
its work (span objects, protobuf encoding, HTTP) never holds the relay's GIL.

Protocol, JSON lines (orjson):

* stdin, first line: ``{"url", "headers", "header", "timeout"}`` (the capture
  header gives ``started``, ``transport``, ``target``); then one message digest
  per line (``mcptap.export.spans.digest``); ``{"type": "close", "t_us"}`` ends.
* stdout: ``{"event": "failure", "reason"}`` at the first failed or retried
  export, ``{"event": "summary", "spans", "exported", "failed", "dropped",
  "pending"}`` after the final flush (bounded by ``close_s``): ``spans`` =
  exported + failed + dropped + pending; ``failed`` counts the spans the
  collector refused and, when the export is given up (a silent or failing
  collector), those still unsent; ``dropped`` the spans the export queue had
  no room for (``QUEUE_MAX``); ``pending`` those still being sent to a
  collector that answers.

The mapping is ``mcptap.export.spans.SpanBuilder`` (the same spans as the
OTLP/JSON file export); spans go to a ``BatchSpanProcessor`` in front of the
SDK's ``OTLPSpanExporter`` (OTLP/HTTP protobuf). The SDK's log output is turned
into the failure reason instead of being printed.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from typing import Any

import orjson

from mcptap.capture.reader import exact_ids, may_hold_big_ids
from mcptap.export.otlp_json import resource_attributes
from mcptap.export.spans import CLIENT, SERVER, STATUS_ERROR, Span, SpanBuilder

#: the SDK queue's size (spans); a burst beyond it drops spans (reported)
QUEUE_MAX = 16_384
#: seconds of final flush before the summary (the parent's closing note), then
#: seconds more for a collector that is still answering (the process outlives
#: mcptap for at most that long; it is in a session of its own)
FLUSH_S = 0.4
FINISH_S = 5.0


def reason_of(text: str) -> str:
    """A short reason from an SDK log line (requests' errors are long)."""
    low = text.lower()
    for needle, short in (("connection refused", "connection refused"), ("name or service not known", "unknown host"),
                          ("timed out", "timed out"), ("timeout", "timed out"), ("queue full", "export queue full, spans dropped"),
                          ("certificate", "TLS certificate problem")):
        if needle in low:
            return short
    m = re.search(r"code: (\d{3})", text)
    if m:
        return f"HTTP {m.group(1)}"
    return text.splitlines()[0][:160] if text else "export failed"


class Child:
    """The SDK side: digests in, spans out to the collector, status lines to
    ``out`` (a binary stream)."""

    def __init__(self, cfg: dict[str, Any], out: Any) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        self.out = out
        self.lock = threading.Lock()
        self.failure: str | None = None
        self.sent = self.exported = self.failed = 0
        #: spans handed to the SDK's queue, taken from it by an export, dropped (no room)
        self.queued = self.taken = self.dropped = 0
        self.last_ok: float | None = None          # monotonic time of the last accepted export
        header = cfg["header"]
        self.builder = SpanBuilder(header)
        attrs = resource_attributes(header)
        if os.environ.get("OTEL_SERVICE_NAME"):
            del attrs["service.name"]       # the user's service name wins
        self.resource = Resource.create(attrs)
        self.scope = InstrumentationScope("mcptap", str(header.get("mcptap") or ""))
        self.sdk = (ReadableSpan, Event, SpanContext, TraceFlags, Status, StatusCode)
        self.kinds = {CLIENT: SpanKind.CLIENT, SERVER: SpanKind.SERVER}
        self.internal = SpanKind.INTERNAL
        child = self

        class Remember(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    text = record.getMessage()
                except Exception:  # noqa: BLE001 - a log record must never break export
                    text = str(record.msg)
                child.fail(reason_of(text))

        sdk_log = logging.getLogger("opentelemetry")
        sdk_log.handlers = [Remember(logging.WARNING)]
        sdk_log.propagate = False
        self.inner: Any = OTLPSpanExporter(endpoint=cfg["url"], headers=cfg.get("headers"), timeout=cfg.get("timeout", 5.0))

        inner = self.inner

        class Counting(SpanExporter):
            def export(self, spans: Any) -> Any:
                with child.lock:
                    child.taken += len(spans)
                try:
                    result = inner.export(spans)
                except Exception as exc:  # noqa: BLE001 - counted and reported, never raised into the SDK
                    result = SpanExportResult.FAILURE
                    child.fail(reason_of(f"{type(exc).__name__}: {exc}"))
                with child.lock:
                    if result is SpanExportResult.SUCCESS:
                        child.exported += len(spans)
                        child.last_ok = time.monotonic()
                    else:
                        child.failed += len(spans)
                if result is not SpanExportResult.SUCCESS:
                    child.fail("export failed")
                return result

            def shutdown(self) -> None:
                child.inner.shutdown()

            def force_flush(self, timeout_millis: int = 30000) -> bool:
                return True

        self.processor = BatchSpanProcessor(Counting(), schedule_delay_millis=cfg.get("delay_ms", 500), max_queue_size=QUEUE_MAX)

    def say(self, obj: dict[str, Any]) -> None:
        with self.lock:
            try:
                self.out.write(orjson.dumps(obj) + b"\n")
                self.out.flush()
            except (OSError, ValueError):
                pass            # the parent is gone: nothing to tell

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            self.say({"event": "failure", "reason": reason})

    def feed(self, rec: dict[str, Any]) -> None:
        try:
            for span in self.builder.feed(rec):
                self.emit(span)
        except Exception as exc:  # noqa: BLE001 - one odd record costs its span only
            self.fail(f"span mapping failed: {type(exc).__name__}: {exc}")

    def emit(self, span: Span) -> None:
        ReadableSpan, Event, SpanContext, TraceFlags, Status, StatusCode = self.sdk
        epoch = self.builder.epoch_us
        ctx = SpanContext(int.from_bytes(span.trace_id, "big"), int.from_bytes(span.span_id, "big"), False, TraceFlags(TraceFlags.SAMPLED))
        status = Status(StatusCode.ERROR, span.status_message or None) if span.status_code == STATUS_ERROR else Status(StatusCode.UNSET)
        events = [Event(e.name, e.attributes, (epoch + e.t_us) * 1000) for e in span.events]
        self.sent += 1
        with self.lock:
            # the queue holds at most queued - taken (an export takes its batch before it is
            # counted, so this is never less): a span it has no room for is dropped here, and
            # counted, never by the SDK, which drops silently
            full = self.queued - self.taken >= QUEUE_MAX
            if full:
                self.dropped += 1
        if full:
            self.fail("export queue full, spans dropped")
            return
        self.queued += 1
        self.processor.on_end(ReadableSpan(
            name=span.name, context=ctx, parent=None, resource=self.resource, attributes=span.attributes, events=events,
            kind=self.kinds.get(span.kind, self.internal), status=status, start_time=(epoch + span.start_us) * 1000,
            end_time=(epoch + span.end_us) * 1000, instrumentation_scope=self.scope))

    def close(self, t_us: int | None, budget_s: float = FLUSH_S, finish_s: float = FINISH_S) -> None:
        """End open spans and flush. After ``budget_s`` report the summary
        (the parent's closing note: spans still pending are being sent); a
        collector that answered within the last second then gets ``finish_s``
        more to take the rest, a silent or failing one is given up at once."""
        for span in self.builder.finish(t_us):
            self.emit(span)
        processor: Any = self.processor
        flush = threading.Thread(target=processor.shutdown, daemon=True)
        flush.start()
        flush.join(budget_s)
        with self.lock:
            exported, failed, dropped, last_ok = self.exported, self.failed, self.dropped, self.last_ok
        pending = self.sent - exported - failed - dropped
        silent = flush.is_alive() and (last_ok is None or time.monotonic() - last_ok > 1.0)
        if silent and pending > 0:
            self.fail(f"no answer from the collector, {pending} spans unsent")
        # a silent or failing collector is given up below: what it has not taken is lost, not pending
        give_up = flush.is_alive() and (silent or self.failure is not None)
        if give_up:
            failed, pending = failed + pending, 0
        self.say({"event": "summary", "spans": self.sent, "exported": exported, "failed": failed, "dropped": dropped, "pending": pending})
        if flush.is_alive() and not give_up:
            flush.join(finish_s)
        if flush.is_alive():
            self.inner.shutdown()       # a slow or failing collector: stop retrying
            flush.join(budget_s)

def main() -> int:
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    first = inp.readline()
    if not first:
        return 0
    try:
        child = Child(orjson.loads(first), out)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one reason
        out.write(orjson.dumps({"event": "failure", "reason": f"cannot start: {type(exc).__name__}: {exc}"}) + b"\n")
        out.flush()
        return 1
    t_end: int | None = None
    for line in inp:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict) and may_hold_big_ids(rec):
            rec = exact_ids(rec, line)          # orjson reads an id beyond 64 bits as a float
        if rec.get("type") == "close":
            t_end = rec.get("t_us")
            break
        child.feed(rec)
    child.close(t_end if isinstance(t_end, int) else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
