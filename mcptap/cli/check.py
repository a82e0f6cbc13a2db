"""``mcptap check [--fail-on error|warn|info|never] [--format text|json|sarif|junit] CAPTURE…``

Re-annotate each capture from its raw bytes with today's rules and report the
findings grouped by code, with counts and the first places they occur.

Exit status: 0 nothing at or above ``--fail-on`` (default error); 1 at least
one such finding; 2 mcptap's own error (a capture that cannot be read: the
reason goes to stderr, the other captures are still checked).
"""

from __future__ import annotations

import sys

import click

from mcptap.capture.dumps import dumps
from mcptap.check.exact_places import exact_places
from mcptap.check.parallel import check_capture
from mcptap.check.report import FAIL_ON, run_check
from mcptap.cli import options
from mcptap.cli.errors import say
from mcptap.cli.output import output_lines, refuse_input_as_output, styler
from mcptap.cli.progress import progress


@click.command("check", epilog=options.example('mcptap check cap.jsonl', 'mcptap check --fail-on warn --format sarif -o mcptap.sarif captures/*.jsonl'),
               short_help="Re-judge captures with today's rules; CI exit status.")
@click.argument("captures", nargs=-1, required=True, type=options.NonEmptyPath(dir_okay=False))
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="Exit 1 when a finding at or above this severity exists.")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "sarif", "junit")), default="text", show_default=True,
              help="Report format (sarif: SARIF 2.1.0; junit: JUnit XML).")
@click.option("--places", type=click.IntRange(min=1), default=None,
              help="First places kept per finding code [default: 3; 20 for sarif/junit].")
@click.option("-o", "--output", type=options.NonEmptyPath(dir_okay=False, writable=True, allow_dash=True), default=None,
              help="Write the report to this file instead of stdout (-: stdout).")
@options.color
@options.reannotation
@click.pass_context
def command(ctx: click.Context, captures: tuple[str, ...], fail_on: str, fmt: str, places: int | None,
            output: str | None, color: bool | None, no_shapes: bool, full: bool) -> None:
    """Check CAPTURE files: findings by code, counts, first places, exit status."""
    options.refuse_text_only(ctx, fmt, "color")
    if output == "-":
        output = None       # as export, scrub and report take it: standard output, not a file named -
    if captures.count("-") > 1:
        raise click.UsageError("- (standard input) can be given once")
    refuse_input_as_output(captures, output)
    keep = places or (20 if fmt in ("sarif", "junit") else 3)
    with progress("check", captures, stdout_after=True):
        report = run_check(captures, fail_on, keep, shapes=not no_shapes, reuse=not full, check=check_capture)
        exact_places(report)        # a lone surrogate's name as the peer sent it, in every format
    for cap in report.captures:
        if cap.error is not None:
            say(str(cap.error))
    if fmt == "text":
        from mcptap.check.text import format_text

        lines = format_text(report, styler(color if output is None else False), errors_shown=output is None)
    elif fmt == "json":

        lines = iter([dumps(report.to_json(), indent=True).decode()])
    elif fmt == "sarif":
        from mcptap.check.sarif import sarif_json

        lines = iter([sarif_json(report)])
    else:
        from mcptap.check.junit import junit_xml

        lines = iter([junit_xml(report)])
    output_lines(lines, output)
    sys.stderr.flush()
    ctx.exit(report.status())
