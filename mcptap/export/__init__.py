"""Exports of a capture for the tools people already use (level 3, pure).

* ``spans``: request/response pairs → spans named and attributed by the
  OpenTelemetry semantic conventions for MCP (shared by the OTLP/JSON file and
  the live OTLP exporter, ``mcptap/otel.py``);
* ``otlp_json``: spans → OTLP/JSON (``ExportTraceServiceRequest`` lines, the
  encoding the OpenTelemetry Collector's ``otlpjsonfile`` receiver reads);
* ``digest``: a live message reduced to what spans read (live export);
* ``har``: an HTTP capture's exchanges → HAR 1.2;
* ``messages``: one JSON line per message with its annotations (for jq).

Exports map, they don't invent: every value comes from the capture. The
format notes and sources are in docs/export.md.
"""
