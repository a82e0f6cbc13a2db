"""``mcptap replay CAPTURE (-- CMD… | --url URL) [-o NEW] [--allow-side-effects] [--ignore PATH]…``

Play the client side of CAPTURE against a (new build of a) server and report,
exchange by exchange, what changed (see mcptap/replay/*). The new session is
recorded as a normal capture (``-o``, default: the capture directory); that of
a scrubbed CAPTURE is scrubbed with its rules and the user's key, or replay
refuses (exit 2) unless ``--unscrubbed-output``.

Exit status: 0 every replayed exchange matches (skipped ones aside), 1
something changed (a result, an error, a missing or new exchange, an
error-severity protocol finding in the live session that the recorded one did
not have, a server notification method one session sent and the other never did), 2 mcptap could not replay (unreadable capture, server cannot be
started or reached), 128+N when signal N (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
stopped it: the new capture is finished, a stdio server got the signal first
(replay/stop.py). SIGUSR1, SIGUSR2 and SIGALRM change nothing: passed on to a
stdio server, ignored over HTTP.
"""

from __future__ import annotations

import functools
import os
import ssl
import sys
from collections import Counter
from typing import Any

import click
import trio

from mcptap.capture.dumps import dumps
from mcptap.capture.writer import CaptureWriter
from mcptap.cli import options
from mcptap.cli.errors import interrupted, usage
from mcptap.cli.output import refuse_input_as_output, styler
from mcptap.cli.progress import progress
from mcptap.cli.replay_link import _headers, _link, _live_redaction, _url_name
from mcptap.cli.replay_report import _counts, _line, _part, by_session, report_json, surface_of
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.compare.mask import Masker
from mcptap.compare.verdict import MATCH, SKIPPED
from mcptap.diff.surface import compare_surface
from mcptap.errors import McptapError
from mcptap.escape import escape_name, shown
from mcptap.escape import escape_os as esc
from mcptap.paths import default_capture_path
from mcptap.recorder import Recorder
from mcptap.redact import scrub_argv, scrub_command_url
from mcptap.replay.compare import compare_replay
from mcptap.replay.findings import errors_of, new_errors, notification_changes, plan_and_errors
from mcptap.replay.runner import Replayer
from mcptap.replay.stop import latch_for, late_stop, watch
from mcptap.transport.stdio_os import signame


def _say(line: str) -> None:
    click.echo(f"mcptap: {esc(line)}", err=True)


def _redacted(text: str, known: Any, redact_message: Any) -> str:
    """``text`` (a note or error quoting the live server, already through
    ``replay/peer_text.said``) with the secrets of the command line or URL (``known``)
    and, for a scrubbed capture, its own rules (``redact_message``) applied, as to
    the live answers."""
    if known is not None:
        text = known.value(text)
    if redact_message is not None:
        text = redact_message(text)
    return text


def _status(replayer: Replayer) -> str:
    """The progress text of a running replay (read from the progress thread:
    a copy of the live steps, never the dict being filled)."""
    live = list(replayer.result.live.values())
    answered = sum(1 for lv in live if lv.done.is_set())
    total = sum(1 for step in replayer.plan.steps if step.kind in ("request", "batch"))
    return f"{len(live)} of {total} requests sent, {answered} answered"


@click.command("replay", epilog=options.example('mcptap replay cap.jsonl -- python server.py',
                                                'mcptap replay cap.jsonl --url http://127.0.0.1:8000/mcp --ignore result.structuredContent.now'),
               cls=options.TrailingCommand, leading=1,
               short_help="Replay a capture's client side against a server; report what changed.")
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False))
@click.option("--url", default=None, help="HTTP endpoint of the server (instead of -- CMD): Streamable HTTP, or for a capture "
              "of the legacy HTTP+SSE transport its event stream URL (the SDK's /sse).")
@click.option("-o", "--output", default=None,
              type=options.NonEmptyPath(dir_okay=False, no_dash="standard output carries the verdict"),
              help="Capture file for the new session (default: the capture directory).")
@click.option("--allow-side-effects", is_flag=True,
              help="Also call tools not declared readOnlyHint: true (or declared destructiveHint: true).")
@options.ignore("Also ignore this JSON path when comparing (repeatable).")
@click.option("--timeout", type=options.Finite(min=0.01), default=30.0, show_default=True,
              help="Seconds to wait for one answer.")
@click.option("--grace", type=options.Finite(min=0), default=2.0, show_default=True,
              help="stdio: seconds between closing stdin, SIGTERM and SIGKILL at the end.")
