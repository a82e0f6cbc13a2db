"""``mcptap record [-o FILE] [--grace S] [--quiet] [--strict-capture] -- CMD ARGS…``

Spawn an MCP stdio server, relay the host's stdin/stdout to it byte-exact, pass
its stderr through and record everything into a capture (docs/capture-format.md).

Exit status: the server's own (128+N when it was killed by signal N), so a host
sees exactly what it would see without the tap; 127/126 when CMD cannot be run
(not found / not executable), like a shell; 2 for a usage error.

Capture problems never stop the relay (design principle 2). When the capture is
incomplete (cannot be created, disk full, recorder failure, copies dropped past
the spill file's bound: ``MCPTAP_SPILL_LIMIT``) mcptap says so on
stderr, the capture says so (``capture_error`` / ``dropped_records`` in the end
record, or a ``gap`` record), and with ``--strict-capture`` the exit status is 74
(EX_IOERR) instead of the server's — for CI, where a missing capture must fail the
job; hosts keep the default so a full disk never looks like a server crash.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

import click
import trio

from mcptap.capture.writer import CaptureWriter
from mcptap.cli import options
from mcptap.cli.capture_dir import KeepOnAnswer, apply_keep, capture_options, sweep_reserves
from mcptap.cli.errors import Fail, say, usage
from mcptap.cli.record_http import http_options, run_http_record
from mcptap.cli.redact_options import redact_options, redactor_from
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.errors import CaptureWriteError, McptapError
from mcptap.escape import escape_name
from mcptap.known_secrets import known_secrets
from mcptap.otel import JOIN_S, OtelUnavailable, closing_phase, prepare, start_live_export
from mcptap.paths import default_capture_path
from mcptap.recorder import LONG_LINE
from mcptap.redact import scrub_argv
from mcptap.redact.argv import placeholder
from mcptap.redact.engine import Redactor
from mcptap.transport import spill_bound
from mcptap.transport.signal_latch import SignalLatch
from mcptap.transport.spill import spill_path

EX_IOERR = 74


def _is_capture_or_empty(path: str) -> bool:
    """True for an empty file or one that starts with an mcptap capture header
    (re-recording over the previous session's capture is the common case)."""
    try:
        with open(path, "rb") as fp:
            head = fp.read(200)
    except OSError:
        return True          # unreadable: CaptureWriter.open reports the real problem
    return not head or head.startswith(b'{"type":"header","format":"mcptap-capture"')


def _redactor(ctx: click.Context, redact: bool, kwargs: dict[str, Any]) -> Redactor | None:
    """The Redactor for --redact (None without it); redaction options without
    --redact are a usage error."""
    given = [n for n in ("redact_key", "redact_path", "redact_pattern", "redact_rules", "no_builtin_rules")
             if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
    if given and not redact:
        raise click.UsageError(f"--{given[0].replace('_', '-')} needs --redact")
    if not redact:
        for n in ("redact_key", "redact_path", "redact_pattern", "redact_rules", "no_builtin_rules"):
            kwargs.pop(n, None)
        return None
    return redactor_from(kwargs, strict_key=False)


@click.command(
    "record",
    cls=options.TrailingCommand,
    short_help="Tap an MCP server (stdio command or HTTP upstream) and record.",
    epilog=options.example('mcptap record -- python server.py', 'mcptap record -o cap.jsonl -- npx -y @modelcontextprotocol/server-everything stdio',
                           'mcptap record --upstream http://127.0.0.1:8000/mcp --listen 127.0.0.1:9000'),
)
@click.option("-o", "--output", default=None,
              type=options.NonEmptyPath(dir_okay=False, no_dash="a capture is a file (over stdio, standard output carries the server's messages)"),
              help="Capture file (default: the capture directory, see MCPTAP_DIR).")
@click.option("--grace", type=options.Finite(min=0), default=5.0, show_default=True,
              help="Seconds between closing the server's stdin, SIGTERM and SIGKILL.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the capture path.")
@click.option("--strict-capture", is_flag=True,
              help=f"Exit {EX_IOERR} if the capture is incomplete (default: the server's exit status).")
@click.option("--redact", is_flag=True,
              help="Scrub payloads before they reach the capture (as mcptap scrub; the relay still forwards the original bytes).")
@redact_options
@capture_options
@click.option("--otlp-endpoint", metavar="URL", envvar="OTEL_EXPORTER_OTLP_ENDPOINT", default=None,
              help="Export spans live to an OpenTelemetry collector (OTLP/HTTP base URL, e.g. http://127.0.0.1:4318; "
                   "env OTEL_EXPORTER_OTLP_ENDPOINT). Needs the otel extra.")
@click.option("--otlp-header", "otlp_headers", metavar="NAME=VALUE", multiple=True,
              help="Header for the OTLP export requests (repeatable; default: OTEL_EXPORTER_OTLP_HEADERS).")
@http_options
@click.argument("cmd", nargs=-1, required=False, type=click.UNPROCESSED, metavar="[-- CMD [ARGS]...]")
@click.pass_context
def command(ctx: click.Context, /, output: str | None, grace: float, quiet: bool, strict_capture: bool, redact: bool,
            otlp_endpoint: str | None, otlp_headers: tuple[str, ...],
            cmd: tuple[str, ...], upstream: str | None, capture_dir: str | None, name: str | None, keep: int | None,
            **http_kwargs: Any) -> None:
    """Record an MCP session: run CMD as a stdio server, or proxy --upstream URL.

    stdio: put this in a host's server config in place of the server command,
    e.g. "command": "mcptap", "args": ["record", "--", "python", "server.py"].
    Only the server's bytes reach stdout; mcptap's messages go to stderr.

    HTTP: `mcptap record --upstream http://host/mcp` listens on 127.0.0.1 (a free
    port unless --listen says otherwise), prints its URL on stderr and forwards
    to the upstream until interrupted.

    While analysis is behind, copies wait in a spill file beside the capture, at
    most 1 GiB (env MCPTAP_SPILL_LIMIT, e.g. 256M) and half the free disk; past
    that they are dropped and the capture's gap records say how many bytes.
    """
    if output is not None and (capture_dir is not None or keep is not None):
        raise click.UsageError("-o FILE names the capture; --dir and --keep apply to a capture directory")
    redactor = _redactor(ctx, redact, http_kwargs)
    try:
        spill_bound.configured_limit()          # the relays read it later, where a bad value could only be ignored
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    otlp = None
    if otlp_endpoint:
        try:
            otlp = prepare(otlp_endpoint, otlp_headers)
        except OtelUnavailable as exc:      # the SDK missing: not a usage error
            raise Fail(str(exc)) from None
        except McptapError as exc:          # the endpoint URL or a K=V header that cannot be used
            usage(str(exc))
    if upstream is not None:
        if cmd:
            raise click.UsageError("give either --upstream URL or -- CMD, not both")
        ctx.exit(run_http_record(upstream=upstream, output=output, quiet=quiet, strict_capture=strict_capture,
                                 capture_dir=capture_dir, name=name, keep=keep, redactor=redactor, otlp=otlp, **http_kwargs))
    if not cmd:
        raise click.UsageError("nothing to tap: give -- CMD [ARGS]... (stdio) or --upstream URL (HTTP)")
    given = [name for name in http_kwargs if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
    if given:
        raise click.UsageError(f"--{given[0].replace('_', '-')} applies to the HTTP tap (--upstream URL), not to a stdio command")
    if output and os.path.isfile(output) and not _is_capture_or_empty(output):
        raise click.UsageError(f"-o {escape_name(output)}: the file exists and is not an mcptap capture; refusing to overwrite it")
    # from before the capture exists to the end: a host's signal is held, then forwarded by the
    # tap (never a 0-byte or end-less capture from a SIGTERM in mcptap's first moments)
    latch = SignalLatch().install()
    try:
        _record_stdio(ctx, list(cmd), output, grace, quiet, strict_capture, redactor, otlp, capture_dir, name, keep, latch)
    finally:
        latch.restore()


def _record_stdio(ctx: click.Context, argv: list[str], output: str | None, grace: float, quiet: bool, strict_capture: bool,
                  redactor: Redactor | None, otlp: tuple[str, dict[str, str] | None] | None, capture_dir: str | None, name: str | None, keep: int | None,
                  latch: SignalLatch) -> None:
    """The stdio half of ``command`` (exits through ``ctx.exit``)."""
    # the stdio tap's modules only here: `record --upstream URL` never imports them (resident
    # in both of the HTTP tap's processes otherwise), as `record -- CMD` never imports the HTTP tap
    from mcptap.transport.stdio import run_stdio_tap
    from mcptap.transport.stdio_os import server_cwd

    shown = scrub_argv(argv)
    from mcptap.redact.keyfile import fallback_reason

    if fallback_reason():
        say(f"{fallback_reason()}; placeholders in this capture use a key for this run only")
    writer: CaptureWriter | None = None
    problem: str | None = None
    path = output
    try:
        path = str(output or default_capture_path(argv, directory=capture_dir, name=name))
        if os.path.exists(path) and not os.path.isfile(path):
            # never open (and chmod 0600) a device or fifo, e.g. -o /dev/null as root
            raise CaptureWriteError(f"cannot create capture {escape_name(path)}: not a regular file")
        writer = CaptureWriter.open(path)
    except CaptureWriteError as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"cannot create the capture directory: {exc.strerror or exc} ({exc.filename})"
    scrubber = None
    if writer is not None and redactor is not None:
        from mcptap.redact.scrub import Scrubber

        scrubber = Scrubber(redactor)
        writer.transform = scrubber.transform
    # the values scrub_argv took out of argv, replaced wherever they reappear (a server that echoes its argv on stderr)
    known = known_secrets(argv, shown, placeholder) if writer is not None else None
    if writer is not None and known is not None:
        writer.line_filter = known.line
    header: dict[str, Any] = {"name": name} if name else {}
    if writer is not None and path is not None:
        header["spill"] = os.path.basename(spill_path(path))    # where bytes set aside wait (mcptap recover)
    target: dict[str, Any] = {"argv": shown}
    cwd = server_cwd()
    if cwd is not None:
        target["cwd"] = cwd         # where the server's relative paths point
    started = utc_timestamp()
    try:
        rec = KeepOnAnswer(writer, "stdio", target=target, clock=monotonic_us_clock(), started=started,
                           header_extra=header or None)
    except CaptureWriteError as exc:
        # the header itself did not fit (disk full): a capture without it is unreadable,
        # so this is a capture that could not be created, not one that lost records
        assert writer is not None
        writer.discard()
        writer, problem = None, str(exc)
        rec = KeepOnAnswer(None, "stdio", target=target, clock=monotonic_us_clock(), started=started)
    rec.known = known if rec.writer is not None else None
    if problem is not None:
        if strict_capture:
            say(f"{problem}; not starting the server (--strict-capture)")
            ctx.exit(EX_IOERR)
        say(f"{problem}; relaying WITHOUT recording")
    else:
        if not quiet:
            say(f"recording to {escape_name(str(path))}")
        assert path is not None         # set whenever no problem was reported
        sweep_reserves(path)

    rec.long_line = LONG_LINE               # a huge line streams into chunk records: memory stays flat
    if writer is not None and keep is not None:
        # only once the server answers: a failed start must not push good captures out
        rec.on_answer = functools.partial(apply_keep, str(path), name, argv, keep, say, quiet)
    live = start_live_export(otlp, rec, {"argv": shown}, say, redactor)
    result = trio.run(functools.partial(run_stdio_tap, argv, rec, grace=grace, shown_argv=shown, say=say, early=latch))
    if rec.on_answer is not None and result.spawn_error is None and result.exit_code == 0:
        rec.on_answer()             # a clean session that never needed to answer is a good start too

    extra: dict[str, Any] = {}
    if result.recorder_error:
        extra["recorder_error"] = result.recorder_error
    with closing_phase() as signalled:      # a host's SIGTERM now waits for the end record (a few ms)
        if live is not None:
            live.close()            # its notes go in before the end record
        try:
            rec.close(exit_code=result.exit_code, **extra)
        except Exception as exc:  # noqa: BLE001 - the session is over; report, don't trace
            problem = problem or f"cannot finish the capture: {type(exc).__name__}: {exc}"
    if writer is not None and writer.failed is not None:
        problem = f"capture incomplete ({writer.failed}; {writer.dropped} records lost): {escape_name(str(path))}"
    elif result.recorder_error and problem is None:
        problem = f"capture incomplete (recording stopped: {result.recorder_error}): {escape_name(str(path))}"
    if problem is not None and writer is not None:
        say(problem)
    if scrubber is not None and scrubber.kept:
        from mcptap.cli.scrub import kept_warning

        say(kept_warning(scrubber.kept, "capture"))
    if live is not None:
        live.join(0 if signalled or latch.take() else JOIN_S)
    sys.stderr.flush()
    if (problem is not None or result.lost_bytes) and strict_capture:     # lost bytes: said by the tap
        ctx.exit(EX_IOERR)
    ctx.exit(result.exit_code)
