"""``mcptap record --upstream URL [--listen HOST:PORT] …``: the HTTP tap's CLI part.

The ``record`` command (cli/record.py) owns ``-o``, ``--quiet`` and
``--strict-capture``; it decorates itself with ``http_options`` and, when
``--upstream`` is given (and no CMD), returns ``run_http_record(...)``'s exit
status. mcptap then listens (127.0.0.1, a free port unless ``--listen`` says
otherwise), prints ``mcptap: listening on URL`` on stderr (secrets in its path hidden) and relays until
SIGINT, SIGTERM, SIGHUP or SIGQUIT (one it was started with ignored, as ``cmd &`` in a script
ignores SIGINT, stays ignored: ``transport/signal_latch.py``); the capture is
finished on the way out.

Exit status: 0 after a signal; 2 for a usage error (bad URL, non-loopback
listen without ``--allow-remote``, port in use, unreadable ``--cacert``); 74
with ``--strict-capture`` when the capture is incomplete. Upstream failures
never change it: the affected request got a 502 and the capture records why.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click
import trio

from mcptap.capture.writer import CaptureWriter
from mcptap.cli.errors import say, say_usage
from mcptap.cli.options import Finite, NonEmptyPath
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.errors import CaptureWriteError, McptapError
from mcptap.escape import escape_name
from mcptap.otel import JOIN_S, closing_phase, start_live_export
from mcptap.paths import default_capture_path
from mcptap.recorder import Recorder
from mcptap.redact import scrub_command_url
from mcptap.redact.engine import Redactor
from mcptap.transport.signal_latch import PASSED_ON_SIGNALS, STOP_SIGNALS, SignalLatch, open_receiver

if TYPE_CHECKING:
    from mcptap.transport.http import HttpTap
    from mcptap.transport.http_recorder import RecorderLink

EX_USAGE, EX_IOERR = 2, 74


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT``, ``PORT`` or ``HOST`` → (host, port).
    Raises click.BadParameter."""
    v = value.strip()
    host, port = "127.0.0.1", "0"
    if v.startswith("["):
        h, _, rest = v[1:].partition("]")
        host, port = h, rest.lstrip(":") or "0"
    elif v.isdigit():
        port = v
    elif v.count(":") == 1:
        h, port = v.split(":")
        host = h or host
    elif v:
        host = v
    if not port.isdigit():
        raise click.BadParameter(f"{value!r}: the port {port!r} is not a number (expected HOST:PORT, e.g. 127.0.0.1:8080)",
                                 param_hint="--listen")
    if not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r}: the port {int(port)} is out of range (0-65535; 0: any free port)", param_hint="--listen")
    return host, int(port)


