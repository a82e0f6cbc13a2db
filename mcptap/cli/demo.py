"""``mcptap demo [-o FILE]``: record a real MCP session through the tap and show it.

Runs the built-in demo client (:mod:`mcptap.demo.client`) against the built-in
demo server (:mod:`mcptap.demo.server`) with the real tap in between:

    demo client ──stdin──► mcptap record -o FILE -- python -m mcptap.demo.server
                ◄─stdout──

then prints the capture's timeline and where the capture is. Needs nothing but
mcptap itself. Exit status: 0 the session went as the spec says and the capture
has no error or warn finding; 1 otherwise; 2 the capture could not be read.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from mcptap.capture.reader import Capture, read_capture
from mcptap.cli import options
from mcptap.cli.errors import say
from mcptap.cli.output import styler
from mcptap.demo.client import main as run_client
from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name
from mcptap.model import severity_counts
from mcptap.paths import default_capture_path
from mcptap.show.render import timeline

SERVER = [sys.executable, "-m", "mcptap.demo.server"]
def _capture_path(output: str | None) -> str:
    if output:
        return output
    try:
        return str(default_capture_path(SERVER))
    except OSError:
        # No writable data directory (read-only home, sandbox): the demo still runs.
        return str(Path(tempfile.mkdtemp(prefix="mcptap-demo-")) / "demo.jsonl")


def _findings(cap: Capture) -> dict[str, int]:
    counts = severity_counts()
    for rec in cap.records:
        for key in ("findings", "unanswered"):
            fs = rec.get(key)
            if isinstance(fs, list):
                for f in fs:
                    sev = f.get("severity") if isinstance(f, dict) else None
                    if sev in counts:
                        counts[sev] += 1
    return counts


@click.command("demo", epilog=options.example('mcptap demo', 'NO_COLOR=1 mcptap demo -o demo.jsonl'),
               short_help="Record a real session between built-in demo peers and show it.")
@click.option("-o", "--output", default=None,
              type=options.NonEmptyPath(dir_okay=False, no_dash="standard output carries the timeline; the capture is read back"),
              help="Capture file (default: a new file in the capture directory, see MCPTAP_DIR).")
@options.color
@click.pass_context
def command(ctx: click.Context, output: str | None, color: bool | None) -> None:
    """Run the built-in demo client against the built-in demo server through
    `mcptap record`, then show the capture. Needs nothing but mcptap."""
    path = _capture_path(output)
    tap = [sys.executable, "-m", "mcptap.cli.main", "record", "--quiet", "-o", path, "--", *SERVER]
    shown_path = escape_name(path)
    click.echo(f"mcptap demo: demo client → mcptap record → demo server; capture: {shown_path}", err=True)
    status = run_client(["--", *tap])
    sys.stderr.flush()
    try:
        cap = read_capture(path)
    except CaptureReadError as exc:
        say(f"demo: {exc}")
        ctx.exit(2)
    for line in timeline(cap.records, cap.header, style=styler(color), path=path):
        click.echo(line, color=True)   # colour already decided
    counts = _findings(cap)
    click.echo(f"\ncapture: {shown_path}")
    click.echo(f"next: mcptap show {shown_path}   |   mcptap check {shown_path}")
    if status != 0 or cap.end is None or counts["error"] or counts["warn"]:
        click.echo("mcptap: demo: the session did not go cleanly (see above)", err=True)
        ctx.exit(1)
