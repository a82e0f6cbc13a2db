"""``mcptap show [CAPTURE] [--filter EXPR] [--format text|json|mermaid] [--follow]``

The timeline of a capture, re-annotated from its raw bytes with today's rules:
one line a message (seq, time, direction, kind, method or id, paired request
and latency, phase, findings), then a summary. Without CAPTURE: the newest
capture in the capture directory (``MCPTAP_DIR`` or the user data directory,
see mcptap/paths.py). ``--follow`` watches a capture that is being written.

``--follow`` stops (exit 0, with a note on stderr) once no process writes the
capture any more and it has no end record (its tap was killed: ``ls`` says
truncated).

Exit status: 0; 2 for a bad filter, a missing or unreadable capture (with
``--follow``: also one cut, replaced or overwritten while it is followed);
130 on Ctrl-C (``--follow`` included).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from mcptap.capture.follow import Follower
from mcptap.capture.reader import CaptureStream
from mcptap.capture.source import read_once
from mcptap.cli import options
from mcptap.cli.errors import say, usage_line
from mcptap.cli.output import output_lines, styler
from mcptap.cli.progress import progress
from mcptap.errors import CaptureReadError, FilterSyntaxError
from mcptap.escape import escape_name, escape_os
from mcptap.filters.doc import help_text


def newest_capture() -> Path:
    """The most recently modified ``*.jsonl`` in the capture directory that
    holds traffic: captures of commands that failed before any message (busy
    port, spawn failure, unreachable replay target) are kept as the record of
    why, but skipped here, and a line on stderr says so. Raises
    click.UsageError when there is none."""
    from mcptap.catalog import read_info
    from mcptap.paths import capture_dir

    directory = capture_dir()
    try:
        files = [p for p in directory.glob("*.jsonl") if p.is_file()]
    except OSError:
        files = []
    if not files:
        raise click.UsageError(f"no capture given and none found in {directory} (set MCPTAP_DIR or pass a file)")
    files.sort(key=lambda p: (p.stat().st_mtime, p.name), reverse=True)
    skipped = []
    for p in files:
        info = read_info(p)
        if info is not None and info.no_traffic:
            skipped.append(p)
            continue
        if skipped:
            click.echo(escape_os(f"mcptap: skipped {len(skipped)} newer capture(s) with no traffic (the newest: {escape_name(str(skipped[0]))}); "
                                       f"showing {p}"), err=True)
        return p
    raise click.UsageError(f"no capture with traffic in {directory}: {len(skipped)} capture(s) with no traffic "
                           f"(the newest: {escape_name(str(skipped[0]))}; pass it to see why)")


def _growable(path: str) -> bool:
    """False for what ``--follow`` cannot tail: what is read once (``read_once``; never
    opened here, so none of its bytes is taken from the reader) and a gzip file."""
    if read_once(path):
        return False
    try:
        with open(path, "rb") as fp:
            return fp.read(2) != b"\x1f\x8b"
    except OSError:
        return True     # not there yet (or unreadable: the reader says why)


@click.command("show", epilog=help_text() + "\n\n" + options.example('mcptap show', "mcptap show cap.jsonl -f '~tool echo & ~lat >100ms'",
                                                                     'mcptap show cap.jsonl --format mermaid > session.mmd', 'mcptap show --follow cap.jsonl'),
               short_help="Timeline of a capture: pairing, latency, phase, findings.")
@click.argument("capture", required=False, type=options.NonEmptyPath(dir_okay=False))
@click.option("-f", "--filter", "expr", default=None, metavar="EXPR",
              help="Only records matching EXPR, e.g. '~tool echo', '~sev warn', '~lat >100ms' (docs/filters.md).")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "mermaid")), default="text", show_default=True,
              help="text timeline, JSON lines (records + summary), or a Mermaid sequence diagram.")
@click.option("-F", "--follow", is_flag=True, help="Keep watching the capture while it is written, up to its end record (Ctrl-C stops, exit 130; "
              "waits for a file not yet there; - or a FIFO: read up to its end record; .gz: read as it is).")
@click.option("--poll", type=options.Finite(min=0.01), default=0.2, show_default=True, help="Seconds between polls with --follow.")
@click.option("--oneline", is_flag=True, help="Text: one line per record, no finding detail lines.")
@click.option("--no-summary", is_flag=True, help="Text: leave out the summary.")
@options.color
@options.reannotation
@click.pass_context
def command(ctx: click.Context, capture: str | None, expr: str | None, fmt: str, follow: bool, poll: float,
            oneline: bool, no_summary: bool, color: bool | None, no_shapes: bool, full: bool) -> None:
    """Show CAPTURE (default: the newest capture) as a timeline."""
    options.refuse_text_only(ctx, fmt, "oneline", "no_summary", "color")
    from mcptap.check.reannotated import Reannotated
    from mcptap.filters.operators import compile_filter
    from mcptap.show import render

    flt = None
    if expr is not None:
        try:
            flt = compile_filter(expr)
        except FilterSyntaxError as exc:
            # the message is three lines (error, expression, caret): the first worded as every usage
            # error is, the other two escaped but kept as they are, so the caret stays under the column
            first, *rest = str(exc).split("\n")
            click.echo("\n".join([usage_line(click.UsageError(first, ctx)), *(escape_os(line) for line in rest)]), err=True)
            ctx.exit(2)
    path = capture or str(newest_capture())
    streamed = follow and not _growable(path)
    if streamed:
        follow = False      # stdin streams to its EOF by itself; a gzip capture does not grow: read it as it is
    elif follow and not Path(path).exists():
        click.echo(escape_os(f"mcptap: waiting for {escape_name(path)} to be written (Ctrl-C stops)"), err=True)
    try:
        if follow:
            fol = Follower(path, poll, writer_gone=lambda: _writer_gone(path))
            # re-annotated in full: chunk records (analysis behind) may come later, and need the re-framer.
            # Ctrl-C is Python's KeyboardInterrupt here too (exit 130, cli/main.py), at once, whether the
            # follower catches up on a long capture or waits for more
            ra = Reannotated(fol.header, fol, path, lambda: fol.truncated, shapes=not no_shapes, reuse=False)
        elif streamed and read_once(path):
            # a capture piped in as it grows (`tail -f cap | mcptap show --follow -`, a FIFO): done at its
            # end record, as when following the file, not at an EOF that may never come
            stream = CaptureStream(path)
            stream.until_end = True
            ra = Reannotated(stream.header, stream, path, lambda: stream.truncated, shapes=not no_shapes, reuse=False)
        else:
            ra = Reannotated.open(path, shapes=not no_shapes, reuse=not full)
    except CaptureReadError as exc:
        say(str(exc))
        ctx.exit(2)
    if fmt == "json":
        lines = render.json_lines(ra, ra.header, flt)
    elif fmt == "mermaid":
        lines = render.mermaid(ra, ra.header, flt)
    else:
        lines = render.timeline(ra, ra.header, flt, styler(color), details=not oneline, summary=not no_summary, path=path)
    try:
        if follow or streamed or sys.stdout.isatty():     # on a terminal the timeline itself shows progress
            output_lines(lines, flush_each=follow or streamed)
        else:
            with progress("show", [path]):
                output_lines(lines)
    except CaptureReadError as exc:
        say(str(exc))
        ctx.exit(2)
    if follow and fol.abandoned:
        say(escape_os(f"{escape_name(path)}: no process writes it any more and it has no end record (truncated, as `mcptap ls` says): "
                            "stopped following"))


def _writer_gone(path: str) -> bool:
    """No process writes the capture at ``path`` any more (``ls``'s test: ``liveness.being_written``)."""
    from mcptap.liveness import being_written

    try:
        st = os.stat(path)
    except OSError:
        return False        # replaced or removed: the follower says so
    return not being_written(path, (st.st_dev, st.st_ino))