def http_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the HTTP tap options to a click command (keyword names as below)."""
    opts = [
        click.option("--upstream", metavar="URL", default=None,
                     help="Tap an HTTP MCP server (Streamable HTTP or legacy HTTP+SSE) at URL instead of running a command."),
        click.option("--listen", "listen", metavar="HOST:PORT", default="127.0.0.1:0", show_default=True,
                     help="Where the tap listens (port 0: a free port; the URL is printed on stderr)."),
        click.option("--allow-remote", is_flag=True, help="Allow listening on a non-loopback address."),
        click.option("--keep-host", is_flag=True, help="Forward the client's Host header (default: the upstream's)."),
        click.option("--no-endpoint-rewrite", is_flag=True,
                     help="Forward legacy endpoint events verbatim even when they name the upstream origin."),
        click.option("--no-auth-rewrite", is_flag=True,
                     help="Forward OAuth discovery (WWW-Authenticate, protected resource and authorization server "
                          "metadata) verbatim, for setups that terminate authorization elsewhere."),
        click.option("--cacert", type=NonEmptyPath(dir_okay=False, exists=True), default=None,
                     help="PEM CA bundle for an https upstream (default: the system trust store)."),
        click.option("--record-secrets", is_flag=True,
                     help="Store credentials (Authorization, cookies, API keys) in clear in the capture."),
        click.option("--connect-timeout", type=Finite(min=0.1), default=10.0, show_default=True,
                     help="Seconds to wait for the upstream connection."),
        click.option("--idle-timeout", type=Finite(min=0.01), default=300.0, show_default=True,
                     help="Close a client connection after this many seconds without a request."),
        click.option("--request-timeout", type=Finite(min=0.01), default=30.0, show_default=True,
                     help="Answer 408 when a request is not received whole within this many seconds."),
        click.option("--max-connections", type=click.IntRange(min=1), default=None,
                     help="Client connections served at once; more get 503 [default: from the file descriptor limit]."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def run_http_record(*, upstream: str, listen: str = "127.0.0.1:0", allow_remote: bool = False, keep_host: bool = False,
                    no_endpoint_rewrite: bool = False, no_auth_rewrite: bool = False, cacert: str | None = None, record_secrets: bool = False,
                    connect_timeout: float = 10.0, idle_timeout: float = 300.0, request_timeout: float = 30.0,
                    max_connections: int | None = None, output: str | None = None, quiet: bool = False,
                    strict_capture: bool = False, ready: Callable[[str], None] | None = None,
                    capture_dir: str | None = None, name: str | None = None, keep: int | None = None, redactor: Redactor | None = None,
                    otlp: tuple[str, dict[str, str] | None] | None = None, **_ignored: Any) -> int:
    """Run the HTTP tap until SIGINT, SIGTERM, SIGHUP or SIGQUIT; returns the exit status.
    ``ready(url)`` is called once listening (tests); ``redactor``: scrub
    records before they are written (``record --redact``); ``otlp``: live
    export (``mcptap.otel.prepare``'s result) or None."""
    try:
        host, port = parse_listen(listen)
    except click.BadParameter as exc:
        say_usage(exc)
        return EX_USAGE
    from mcptap.transport.http import HttpTap, HttpTapConfig  # here: `record -- CMD` (stdio) never loads the HTTP tap

    cfg = HttpTapConfig(upstream=upstream, listen_host=host, listen_port=port, allow_remote=allow_remote, keep_host=keep_host,
                        rewrite_endpoint=not no_endpoint_rewrite, cacert=cacert, record_secrets=record_secrets,
                        connect_timeout=connect_timeout, auth_rewrite=not no_auth_rewrite, idle_timeout=idle_timeout,
                        request_timeout=request_timeout, max_connections=max_connections)
    shown = upstream if record_secrets else scrub_command_url(upstream)
    try:
        tap = HttpTap(cfg, None, say=say)
    except McptapError as exc:      # --upstream, --listen or --cacert that cannot be used: a usage error's form
        say_usage(click.UsageError(str(exc), click.get_current_context(silent=True)))
        return EX_USAGE
    # a host's stop signal (SIGINT, SIGTERM, SIGHUP: the terminal closed, SIGQUIT) from the moment
    # the capture exists stops the tap as a later one would (end record written); before, one in
    # the first moments killed mcptap mid-start
    latch = SignalLatch(STOP_SIGNALS, ignoring=PASSED_ON_SIGNALS).install()
    try:
        return _run(tap, upstream, shown, latch, output=output, quiet=quiet, strict_capture=strict_capture, ready=ready,
                    capture_dir=capture_dir, name=name, keep=keep, redactor=redactor, otlp=otlp, record_secrets=record_secrets)
    finally:
        latch.restore()


def _run(tap: HttpTap, upstream: str, shown: str, latch: SignalLatch, *, output: str | None, quiet: bool, strict_capture: bool,
         ready: Callable[[str], None] | None, capture_dir: str | None, name: str | None, keep: int | None, redactor: Redactor | None,
         otlp: tuple[str, dict[str, str] | None] | None, record_secrets: bool) -> int:
    writer, problem, path = _open_capture(output, tap, capture_dir, name)
    if problem is not None:
        # unlike the stdio tap, no host's session depends on this proxy starting:
        # a tap that cannot record is refused rather than run blind
        say(f"{problem}; not starting")
        return EX_IOERR if strict_capture else EX_USAGE
    listening: list[str] = []

    def on_listening(url: str) -> None:
        # retention only once the tap is up: a start that fails (port busy)
        # must not delete the captures that --keep would have replaced
        listening.append(url)
        if path is not None and keep is not None:
            from mcptap.cli.capture_dir import apply_keep

            apply_keep(path, name, [_default_argv(tap)], keep, say, quiet)
        if ready is not None:
            ready(url)
    scrubber = None
    if writer is not None and redactor is not None:
        from mcptap.redact.scrub import Scrubber

        scrubber = Scrubber(redactor)
        writer.transform = scrubber.transform
    if writer is not None and shown != upstream:
        from mcptap.known_secrets import known_secrets
        from mcptap.redact import placeholder

        # what the shown URL lacks, replaced wherever it reappears (an upstream that echoes its
        # key, a path token in every request target); set before the recorder process forks
        known = known_secrets([upstream], [shown], placeholder, stdio=False)
        if known is not None:
            writer.line_filter = known.line
    try:
        rec = Recorder(writer, "http", target={"url": shown}, clock=monotonic_us_clock(), started=utc_timestamp(),
                       header_extra={"name": name} if name else None)
    except CaptureWriteError as exc:
        assert writer is not None        # the header did not fit (disk full): as a capture that cannot be created
        writer.discard()
        say(f"{exc}; not starting")
        return EX_IOERR if strict_capture else EX_USAGE
    # parsing, annotation, export and the capture write run in a process of their
    # own (forked now, before trio and any thread): the relay never waits for them
    link = _start_recorder(tap, rec, record_secrets, otlp, shown, redactor, path)
    tap.observer_for = link.observer
    try:
        trio.run(functools.partial(_serve, tap, shown, quiet, path, on_listening, link.run, latch, not record_secrets))
    except (McptapError, BaseExceptionGroup) as exc:
        ours = _our_error(exc)
        if ours is None:
            raise
        with closing_phase(otlp is not None):
            link.finish(EX_USAGE)
        if not listening and output is None and path is not None:
            # never started: leave no empty capture behind in the capture directory
            with contextlib.suppress(OSError):
                os.unlink(path)
        say(str(ours))
        return EX_USAGE
    counts = tap.notices.counts()
    extra: dict[str, Any] = {"tap": counts} if counts else {}
    with closing_phase(otlp is not None):
        outcome = link.finish(0, extra)
    if not quiet:
        say(f"stopped: {tap.summary()}")
    if scrubber is not None and scrubber.kept:
        from mcptap.cli.scrub import kept_warning

        say(kept_warning(scrubber.kept, "capture"))
    if outcome.ended is not None:
        say(f"capture incomplete ({outcome.ended}; no end record): {escape_name(str(path))}")
        if strict_capture:
            return EX_IOERR
    elif outcome.failed is not None:
        say(f"capture incomplete ({outcome.failed}; {outcome.dropped} records lost): {escape_name(str(path))}")
        if strict_capture:
            return EX_IOERR
    elif link.stopped:          # after an internal error: a gap record and the end record's recorder_error say so
        say(f"capture incomplete (recording stopped after an internal error): {escape_name(str(path))}")
        if strict_capture:
            return EX_IOERR
    elif link.lost_batches and strict_capture:      # said by ``finish``: gap records say what
        return EX_IOERR
    return 0


def _start_recorder(tap: HttpTap, rec: Recorder, record_secrets: bool, otlp: tuple[str, dict[str, str] | None] | None,
                    shown: str, redactor: Redactor | None, path: str | None) -> RecorderLink:
    """Fork the recorder process (``transport/http_recorder.py``): the
    observer, the live export and the end record are its part."""
    from mcptap.relay.http.observe import HttpObserver
    from mcptap.transport.http_recorder import start_recorder
    from mcptap.transport.http_recorder_child import Hooks, child_main

    live: list[Any] = []

    def start() -> None:
        live.append(start_live_export(otlp, rec, {"url": shown}, _say_safe, redactor))

    def end(code: int, extra: dict[str, Any]) -> None:
        exporter = live[0] if live else None
        if exporter is not None:
            exporter.close()
        rec.close(exit_code=code, **extra)
        if exporter is not None:
            exporter.join(JOIN_S)

    hooks = Hooks(rec, lambda authority: HttpObserver(rec, tap.upstream, listen_authority=authority, record_secrets=record_secrets),
                  start, end)
    spill_dir = os.path.dirname(os.path.abspath(path)) if path else None
    return start_recorder(lambda fact_fd, status_fd, spill: child_main(fact_fd, status_fd, spill, hooks), rec.clock, say, spill_dir)


def _say_safe(line: str) -> None:
    with contextlib.suppress(OSError):
        say(line)


def _our_error(exc: BaseException) -> McptapError | None:
    """Our own error, possibly wrapped by trio nurseries in exception groups."""
    if isinstance(exc, McptapError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            found = _our_error(sub)
            if found is not None:
                return found
    return None


def _default_argv(tap: HttpTap) -> str:
    return f"http-{tap.upstream.host}-{tap.upstream.port}"


def _open_capture(output: str | None, tap: HttpTap, capture_dir: str | None = None,
                  name: str | None = None) -> tuple[CaptureWriter | None, str | None, str | None]:
    path = output
    try:
        path = str(output or default_capture_path([_default_argv(tap)], directory=capture_dir, name=name))
        if os.path.exists(path) and not os.path.isfile(path):
            raise CaptureWriteError(f"cannot create capture {escape_name(path)}: not a regular file")
        writer = CaptureWriter.open(path)
        from mcptap.cli.capture_dir import sweep_reserves

        sweep_reserves(path)
        return writer, None, path
    except CaptureWriteError as exc:
        return None, str(exc), path
    except OSError as exc:
        return None, f"cannot create the capture directory: {exc.strerror or exc} ({exc.filename})", path


async def _serve(tap: HttpTap, shown: str, quiet: bool, path: str | None, ready: Callable[[str], None] | None,
                 beside: Callable[[], Awaitable[None]], latch: SignalLatch, hide: bool = True) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(beside)
        url = await nursery.start(tap.serve)
        # the listen URL repeats the upstream's path, which may carry a token (``/mcp/sk-live-…``):
        # hidden as in the upstream shown (a host keeps our stderr in its logs); clients use the path they gave
        listen = scrub_command_url(url) if hide else url
        hint = " (the upstream's path with its secrets hidden: clients use the path given in --upstream)" if listen != url else ""
        say(f"listening on {listen} -> {shown}{hint}")
        if not quiet and path:
            say(f"recording to {escape_name(path)}")
        if ready is not None:
            ready(url)
        with open_receiver(*STOP_SIGNALS) as signals:
            if latch.take():            # asked to stop before the receiver existed
                nursery.cancel_scope.cancel()
                return
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


@click.command("record-http")
@http_options
@click.option("-o", "--output", type=NonEmptyPath(dir_okay=False, no_dash="the capture is a file"), default=None,
              help="Capture file.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the capture path.")
@click.option("--strict-capture", is_flag=True, help=f"Exit {EX_IOERR} if the capture is incomplete.")
def standalone(**opts: Any) -> None:
    """The HTTP tap alone (``python -m mcptap.cli.record_http --upstream URL``);
    ``mcptap record --upstream URL`` is the same with the record command's options."""
    if not opts.get("upstream"):
        raise click.UsageError("--upstream URL is required")
    raise SystemExit(run_http_record(**opts))


if __name__ == "__main__":  # pragma: no cover
    standalone()