@click.option("-H", "--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="HTTP: extra request header (repeatable).")
@click.option("--cacert", type=options.NonEmptyPath(dir_okay=False, exists=True), default=None,
              help="PEM CA bundle for an https --url (default: the system trust store).")
@click.option("--unscrubbed-output", is_flag=True,
              help="A scrubbed CAPTURE whose redaction key you do not have: write the new capture all the same, "
                   "with the live secrets in clear (default: refuse; with the key it is scrubbed as CAPTURE was).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@options.color
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD [ARGS]...]")
@click.pass_context
def command(ctx: click.Context, capture: str, url: str | None, output: str | None, allow_side_effects: bool,
            ignore: tuple[str, ...], timeout: float, grace: float, headers: tuple[str, ...], cacert: str | None,
            unscrubbed_output: bool, fmt: str, color: bool | None, cmd: tuple[str, ...]) -> None:
    """Replay CAPTURE against `-- CMD ARGS...` (stdio) or `--url URL` (Streamable HTTP or legacy HTTP+SSE)."""
    options.refuse_text_only(ctx, fmt, "color")
    if bool(url) == bool(cmd):
        usage("give exactly one server: -- CMD ARGS... or --url URL")
    refuse_input_as_output([capture], output)
    extra_headers = _headers(headers)
    if url and not url.startswith(("http://", "https://")):
        usage(f"--url {scrub_command_url(url)!r}: expected an http:// or https:// URL")
    if cacert is not None:
        if not (url or "").startswith("https://"):
            usage("--cacert needs an https:// --url")
        try:
            ssl.create_default_context(cafile=cacert)
        except (OSError, ssl.SSLError) as exc:
            usage(f"cannot load --cacert {escape_name(cacert)}: {exc}")
    try:
        masker = Masker(ignore)
        with progress("replay", [capture], stdout_after=True):
            plan, recorded_errors = plan_and_errors(capture, allow_side_effects=allow_side_effects, masker=masker)
    except (McptapError, ValueError) as exc:
        _say(str(exc))
        ctx.exit(2)
    if not plan.steps:
        _say(f"{escape_name(capture)}: no client messages to replay")
        ctx.exit(2)
    try:
        prepare, redact_message, scrub = _live_redaction(plan, unscrubbed_output)
    except McptapError as exc:          # no key, another key, or one that cannot be used: before any capture exists
        _say(str(exc))
        ctx.exit(2)
    # from before the new capture exists to the end: a host's signals stop the replay and the
    # capture is finished (replay/stop.py); SIGUSR1/SIGUSR2/SIGALRM go on to a stdio server
    latch = latch_for(stdio=not url).install()
    ctx.call_on_close(latch.restore)
    try:
        path = str(output or default_capture_path(list(cmd) or [_url_name(url or "")]))
        if os.path.exists(path) and not os.path.isfile(path):
            raise McptapError(f"{escape_name(path)}: not a regular file")
        writer = CaptureWriter.open(path)
    except (McptapError, OSError) as exc:
        _say(f"cannot create the new capture: {exc}")
        ctx.exit(2)
    writer.transform = scrub            # a scrubbed capture's replay is scrubbed as it was (header.scrubbed the same)

    def rec_for(transport: str, target: dict[str, Any]) -> Recorder:
        try:
            return Recorder(writer, transport, target=target, clock=monotonic_us_clock(), started=utc_timestamp(), header_extra={"replay_of": capture})
        except McptapError as exc:
            writer.discard()        # the header did not fit (disk full): nothing readable to keep
            _say(f"cannot create the new capture: {exc}")
            ctx.exit(2)

    link, rec, new_link, known = _link(plan, url, cmd, rec_for, grace, extra_headers, timeout, cacert)
    replayer = Replayer(plan, link, timeout=timeout, new_link=new_link, prepare=prepare)

    async def watched() -> Any:
        async with trio.open_nursery() as nursery:
            await nursery.start(watch, replayer, latch)
            got = await replayer.run()
            nursery.cancel_scope.cancel()
        return got

    try:
        with progress("replay", status=functools.partial(_status, replayer), stdout_after=True):
            result = trio.run(watched)
    except BaseException as exc:
        if not interrupted(exc):
            raise
        # Ctrl-C outside the latch (not expected): trio has stopped the server; the new capture still gets its end record
        rec.close(exit_code=None, replay_error="interrupted (SIGINT)")
        _say(f"interrupted; the new capture so far: {escape_name(path)}")
        ctx.exit(130)
    stopped = replayer.stopped or late_stop(latch)
    if stopped:
        # a host's stop signal: the server was closed as at the end; the capture gets its end record
        rec.close(exit_code=result.exit_code, replay_error=f"interrupted ({signame(stopped)})")
        _say(f"interrupted ({signame(stopped)}); the new capture so far: {escape_name(path)}")
        ctx.exit(128 + stopped)
    # replay's own words quoting the live server (notes, an error) get the redaction its answers get below
    result.notes = {i: _redacted(n, known, redact_message) for i, n in result.notes.items()}
    result.error = _redacted(result.error, known, redact_message) if result.error else result.error
    extra: dict[str, Any] = {"replay_error": result.error} if result.error else {}
    rec.close(exit_code=result.exit_code, **extra)
    if result.error:
        _say(result.error)
        ctx.exit(2)
    for lv in result.live.values():
        if lv.response is not None and known is not None:
            # as the new capture holds them (and as a capture of the same command line held them)
            lv.response = known.value(lv.response)
        if lv.response is not None and redact_message is not None:
            # a scrubbed capture: live answers compared (and shown) as the capture holds them
            lv.response = redact_message(lv.response)
    responses = result.responses()
    rows = by_session(plan, compare_replay(plan, result.live, result.server_requests, result.notes, masker))
    items = compare_surface(surface_of(plan, None, masker), surface_of(plan, responses, masker))
    try:
        # protocol errors the live server made that the recorded one did not (a doubled answer…): a regression too
        live_notes: Counter[tuple[Any, Any]] = Counter()
        live_errors = errors_of(path, live_notes)
        # a request lost on a kept-alive connection the server closed, sent again by the link: recovered, not a regression
        lost = "http.request_lost_on_closed_connection"
        live_errors[lost] = max(0, live_errors[lost] - getattr(link, "retried", 0))
        fresh = new_errors(recorded_errors, live_errors)
        # server notifications the live session never sent, or sent new: a difference, as in diff
        notes = notification_changes(plan, live_notes)
    except McptapError as exc:
        _say(f"cannot read the new capture back for its findings: {exc}")
        ctx.exit(2)
    # a surface difference fails the replay as it fails a diff (both after --ignore)
    changed = any(r.status not in (MATCH, SKIPPED) for r in rows) or bool(fresh) or bool(notes) or bool(items)
    if fmt == "json":
        sys.stdout.buffer.write(dumps(report_json(result, rows, items, path, fresh, notes), indent=True, newline=True))
    else:
        style = styler(color)
        target = scrub_command_url(url) if url else " ".join(scrub_argv(list(cmd)))
        era = {"legacy": "initialize handshake", "modern": "stateless"}.get(plan.era or "", "no handshake seen")   # not the transport's era
        click.echo(esc(f"replay of {escape_name(capture)} against {target} ({era}, {plan.revision or '?'})"))
        shown_part: Any = -1
        for r in rows:
            part = _part(plan, r)
            if len(plan.sessions) > 1 and part != shown_part:
                shown_part = part
                key = plan.sessions[part] if part is not None else None
                head = f"session {part + 1} of {len(plan.sessions)}" + (f" ({key})" if key else "") if part is not None else "server requests"
                click.echo(shown(head + ":"))
            click.echo(_line(r, style), color=True)   # colour already decided
        if items:
            click.echo("surface:")
            for it in items:
                mark = "!" if it.breaking else "~"
                click.echo(f"  {mark} {shown(it.detail)}" + ("  [breaking]" if it.breaking else ""))
        if notes:
            click.echo("notifications:")
            for it in notes:
                click.echo(f"  {'-' if it.kind == 'removed' else '+'} {shown(it.detail)}")
        if fresh:
            click.echo("findings new in the live session:")
            for code, n in fresh:
                text = f"  ! {shown(code)}: {n} (error; mcptap check {esc(path)})"
                click.echo(style(text, "error") if style is not None else text, color=True)
        counts = _counts(rows)
        click.echo(", ".join(f"{n} {k.lower()}" for k, n in counts.items() if n or k == MATCH)
                   + (f", {len(notes)} notification difference(s)" if notes else "")
                   + f" ({result.duration_s:.2f} s; original {plan.duration_us / 1e6:.2f} s)")
        if result.ended_by:
            # its status (128+N) is the signal replay sent it, not a failure of its own
            click.echo(f"server did not exit within {grace:g} s of its stdin closing: ended by replay "
                       f"(signal {result.ended_by}, {signame(result.ended_by)})")
        elif result.exit_code:
            # a server that died says why on stderr: that is in the new capture
            click.echo(f"server exited with status {result.exit_code} (its stderr is in the new capture: mcptap show {esc(path)})")
        click.echo(esc(f"new capture: {escape_name(path)}"))
    if writer.failed is not None:
        # the comparison stands, but the new capture is not whole: say so, and fail
        _say(f"new capture incomplete ({writer.failed}; {writer.dropped} records lost): {escape_name(path)}")
        ctx.exit(2)
    late = late_stop(latch)         # asked to stop while the report was written: it is whole, the status says so
    ctx.exit(128 + late if late else 1 if changed else 0)
