"""``mcptap report CAPTURE [-o report.html] [--no-scrub] [rules]``: one
self-contained HTML file a maintainer opens in any browser (mcptap/show/html.py).

CAPTURE may be ``-`` (stdin) or gzip. The records are re-annotated with
today's rules, like ``show``, and scrubbed first with the user's keyed
placeholders and the given rules (docs/redaction.md) unless ``--no-scrub``.
Default output: CAPTURE's name with ``.html`` in the current directory. From
stdin (``-``) there is no name to derive one from: ``-o`` is required (as for
``scrub``), rather than a fixed ``report.html`` that would silently replace
the report of another capture.

Exit status: 0; 2 for an unreadable capture, a bad rule or an unwritable output.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import click

from mcptap.cli import options
from mcptap.cli.errors import Fail, say
from mcptap.cli.output import (
    nameless,
    refuse_input_as_output,
    replaced_path,
    stopped_as_interrupted,
    whole_then_copied,
    write_private,
)
from mcptap.cli.progress import progress
from mcptap.cli.redact_options import redact_options, redactor_from
from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name, escape_os


def _default_output(capture: str) -> str:
    base = os.path.basename(capture)
    for ext in (".jsonl.gz", ".gz", ".jsonl"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    return base + ".html"


@click.command("report", short_help="One self-contained HTML report of a capture (scrubbed by default).",
               epilog=options.example("mcptap report cap.jsonl -o report.html", "mcptap report cap.jsonl.gz --no-scrub",
                                      "mcptap report - -o r.html --redact-key ssn < cap.jsonl"))
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", type=options.NonEmptyPath(dir_okay=False, allow_dash=True), default=None,
              help="HTML file to write ('-': stdout) [default: CAPTURE's name with .html; required when CAPTURE is -].")
@click.option("--no-scrub", is_flag=True, help="Keep payloads as recorded (the report may then contain secrets).")
@click.option("--title", default=None, help="Title shown in the report [default: the capture's path].")
@click.option("--no-shapes", is_flag=True, help="Skip the schema shape checks of params and results (faster).")
@redact_options
def command(capture: str, output: str | None, no_scrub: bool, title: str | None, no_shapes: bool, **kwargs: Any) -> None:
    """Write an HTML report of CAPTURE ('-': stdin; .jsonl.gz read too)."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.check.reannotated import Reannotated
    from mcptap.cli.scrub import first_pass
    from mcptap.reannotate_views import framed
    from mcptap.redact.scrub import Scrubber
    from mcptap.show.html import write_report

    if output is None and nameless(capture):
        source = "standard input" if capture == "-" else f"{escape_name(capture)} (a pipe or descriptor)"
        raise click.UsageError(f"the capture comes from {source}, which has no name to derive the report's from: "
                               "give -o FILE.html (or -o - for standard output)")
    redactor = None if no_scrub else redactor_from(kwargs)
    out = output or _default_output(capture)
    refuse_input_as_output([capture], out)
    shown_path = escape_name(capture) if capture != "-" else "stdin"
    if redactor is not None:
        # the default title and meta.path: a directory named by a token is scrubbed as in the header's cwd
        shown_path = Scrubber(redactor).header({"path": shown_path})["path"]
    target = replaced_path(out) if out != "-" else None       # None: written in place
    try:
        stream = CaptureStream(capture)
        header = stream.header
        records: Any = stream
        scrubber = None
        if redactor is not None:
            scrubber = Scrubber(redactor, known=first_pass(capture, redactor))
            scrubber.reject_chunks = True    # re-framed first (a file), else refused: never scrubbed unframed
            header = scrubber.header(header)
            records = scrubber.records(framed(stream))
        ra = Reannotated(header, iter(records), capture, lambda: stream.truncated, shapes=not no_shapes)
        # streamed (memory stays flat): into a file beside the output, renamed over it once
        # whole (a failed read leaves no half report), or straight to the output
        where = os.path.dirname(target) if target is not None else None      # the spool on the output's disk
        with stopped_as_interrupted(), tempfile.TemporaryFile(dir=where) as spool, progress("report", [capture], output=out):
            if out == "-":
                with whole_then_copied(out) as fp:      # a refusal part-way leaves nothing on standard output
                    write_report(fp, spool, ra.header, ra, shown_path, title and escape_os(title))
                return
            write_private(out, lambda fp: write_report(fp, spool, ra.header, ra, shown_path, title and escape_os(title)), "report")
    except CaptureReadError as exc:
        raise Fail(str(exc)) from None
    except BrokenPipeError:
        if out == "-":
            raise                   # the reader of standard output left: not an error of ours (main)
        raise Fail(f"cannot write {escape_name(out)}: the reader of the pipe left") from None
    except OSError as exc:
        raise Fail(f"cannot write {escape_name(out)}: {exc.strerror or exc}") from None
    unscrubbed = "" if redactor else ", already scrubbed" if header.get("scrubbed") else ", NOT scrubbed"
    if target is not None:
        note = f" ({os.path.getsize(target) // 1024} KiB{unscrubbed})"
    else:
        note = f" ({unscrubbed[2:]})" if unscrubbed else ""
    say(f"wrote {escape_name(out)}{note}")
    if scrubber is not None and scrubber.kept:
        from mcptap.cli.scrub import kept_warning

        say(kept_warning(scrubber.kept, "report"))
