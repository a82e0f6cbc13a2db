"""``mcptap scrub IN -o OUT [rules] [--dry-run]``: a copy of a capture with
secrets replaced by keyed placeholders (mcptap/redact/, docs/redaction.md).

IN may be ``-`` (stdin) or gzip-compressed. OUT is a valid capture that
``show``, ``check``, ``diff`` and ``replay`` read; its header says it was
scrubbed and by which rules, its end digests are over the scrubbed bytes
(the source's kept in ``original``). ``--dry-run`` lists what would be
redacted (seq, path, rule, placeholder) and writes nothing. A truncated IN
gives an OUT that is still marked truncated.

Exit status: 0; 2 for a bad rule, an unreadable IN or an unwritable OUT.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import click

from mcptap.cli import options
from mcptap.cli.errors import Fail, say
from mcptap.cli.output import (
    nameless,
    refuse_input_as_output,
    replaced_path,
    stopped_as_interrupted,
    temp_beside,
    whole_then_copied,
)
from mcptap.cli.progress import progress
from mcptap.cli.redact_options import redact_options, redactor_from
from mcptap.errors import CaptureReadError, CaptureWriteError
from mcptap.escape import escape_name


@click.command("scrub", epilog=options.example("mcptap scrub cap.jsonl -o cap.scrubbed.jsonl", "mcptap scrub cap.jsonl --dry-run",
                                                "mcptap scrub cap.jsonl -o - --redact-key apiKey | gzip > cap.jsonl.gz"),
               short_help="Copy a capture with secrets replaced by keyed placeholders.")
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", type=options.NonEmptyPath(dir_okay=False, allow_dash=True), default=None,
              help="Scrubbed capture to write ('-': stdout). Required unless --dry-run.")
@click.option("-n", "--dry-run", is_flag=True, help="List what would be redacted (seq, path, rule, placeholder); write nothing.")
@redact_options
def command(capture: str, output: str | None, dry_run: bool, **kwargs: Any) -> None:
    """Scrub CAPTURE ('-': stdin; .jsonl.gz read too) into OUTPUT."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.capture.writer import CaptureWriter
    from mcptap.redact.scrub import Scrubber

    if output is None and not dry_run:
        raise click.UsageError("give -o OUTPUT (or --dry-run)")
    redactor = redactor_from(kwargs)
    refuse_input_as_output([capture], output)
    try:
        stream = CaptureStream(capture)
    except CaptureReadError as exc:
        raise Fail(str(exc)) from None
    scrubber = Scrubber(redactor, collect=dry_run, known=first_pass(capture, redactor))
    scrubber.reject_chunks = True     # _scrub re-frames them first (a file), else refuses
    writer = None
    # a file OUTPUT is written beside itself and renamed when complete: a scrub that stops
    # half-way (corrupt record, chunk records from a pipe, Ctrl-C, full disk) leaves no half
    # capture behind; standard output, a device or a FIFO (such as /dev/null: a rename would
    # replace the node) get the whole written into a temporary file first (whole_then_copied)
    target = None if dry_run or output == "-" else replaced_path(str(output))
    tmp = None
    with contextlib.ExitStack() as stack, stopped_as_interrupted():  # TERM/HUP as Ctrl-C: the temporary file goes
        if not dry_run:
            assert output is not None
            try:
                if target is None:
                    writer = CaptureWriter.to_file(stack.enter_context(whole_then_copied(output)))
                else:
                    fd, tmp = temp_beside(target, "scrub")
                    os.close(fd)
                    writer = CaptureWriter.open(tmp)
            except OSError as exc:
                raise Fail(f"cannot create capture {escape_name(output)}: {exc.strerror or exc}") from None
            except CaptureWriteError as exc:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                raise Fail(str(exc).replace(str(tmp), str(output))) from None
        try:
            try:
                _scrub(stream, scrubber, writer, capture, output)
            except CaptureReadError as exc:
                raise Fail(str(exc)) from None
            finally:
                if writer is not None and tmp is not None:
                    writer.close()
                elif writer is not None:
                    writer.flush()
            if writer is not None and writer.failed:
                raise Fail(f"cannot write {escape_name(str(output))}: {writer.failed}")
            if tmp is not None:
                assert target is not None
                try:
                    os.replace(tmp, target)
                except OSError as exc:
                    raise Fail(f"cannot write {escape_name(str(output))}: {exc.strerror or exc}") from None
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
        try:
            stack.close()       # the whole, copied to standard output (or the device) now
        except BrokenPipeError:
            if output == "-":
                raise           # `scrub -o - | head`: the reader left (cli/main.py: a quiet stop)
            raise Fail(f"cannot write {escape_name(str(output))}: the reader of the pipe left") from None
        except OSError as exc:
            raise Fail(f"cannot write {escape_name(str(output))}: {exc.strerror or exc}") from None
    if scrubber.kept:
        say(kept_warning(scrubber.kept, "capture" if dry_run else "output"))
    if dry_run:
        lines = [f"{'seq':>6}  {'path':<40}  {'rule':<28}  placeholder"]
        for seq, hit in scrubber.hits:
            lines.append(f"{seq if seq is not None else '-':>6}  {_safe(hit.path):<40}  {_safe(hit.rule):<28}  {hit.placeholder}")
        lines.append(f"{scrubber.count} value(s) would be redacted")
        click.echo("\n".join(lines))
    else:
        say(f"scrubbed {scrubber.count} value(s) into {escape_name(str(output))}")


