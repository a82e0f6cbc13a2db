"""``mcptap diff A B [--ignore PATH]… [--format text|json] [--latency-threshold PCT]``

Semantic diff of two captures (see mcptap/diff/): negotiated revision,
capabilities, serverInfo, tools/resources/prompts (breaking changes marked),
exchange results and error codes with JSON paths, findings new in B or
resolved, latency percentile shifts beyond PCT percent.

A or B may be ``-`` (standard input, plain or gzip) or a FIFO (``<(…)``): it is
copied to a temporary file first, because the exchanges that differ are read twice; the
copy never outlives the command, even stopped by a signal (see _spooled).

One capture scrubbed (``mcptap scrub``, ``record --redact``, a replay of a
scrubbed capture) and the other in clear: the one in clear is scrubbed as it is
read, with the scrubbed one's rules and the user's redaction key (the key file
or MCPTAP_REDACT_KEY), so placeholders compare with placeholders and no secret
is printed; when that key is not the one that scrubbed it, diff refuses (exit 2).
Both scrubbed, with different keys: placeholders are compared by kind, and the
report ends with a note saying so (diff/scrubbed.py ``by_kind``).

Exit status: 0 no differences, 1 differences, 2 error (unreadable capture,
bad option, a scrubbed capture against one in clear without its key).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import BinaryIO

import click

from mcptap.capture.dumps import dumps
from mcptap.capture.source import read_once
from mcptap.cli import options
from mcptap.cli.errors import say
from mcptap.cli.output import stopped_as_interrupted, styler
from mcptap.cli.progress import progress
from mcptap.diff.captures import diff_captures
from mcptap.diff.render import render_text
from mcptap.errors import CaptureReadError, McptapError
from mcptap.escape import escape_name
from mcptap.redact.keyfile import existing_keyer


@contextmanager
def _spooled(a: str, b: str) -> Iterator[tuple[str | None, str | None]]:
    """The files to read A and B from (``diff_captures``'s ``sources``): a
    temporary copy of standard input for ``-`` and of a path that cannot be
    read twice (a FIFO, ``<(…)``), None for a regular file. The raw bytes are
    copied, so gzip stays gzip.

    A copy must not outlive the command, whatever stops it: where
    ``/proc/self/fd`` exists the copy is a file with no name at all (an
    unnamed temporary file, read again through its descriptor's link), so
    even SIGKILL leaves nothing behind; elsewhere it is a named file removed
    in ``finally``, which SIGTERM and SIGHUP reach as they do Ctrl-C
    (``stopped_as_interrupted``). Raises CaptureReadError."""
    if not (read_once(a) or read_once(b)):
        yield None, None
        return
    with stopped_as_interrupted(), ExitStack() as stack:
        sa = stack.enter_context(_spool(a)) if read_once(a) else None
        sb = stack.enter_context(_spool(b)) if read_once(b) else None
        yield sa, sb


@contextmanager
def _spool(path: str) -> Iterator[str]:
    if os.path.isdir(_FD_LINKS):
        try:
            spool_fp = tempfile.TemporaryFile(prefix="mcptap-diff-stdin-")
        except OSError as exc:
            raise CaptureReadError(f"{escape_name(path)}: cannot spool {'standard input' if path == '-' else 'it'}: {exc.strerror or exc}") from None
        with spool_fp:
            _copy_in(path, spool_fp)
            yield f"{_FD_LINKS}/{spool_fp.fileno()}"
        return
    named: str | None = None
    try:
        try:
            fd, named = tempfile.mkstemp(prefix="mcptap-diff-stdin-")
        except OSError as exc:
            raise CaptureReadError(f"{escape_name(path)}: cannot spool {'standard input' if path == '-' else 'it'}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "wb") as out:
            _copy_in(path, out)
        yield named
    finally:
        if named is not None:
            os.unlink(named)


#: Where a process's open descriptors can be opened again by name (Linux).
_FD_LINKS = "/proc/self/fd"


def _copy_in(path: str, out: BinaryIO) -> None:
    try:
        if path == "-":
            shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
        else:
            with open(path, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
        out.flush()
    except OSError as exc:
        what = "standard input" if path == "-" else "it"
        raise CaptureReadError(f"{escape_name(path)}: cannot spool {what}: {exc.strerror or exc}") from None


@click.command("diff", epilog=options.example('mcptap diff before.jsonl after.jsonl', 'mcptap diff a.jsonl b.jsonl --format json --latency-threshold 50'),
               short_help="Semantic diff of two captures; exit 1 when they differ.")
@click.argument("a", type=options.NonEmptyPath(dir_okay=False))
@click.argument("b", type=options.NonEmptyPath(dir_okay=False))
@options.ignore("Also ignore this JSON path (e.g. result.structuredContent.now, tools/call:result.content[*].text; "
                "* = one segment, ** = any). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--latency-threshold", type=options.Finite(min=0), default=None, metavar="PCT",
              help="Report per-method latency percentiles (p50/p90/p99) that moved by more than PCT percent.")
@options.color
@click.pass_context
def command(ctx: click.Context, a: str, b: str, ignore: tuple[str, ...], fmt: str, latency_threshold: float | None,
            color: bool | None) -> None:
    """Compare capture A (before) with capture B (after)."""
    options.refuse_text_only(ctx, fmt, "color")
    if a == "-" and b == "-":
        raise click.UsageError("A and B cannot both be - (standard input is read once)")
    try:
        with progress("diff", (a, b), stdout_after=True):
            with _spooled(a, b) as sources:
                # a scrubbed capture against one in clear: the clear one is scrubbed with the same key as it is read
                report = diff_captures(a, b, ignore=ignore, latency_threshold=latency_threshold, sources=sources, keyer=existing_keyer)
    except (McptapError, ValueError) as exc:
        say(str(exc))
        ctx.exit(2)
    if fmt == "json":
        sys.stdout.buffer.write(dumps(report.to_json(), indent=True, newline=True))
    else:
        click.echo(render_text(report, styler(color)), nl=False, color=True)   # colour already decided
    ctx.exit(1 if report.different else 0)
