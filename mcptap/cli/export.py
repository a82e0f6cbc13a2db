"""``mcptap export CAPTURE --format har|otlp-json|messages [-o FILE]``

Convert a capture for the tools people already use (docs/export.md):

* ``har``: HAR 1.2, one entry per HTTP exchange (HTTP captures only);
* ``otlp-json``: OTLP/JSON ``ExportTraceServiceRequest`` lines (what the
  OpenTelemetry Collector's ``otlpjsonfile`` receiver reads), one span per
  request/response pair, by the OpenTelemetry semantic conventions for MCP;
* ``messages``: one JSON line per message with its annotations (for jq).

The capture is re-annotated with today's rules first (as ``check`` does), so
findings in the export are current. ``-o -`` (the default) writes to stdout;
a file is written whole or not at all (temporary file, then renamed).

Exit status: 0 written; 2 mcptap's own error (unreadable capture, a format
that does not fit the capture, unwritable output), one ``mcptap: …`` line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import click

from mcptap.capture.dumps import dumps
from mcptap.capture.reader import CaptureStream
from mcptap.cli import options
from mcptap.cli.errors import Fail
from mcptap.cli.output import refuse_input_as_output, stopped_as_interrupted, whole_then_copied, write_private
from mcptap.cli.progress import progress
from mcptap.errors import ExportError, McptapError
from mcptap.escape import escape_name
from mcptap.reannotate import reannotate

FORMATS = ("har", "otlp-json", "messages")


def export_bytes(path: str, fmt: str) -> Iterator[bytes]:
    """The export of the capture at ``path`` in ``fmt``, as chunks of bytes.
    Raises McptapError (CaptureReadError, ExportError) — for HAR before any
    chunk is produced when the capture is not an HTTP one."""
    stream = CaptureStream(path)
    header = stream.header
    records: Iterable[dict[str, Any]] = reannotate(header, stream, shapes=True)
    if fmt == "har":
        from mcptap.export.har import har_of

        if header.get("transport") != "http":
            stream.close()
            raise ExportError(f"{escape_name(path)}: HAR needs an HTTP capture; this one is {header.get('transport', 'stdio')} "
                              "(formats that fit: otlp-json, messages)")
        yield dumps(har_of(header, records), indent=True, newline=True)
    elif fmt == "otlp-json":
        from mcptap.export.otlp_json import otlp_json_lines

        try:
            yield from otlp_json_lines(header, records)
        except ExportError as exc:
            raise ExportError(f"{escape_name(path)}: {exc}") from None
    else:
        from mcptap.export.messages import message_lines

        yield from message_lines(header, records)


@click.command("export", short_help="Export a capture as HAR, OTLP/JSON or message JSON lines.",
               epilog=options.example("mcptap export cap.jsonl --format har -o session.har",
                                      "mcptap export cap.jsonl --format otlp-json -o spans.json",
                                      "mcptap export cap.jsonl -f messages | jq 'select(.method==\"tools/call\")'"))
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False))
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), required=True,
              help="har: HAR 1.2 (HTTP captures); otlp-json: OpenTelemetry spans (OTLP/JSON lines); messages: JSON lines.")
@click.option("-o", "--output", default="-", show_default=True, type=options.NonEmptyPath(dir_okay=False, allow_dash=True),
              help="Output file ('-': stdout).")
def command(capture: str, fmt: str, output: str) -> None:
    """Export CAPTURE for HAR viewers, OpenTelemetry backends or jq."""
    refuse_input_as_output([capture], output)
    with stopped_as_interrupted(), progress("export", [capture], output=output):
        _export(capture, fmt, output)


def _export(capture: str, fmt: str, output: str) -> None:
    chunks = export_bytes(capture, fmt)
    try:
        first = next(chunks, None)       # format/capture errors surface before any output exists
    except McptapError as exc:
        raise Fail(str(exc)) from None

    def write_all(fp: Any) -> None:
        if first is not None:
            fp.write(first)
        for chunk in chunks:
            fp.write(chunk)

    try:
        if output == "-":
            with whole_then_copied(output) as fp:       # a refusal part-way leaves nothing on standard output
                write_all(fp)
            return
        try:
            write_private(output, write_all, "export")      # owner-only: tool arguments, results, tokens
        except OSError as exc:
            raise Fail(f"cannot write {escape_name(output)}: {exc.strerror or exc}") from None
    except McptapError as exc:
        raise Fail(str(exc)) from None