def _scrub(stream: Any, scrubber: Any, writer: Any, capture: str, output: str | None) -> None:
    """Copy ``stream`` through ``scrubber`` into ``writer`` (None: dry run),
    with the progress line of long commands."""
    from mcptap.reannotate_views import framed

    # a dry run lists its hits after the work; -o FILE: progress whatever standard output is
    with progress("scrub", [capture], stdout_after=writer is None, output=output if writer is not None else None):
        if writer is not None:
            writer.write(scrubber.header(stream.header))
        else:
            scrubber.header(stream.header)
        n = 0
        # bytes stored unframed (chunk records) become messages first: keys, structure and a
        # secret cut across two chunks are only seen in whole messages
        for rec in scrubber.records(framed(stream)):
            if writer is not None:
                writer.write(rec)
                n += 1
                if n % 512 == 0:
                    writer.flush()
        tail = scrubber.finish(stream.truncated)
        if tail is not None and writer is not None:
            writer.write(tail)


def first_pass(capture: str, redactor: Any) -> Any:
    """The secrets a scrub of the whole CAPTURE finds (``redact.scrub.learned``), so that the
    scrub proper also replaces them before the record that showed them secret; None for what
    can be read only once (``-``, a pipe: only later repeats are replaced there) or cannot be
    read (the scrub proper says why)."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.reannotate_views import framed
    from mcptap.redact.scrub import learned

    if nameless(capture):
        return None
    try:
        stream = CaptureStream(capture)
        return learned(redactor, stream.header, framed(stream))
    except (CaptureReadError, OSError, ValueError):
        return None


def _safe(text: str) -> str:
    """Paths and rule names come from peer JSON keys: no control characters raw."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def kept_warning(kept: list[Any], where: str) -> str:
    """The warning for ``Scrubber.kept``: secrets a peer used as a JSON-RPC id or in a method
    name, kept as sent (kinds, pairing, serve's matching; finding texts quoting them are
    scrubbed all the same): how many, the first five ``#seq id|method (rule)``."""
    shown = ", ".join(f"#{seq} {hit.path} ({_safe(hit.rule)})" for seq, hit in kept[:5])
    return (f"warning: {len(kept)} secret(s) in JSON-RPC ids or method names are never redacted and stay in the "
            f"{where}: {shown}{' …' if len(kept) > 5 else ''} (docs/redaction.md)")
