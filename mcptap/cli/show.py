"""``mcptap show [CAPTURE] [--filter EXPR] [--format text|json|mermaid] [--follow]``

The timeline of a capture, re-annotated from its raw bytes with today's rules:
one line a message (seq, time, direction, kind, method or id, paired request
and latency, phase, findings), then a summary. Without CAPTURE: the newest
capture in the capture directory (``MCPTAP_DIR`` or the user data directory,
see mcptap/paths.py). ``--follow`` watches a capture that is being written.

Exit status: 0; 2 for a bad filter, a missing or unreadable capture.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from mcptap.capture.follow import Follower
from mcptap.cli.errors import Fail
from mcptap.errors import CaptureReadError, FilterSyntaxError
from mcptap.escape import escape_controls

ROLES: dict[str, dict[str, Any]] = {
    "error": {"fg": "red", "bold": True}, "warn": {"fg": "yellow"}, "info": {"fg": "cyan"},
    "c2s": {"fg": "blue"}, "s2c": {"fg": "magenta"}, "dim": {"dim": True}, "bold": {"bold": True}, "ok": {"fg": "green"},
}


def use_color(flag: bool | None) -> bool:
    """Explicit --color/--no-color wins; else NO_COLOR (non-empty) disables;
    else colour only when stdout is a terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def styler(flag: bool | None) -> Any:
    """A ``style(text, role)`` callable for mcptap.show.render / mcptap.check.text, or None."""
    if not use_color(flag):
        return None
    return lambda text, role: click.style(text, **ROLES.get(role, {}))


def output_lines(lines: Iterable[str], path: str | None = None, flush_each: bool = False) -> None:
    """Write lines (newline added) to ``path`` or stdout, in batches. A closed
    pipe (``| head``) ends the output quietly."""
    if path is not None:
        try:
            with open(path, "w", encoding="utf-8") as fp:
                for line in lines:
                    fp.write(line)
                    fp.write("\n")
        except OSError as exc:
            raise Fail(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    out = sys.stdout.buffer      # bytes: UTF-8 whatever the locale says
    batch: list[str] = []
    try:
        for line in lines:
            batch.append(line)
            if flush_each or len(batch) >= 1024:
                out.write(("\n".join(batch) + "\n").encode("utf-8", "replace"))
                batch.clear()
                if flush_each:
                    out.flush()
        if batch:
            out.write(("\n".join(batch) + "\n").encode("utf-8", "replace"))
        out.flush()
    except BrokenPipeError:
        # stdout went away: point it at /dev/null so the interpreter's final flush is quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        raise SystemExit(0) from None


def newest_capture() -> Path:
    """The most recently modified ``*.jsonl`` in the capture directory.
    Raises click.UsageError when there is none."""
    from mcptap.paths import capture_dir

    directory = capture_dir()
    try:
        files = [p for p in directory.glob("*.jsonl") if p.is_file()]
    except OSError:
        files = []
    if not files:
        raise click.UsageError(f"no capture given and none found in {directory} (set MCPTAP_DIR or pass a file)")
    return max(files, key=lambda p: (p.stat().st_mtime, p.name))


@click.command("show", short_help="Timeline of a capture: pairing, latency, phase, findings.")
@click.argument("capture", required=False, type=click.Path(dir_okay=False))
@click.option("-f", "--filter", "expr", default=None, metavar="EXPR",
              help="Only records matching EXPR, e.g. '~tool echo', '~sev warn', '~lat >100ms' (docs/filters.md).")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "mermaid")), default="text", show_default=True,
              help="text timeline, JSON lines (records + summary), or a Mermaid sequence diagram.")
@click.option("-F", "--follow", is_flag=True, help="Keep watching the capture while it is written (Ctrl-C stops).")
@click.option("--poll", type=click.FloatRange(min=0.01), default=0.2, show_default=True, help="Seconds between polls with --follow.")
@click.option("--oneline", is_flag=True, help="Text: one line per record, no finding detail lines.")
@click.option("--no-summary", is_flag=True, help="Text: leave out the summary.")
@click.option("--color/--no-color", default=None, help="Colour [default: when stdout is a terminal and NO_COLOR is unset].")
@click.option("--no-shapes", is_flag=True, help="Skip the schema shape checks of params and results (faster).")
@click.option("--full", is_flag=True, help="Re-annotate every message even if the capture was written under this mcptap's rules.")
@click.pass_context
def command(ctx: click.Context, capture: str | None, expr: str | None, fmt: str, follow: bool, poll: float,
            oneline: bool, no_summary: bool, color: bool | None, no_shapes: bool, full: bool) -> None:
    """Show CAPTURE (default: the newest capture) as a timeline."""
    from mcptap.check.reannotated import Reannotated
    from mcptap.filters.operators import compile_filter
    from mcptap.show import render

    flt = None
    if expr is not None:
        try:
            flt = compile_filter(expr)
        except FilterSyntaxError as exc:
            click.echo(f"mcptap: {escape_controls(str(exc))}", err=True)
            ctx.exit(2)
    path = capture or str(newest_capture())
    follower: Follower | None = None
    try:
        if follow:
            follower = Follower(path, poll)
            fol = follower
            ra = Reannotated(fol.header, fol, path, lambda: fol.truncated, shapes=not no_shapes, reuse=not full)
            previous = signal.signal(signal.SIGINT, lambda *_: setattr(fol, "stop", True))
        else:
            ra = Reannotated.open(path, shapes=not no_shapes, reuse=not full)
    except CaptureReadError as exc:
        click.echo(f"mcptap: {escape_controls(str(exc))}", err=True)
        ctx.exit(2)
    if fmt == "json":
        lines = render.json_lines(ra, ra.header, flt)
    elif fmt == "mermaid":
        lines = render.mermaid(ra, ra.header, flt)
    else:
        lines = render.timeline(ra, ra.header, flt, styler(color), details=not oneline, summary=not no_summary, path=path)
    try:
        output_lines(lines, flush_each=follow)
    except CaptureReadError as exc:
        click.echo(f"mcptap: {escape_controls(str(exc))}", err=True)
        ctx.exit(2)
    finally:
        if follower is not None:
            signal.signal(signal.SIGINT, previous)
