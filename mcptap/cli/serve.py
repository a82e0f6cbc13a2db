"""``mcptap serve CAPTURE [--listen HOST:PORT] [--strict] [--latency recorded] [--speed X] [-o FILE]``

Play the server side of CAPTURE to a client: over stdio (the mock *is* the
server command a host runs) or, with ``--listen``, over Streamable HTTP (or the
legacy HTTP+SSE transport when the capture is one). See mcptap/serve/.

Exit status: 0 when the client's session ended (stdin EOF; for HTTP SIGINT,
SIGTERM, SIGHUP or SIGQUIT; 1 when the HTTP mock failed to answer a request by a fault of its
own, said on stderr, the other connections served on); over stdio 128+N when signal N ended it (SIGTERM 143: a host stopping its
server; SIGINT 130: Ctrl-C; SIGHUP, SIGQUIT), after ``-o`` got its end record and
``--extend`` merged the exchanges made, as at stdin EOF (SIGUSR1, SIGUSR2 and
SIGALRM end nothing: passed on to ``--extend``'s real server, else ignored); 1 when ``--extend`` could not add the session to CAPTURE (said on stderr;
CAPTURE is left as it was); 2 when the capture cannot be served (not a capture, no
recorded server messages, port busy, unwritable ``-o``, a scrubbed capture to
extend, or to record with ``-o``, whose redaction this user cannot redo: ``-o`` of a
scrubbed capture is scrubbed as it was, ``--unscrubbed-output`` writes it in clear).
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import click
import trio

from mcptap.capture.writer import CaptureWriter, lock
from mcptap.cli import options
from mcptap.cli.errors import interrupted, say_usage, usage
from mcptap.cli.output import nameless, refuse_input_as_output
from mcptap.cli.serve_scrub import extend_scrubbers, live_redaction, output_scrub
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.compare.mask import Masker
from mcptap.errors import CaptureWriteError, McptapError
from mcptap.escape import escape_controls, escape_name, shown
from mcptap.liveness import remove_leftovers
from mcptap.otel import closing_phase
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.script import script_from_path
from mcptap.serve.script_model import Script
from mcptap.transport.signal_latch import FORWARDED_SIGNALS, PASSED_ON_SIGNALS, STOP_SIGNALS, SignalLatch, open_receiver


def _say(line: str) -> None:
    click.echo(f"mcptap: {escape_controls(line)}", err=True)


def load_script(capture: str) -> Script:
    """The capture's server side. Raises McptapError (unreadable, not a
    capture, nothing recorded from the server)."""
    script = script_from_path(capture)
    if not script.answers and not script.endings:       # (a server that refused every request is served so)
        raise McptapError(f"{escape_name(capture)}: no recorded server messages to serve (empty capture?)")
    return script


def _hide_argv_secrets(rec: Recorder, argv: list[str]) -> None:
    """The real server's argv secrets (``--extend -- CMD``) as ``record -- CMD`` hides
    them: replaced wherever they reappear in the session's records (its spawn record,
    an echo in a message or on stderr), with the placeholders ``scrub_argv`` gives."""
    from mcptap.known_secrets import known_secrets
    from mcptap.redact.argv import placeholder, scrub_argv

    known = known_secrets(argv, scrub_argv(argv), placeholder)
    if known is not None and rec.writer is not None:
        rec.writer.line_filter = known.line
        rec.known = known


def _recorder(output: str | None, transport: str, capture: str, target: dict[str, Any],
              scrub: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Recorder | None:
    """The mock's own capture at ``output`` (None: none), its records through ``scrub``
    (serve_scrub.output_scrub). Raises McptapError, CaptureWriteError."""
    if output is None:
        return None
    if os.path.exists(output) and not os.path.isfile(output):
        raise McptapError(f"{escape_name(output)}: not a regular file")
    try:
        writer = CaptureWriter.open(output)
    except OSError as exc:
        raise McptapError(f"cannot create {escape_name(output)}: {exc.strerror or exc}") from None
    writer.transform = scrub
    try:
        return Recorder(writer, transport, target=target, clock=monotonic_us_clock(), started=utc_timestamp(), header_extra={"served_from": capture})
    except CaptureWriteError:
        writer.discard()            # the header did not fit (disk full): nothing readable to keep
        raise


def unanswered_line(unanswered: list[str], show: int = 5) -> str:
    """The end-of-session summary of the requests the mock had no recorded answer for (each
    ``asked(...)``: the client's method, tool name and arguments, escaped): the count, the
    first ``show`` different ones (``(N times)`` when repeated), ``… and N more``."""
    counts: dict[str, int] = {}
    for u in unanswered:
        counts[u] = counts.get(u, 0) + 1
    kinds = list(counts.items())
    parts = [shown(u) + (f" ({n} times)" if n > 1 else "") for u, n in kinds[:show]]
    rest = sum(n for _, n in kinds[show:])
    if rest:
        parts.append(f"… and {rest} more")
    return f"{len(unanswered)} request(s) had no recorded answer: " + "; ".join(parts)


def run_http(core: ServeCore, capture: str, listen: str, allow_remote: bool = False, output: str | None = None,
             ready: Callable[[str], None] | None = None, quiet: bool = False,
             scrub: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> int:
    """Serve over HTTP until SIGINT, SIGTERM, SIGHUP or SIGQUIT; returns the exit status (0; 1 after a fault of its own answering a request; 2
    when the mock cannot listen or record). ``ready(url)``: called once listening; ``scrub``:
    the ``-o`` capture's record transform (serve_scrub.output_scrub).
    At the end, unless ``quiet``, the requests it had no recorded answer for (stderr)."""
    from mcptap.cli.record_http import parse_listen
    from mcptap.serve.http import HttpMock
    from mcptap.transport.http_config import check_listen

    # from before the -o capture exists to its end record: a host's stop signal (SIGINT, SIGTERM,
    # SIGHUP: the terminal closed, SIGQUIT) stops the mock as a later one does (the line saying it
    # serves is printed before trio's receiver exists)
    latch = SignalLatch(STOP_SIGNALS, ignoring=PASSED_ON_SIGNALS).install()
    try:
        try:
            host, port = parse_listen(listen)
            check_listen(host, port, allow_remote)
        except click.BadParameter as exc:
            say_usage(exc)
            return 2
        except McptapError as exc:          # a --listen value that cannot be used (non-loopback, unresolvable)
            say_usage(click.UsageError(str(exc)))
            return 2
        try:
            mock = HttpMock(core, None, host=host, port=port, allow_remote=allow_remote, say=_say)
            mock.rec = _recorder(output, "http", capture, {"served_from": capture}, scrub)
        except McptapError as exc:
            _say(str(exc))
            return 2

        async def main() -> None:
            await mock.bind()
            async with trio.open_nursery() as nursery:
                with open_receiver(*STOP_SIGNALS) as signals:
                    url = await nursery.start(mock.serve)
                    _say(f"serving {escape_name(capture)} on {url}")
                    if ready is not None:
                        ready(url)
                    if not latch.take():
                        async for _ in signals:
                            break
                nursery.cancel_scope.cancel()

        try:
            trio.run(main)
        except McptapError as exc:
            _say(str(exc))
            if mock.rec is not None:
                mock.rec.close(exit_code=2)
            return 2
        if mock.rec is not None:
            mock.rec.close(exit_code=0)
    finally:
        latch.restore()
    if mock.unsent_more:        # said whatever -q: their first lines were
        from mcptap.serve.http_streams import unsent_more_line

        _say(unsent_more_line(mock.unsent_more))
    if not quiet and core.unanswered:
        _say(unanswered_line(core.unanswered))
    return 1 if mock.internal_errors else 0


def _episode_file(capture: str) -> tuple[str, int | None]:
    """A file for the mock's own session when ``--extend`` has no ``-o``: (path to write it
    by, descriptor that keeps it). Its name is removed at once where the system can read it
    back through ``/proc/self/fd`` (so a killed mock leaves nothing behind)."""
    # named by this pid, not as a capture: one a killed mock leaves is never listed and is removed
    # by the next serve, ls or prune there (liveness.stale_merges)
    fd, path = tempfile.mkstemp(prefix=f".mcptap-episode-{os.getpid()}-", suffix=".part", dir=os.path.dirname(os.path.abspath(capture)))
    if os.path.exists(f"/proc/self/fd/{fd}"):
        os.unlink(path)
        return f"/proc/self/fd/{fd}", fd
    os.close(fd)
    return path, None


def _hold(capture: str) -> int:
    """``--extend``'s hold on ``capture`` from the session's start to the merge: a descriptor
    with the capture lock a CaptureWriter takes, so ``prune`` and ``record --keep`` leave it
    alone, no ``record -o`` truncates it, and a second ``serve --extend`` of it is refused (its
    rename would drop this session). Raises McptapError."""
    try:
        fd = os.open(capture, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise McptapError(f"cannot extend {escape_name(capture)}: {exc.strerror or exc}") from None
    if not lock(fd):
        os.close(fd)
        raise McptapError(f"cannot extend {escape_name(capture)}: another mcptap is recording into it or extending it")
    return fd


def _source(capture: str, held: int) -> str | None:
    """Where the merge reads the capture when it is no longer the file held (removed or
    replaced by hand meanwhile): the held descriptor through ``/proc``; else None (its path)."""
    try:
        now, then = os.stat(capture), os.fstat(held)
        if (now.st_dev, now.st_ino) == (then.st_dev, then.st_ino):
            return None
    except OSError:
        pass
    proc = f"/proc/self/fd/{held}"
    return proc if os.path.exists(proc) else None


def _extend(capture: str, episode: str, result: Any, quiet: bool, scrubbers: list[Any], held: int) -> bool:
    """Add the mock's session to ``capture`` when a request was forwarded to the real server
    (``result``: the ServeResult; the caller holds SIGINT, SIGTERM and SIGHUP meanwhile; the
    capture is replaced in one step at the end). False (said on stderr) when it could not be."""
    if not result.forwarded:
        return True
    from mcptap.serve.extend import extend_capture

    try:
        extend_capture(capture, episode, scrubbers, source=_source(capture, held), replayed=result.replayed)
    except (McptapError, ValueError, OSError) as exc:
        _say(f"cannot extend {escape_name(capture)}: {exc}")
        return False
    if not quiet:
        # forwarded is not answered: a request the session ended on (Ctrl-C, a cancel) has no answer
        errors = f" ({result.errors} with an error)" if result.errors else ""
        lost = f", {result.lost} never (it exited first: the client got an error)" if result.lost else ""
        _say(f"{result.forwarded} request(s) forwarded to the real server, {result.answered} answered{errors}{lost}; "
             f"{escape_name(capture)} extended with this session")
    return True


@click.command("serve", cls=options.TrailingCommand, leading=1,
               epilog=options.example('mcptap serve cap.jsonl', 'mcptap serve cap.jsonl --listen 127.0.0.1:0 --latency recorded'),
               short_help="Serve a capture's server side to a client (a mock MCP server).")
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False))
@click.option("--listen", metavar="HOST:PORT", default=None,
              help="Serve over HTTP here (port 0: a free port; the URL is printed on stderr) instead of stdio.")
@click.option("--allow-remote", is_flag=True, help="Allow --listen on a non-loopback address.")
@click.option("--strict", is_flag=True, help="Match requests on their exact params (only _meta.progressToken and --ignore paths ignored); "
              "no answer is repeated once the recorded ones are used.")
@click.option("--latency", type=click.Choice(["none", "recorded"]), default="none", show_default=True,
              help="Answer at once, or after the recorded delays.")
@click.option("--speed", type=options.Finite(min=0.001), default=None,
              help="Scale recorded delays: 2 plays twice as fast (implies --latency recorded).")
@options.ignore("Also ignore this params path when matching (repeatable).")
@click.option("-o", "--output", default=None,
              type=options.NonEmptyPath(dir_okay=False, no_dash="standard output carries the served messages"),
              help="Record the mock's own session (findings for requests it could not answer).")
@click.option("--unscrubbed-output", is_flag=True,
              help="A scrubbed CAPTURE whose redaction key you do not have: write -o all the same, with the live "
                   "client's secrets in clear (default: refuse; with the key it is scrubbed as CAPTURE was).")
@click.option("-q", "--quiet", is_flag=True, help="No summary on stderr at the end.")
@click.option("--extend", is_flag=True, help="stdio: ask the real server (-- CMD ARGS...) what the capture cannot answer, "
              "and add those exchanges to CAPTURE as a new session.")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD [ARGS]...]")
@click.pass_context
def command(ctx: click.Context, capture: str, listen: str | None, allow_remote: bool, strict: bool, latency: str,
            speed: float | None, ignore: tuple[str, ...], output: str | None, unscrubbed_output: bool, quiet: bool, extend: bool,
            cmd: tuple[str, ...]) -> None:
    """Serve CAPTURE's recorded server answers over stdio (or HTTP with --listen)."""
    refuse_input_as_output([capture], output)
    if capture == "-" and listen is None:
        usage("serve over stdio reads the client's messages on standard input: give the capture as a file (or serve with --listen)")
    if bool(cmd) != extend or (extend and listen is not None):
        usage("--extend needs the real server as -- CMD ARGS... (stdio only), and CMD needs --extend")
    if extend and nameless(capture):
        # its episode is written beside CAPTURE and merged into it: a pipe has no such place
        # (and opening it again to hold it waited for a writer forever)
        usage(f"--extend adds a session to CAPTURE: give it as a file, not {'standard input' if capture == '-' else 'a pipe or descriptor'}")
    if capture != "-":
        # what a killed serve --extend left beside it (a merge file, a session file): the pid is gone
        remove_leftovers(*os.path.split(os.path.abspath(capture)))
    try:
        script = load_script(capture)
        core = ServeCore(script, strict=strict, latency=latency == "recorded" or speed is not None,
                         speed=speed or 1.0, masker=Masker(ignore), prepare=live_redaction(script, _say), say=_say)
        scrub = output_scrub(script, unscrubbed_output, _say) if output is not None else None
    except (McptapError, ValueError) as exc:
        _say(str(exc))
        ctx.exit(2)
    if listen is not None:
        ctx.exit(run_http(core, capture, listen, allow_remote=allow_remote, output=output, quiet=quiet, scrub=scrub))
    scrubbers: list[Any] = []
    kept: int | None = None
    hold_fd = -1
    episode = output
    try:
        if extend:
            scrubbers = extend_scrubbers(script, capture)
            if script.header.get("transport", "stdio") != "stdio":
                raise McptapError(f"cannot extend {escape_name(capture)}: only stdio captures can be extended")
            hold_fd = _hold(capture)
            if output is None:
                episode, kept = _episode_file(capture)
        # an -o file is scrubbed as written; the merge scrubs the episode again, which changes nothing
        rec = _recorder(episode, "stdio", capture, {"served_from": capture}, scrub if episode == output else None)
        if rec is not None and rec.writer is not None and cmd:
            _hide_argv_secrets(rec, list(cmd))
    except (McptapError, OSError) as exc:
        _say(str(exc))
        ctx.exit(2)
    from mcptap.serve.stdio import StdioServer

    # the stop signals end the session (the server's receiver while trio runs); they are latched
    # from before trio starts to after the capture is finished, so none is lost in between (nor a
    # SIGTERM held since mcptap started). SIGUSR1/SIGUSR2/SIGALRM go on to --extend's real server,
    # and are ignored without one: their default action would leave the -o capture without its end
    latch = SignalLatch(FORWARDED_SIGNALS if extend else STOP_SIGNALS, ignoring=() if extend else PASSED_ON_SIGNALS).install()
    server = StdioServer(core, rec, fallback=list(cmd) or None, early=latch)
    try:
        result = trio.run(server.run)
    except BaseException as exc:
        if not interrupted(exc):
            latch.restore()
            raise
        # Ctrl-C outside the server's receiver (as trio starts or ends): the session ends here
        # all the same, and what the real server answered is merged as below
        result = server.result
        result.signal = signal.SIGINT
    # SIGTERM (a host stopping its server: the SDK's stdio client does 2 s after closing stdin)
    # and Ctrl-C end the session as stdin EOF does, and the exchanges made so far are kept
    status = 128 + result.signal if result.signal else 0
    with closing_phase() as signalled:
        late = [s for s in latch.take() if s in STOP_SIGNALS]      # after the server's receiver was gone
        if late and not status:
            status = 128 + late[0]
        if rec is not None:
            rec.close(exit_code=status)
        if extend and episode is not None:
            if not _extend(capture, episode, result, quiet, scrubbers, hold_fd):
                status = status or 1
            os.close(hold_fd)
            if kept is not None:
                os.close(kept)
            elif output is None:
                os.unlink(episode)
    late = [s for s in latch.take() if s in STOP_SIGNALS]          # SIGQUIT: closing_phase holds the others
    latch.restore()
    if (signalled or late) and not status:
        status = 128 + (signalled or late)[0]
    if not quiet and result.unanswered:
        _say(unanswered_line(result.unanswered))
    if result.signal == signal.SIGINT:
        _say("interrupted")
    sys.stdout.flush()
    ctx.exit(status)


__all__ = ["command", "load_script"]
