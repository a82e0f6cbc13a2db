"""``mcptap replay CAPTURE (-- CMD… | --url URL) [-o NEW] [--allow-side-effects] [--ignore PATH]…``

Play the client side of CAPTURE against a (new build of a) server and report,
exchange by exchange, what changed (see mcptap/replay/*). The new session is
recorded as a normal capture (``-o``, default: the capture directory); that of
a scrubbed CAPTURE is scrubbed with its rules and the user's key, or replay
refuses (exit 2) unless ``--unscrubbed-output``.

Exit status: 0 every replayed exchange matches (skipped ones aside), 1
something changed (a result, an error, a missing or new exchange, an
error-severity protocol finding in the live session that the recorded one did
not have), 2 mcptap could not replay (unreadable capture, server cannot be
started or reached).
"""

from __future__ import annotations

import functools
import os
import ssl
import sys
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import click
import trio

from mcptap.capture.dumps import dumps
from mcptap.capture.writer import CaptureWriter
from mcptap.cli import options
from mcptap.cli.errors import interrupted
from mcptap.cli.output import Style, refuse_input_as_output, styler
from mcptap.cli.progress import progress
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.compare.mask import Masker
from mcptap.compare.verdict import CHANGED, ERROR_CHANGED, MATCH, MISSING, NEW, SKIPPED, describe_verdict
from mcptap.diff.surface import SURFACE_METHODS, Surface, compare_surface
from mcptap.errors import McptapError
from mcptap.escape import escape_controls as esc
from mcptap.escape import shown
from mcptap.known_secrets import KnownSecrets, known_secrets
from mcptap.paths import default_capture_path
from mcptap.recorder import Recorder
from mcptap.redact import placeholder, scrub_argv, scrub_command_url
from mcptap.redact.headers import is_secret_header, redact_header
from mcptap.replay.compare import ExchangeResult, compare_replay
from mcptap.replay.findings import errors_of, new_errors, plan_and_errors
from mcptap.replay.plan import Plan
from mcptap.replay.runner import Replayer, ReplayResult, StdioLink


def _say(line: str) -> None:
    click.echo(f"mcptap: {esc(line)}", err=True)


def surface_of(plan: Plan, responses: dict[int, Any] | None) -> Surface:
    """The server surface seen in the original session (``responses`` None)
    or in the live one (step index -> live response)."""
    s = Surface()
    for step in plan.steps:
        if step.method not in SURFACE_METHODS:
            continue
        resp = step.response if responses is None else responses.get(step.index)
        if isinstance(resp, dict) and isinstance(resp.get("result"), dict):
            s.feed(step.method, step.params, resp["result"])
    s.note_revision(plan.revision)
    return s


def _ms(us: int | None) -> str:
    return "-" if us is None else f"{us / 1000:.1f} ms"


def _line(r: ExchangeResult, style: Style | None = None) -> str:
    where = f"#{r.seq}" if r.seq is not None else "new"
    text = f"  {where:>7}  {r.label[:44]:<44}  {r.status:<13}"
    detail = ""
    if r.verdict is not None and r.verdict.paths and r.status in (CHANGED, ERROR_CHANGED):
        detail = describe_verdict(r.verdict)       # as diff prints the same change
    elif r.note:
        detail = r.note
    elif r.status == MATCH and r.latency_b_us is not None:
        detail = f"{_ms(r.latency_b_us)} (was {_ms(r.latency_a_us)})"
    line = shown(f"{text}  {detail}".rstrip())
    return style(line, r.status) if style is not None else line


def _part(plan: Plan, r: ExchangeResult) -> int | None:
    return plan.steps[r.step].part if r.step is not None else None


def by_session(plan: Plan, rows: list[ExchangeResult]) -> list[ExchangeResult]:
    """``rows`` grouped by recorded session (recorded order within each;
    server requests, which belong to no step, last)."""
    def key(r: ExchangeResult) -> int:
        part = _part(plan, r)
        return len(plan.sessions) if part is None else part

    return sorted(rows, key=key)


def _counts(rows: list[ExchangeResult]) -> dict[str, int]:
    counts = {k: 0 for k in (MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW, SKIPPED)}
    for r in rows:
        counts[r.status] += 1
    return counts


def report_json(result: ReplayResult, rows: list[ExchangeResult], surface_items: list[Any], capture: str | None,
                fresh: Sequence[tuple[str, int]] = ()) -> dict[str, Any]:
    plan = result.plan
    exchanges = []
    for r in rows:
        d = r.to_json()
        if len(plan.sessions) > 1 and _part(plan, r) is not None:
            d["session"] = _part(plan, r)
        exchanges.append(d)
    out = {"capture": capture, "era": plan.era, "revision": plan.revision, "counts": _counts(rows),
           "duration_s": round(result.duration_s, 6), "original_duration_s": plan.duration_us / 1e6,
           "server_exit": result.exit_code, "error": result.error,
           "exchanges": exchanges, "surface": [it.to_json() for it in surface_items],
           "new_errors": [{"code": code, "count": n} for code, n in fresh]}
    if len(plan.sessions) > 1:
        out["sessions"] = [{"index": i, "recorded": key, "counts": _counts([r for r in rows if _part(plan, r) == i])}
                           for i, key in enumerate(plan.sessions)]
    return out


def _link(plan: Plan, url: str | None, cmd: tuple[str, ...], rec_for: Any, grace: float,
          headers: list[tuple[str, str]], timeout: float,
          cacert: str | None = None) -> tuple[Any, Recorder, Callable[[int], Any] | None, KnownSecrets | None]:
    """The link, its recorder, (stdio, several recorded sessions) a maker
    of fresh links: one server process per recorded session, and the secrets of
    ``cmd``, or of ``url`` and the credential ``headers`` (``_known``). ``--url``: the capture's own HTTP
    transport (legacy HTTP+SSE when it has an endpoint event)."""
    if url:
        shown_url = scrub_command_url(url)
        rec = rec_for("http", {"url": shown_url})
        # a --header credential is recorded as its placeholder: a server that repeats it (a whoami
        # answer, an error) gets the same one
        creds = [(v, redact_header(n.lower(), v)) for n, v in headers if is_secret_header(n)]
        known = _known(rec, [url, *(v for v, _ in creds)], [shown_url, *(s for _, s in creds)], stdio=False)
        if plan.legacy_sse:
            from mcptap.replay.sse_link import SseLink

            return SseLink(url, rec, extra_headers=headers, endpoint_timeout=timeout, cacert=cacert), rec, None, known
        from mcptap.replay.http_client import HttpLink

        return HttpLink(url, rec, extra_headers=headers, tools=plan.tools, listen=plan.http_get, cacert=cacert), rec, None, known
    shown = scrub_argv(list(cmd))
    from mcptap.transport.stdio_os import server_cwd

    target: dict[str, Any] = {"argv": shown}
    cwd = server_cwd()
    if cwd is not None:
        target["cwd"] = cwd         # as record's: where the server's relative paths point
    rec = rec_for("stdio", target)
    known = _known(rec, list(cmd), shown, stdio=True)

    def new_link(i: int) -> StdioLink:
        rec.segment(f"replay-session-{i + 1}")
        return StdioLink(list(cmd), rec, grace=grace, shown_argv=shown)

    return StdioLink(list(cmd), rec, grace=grace, shown_argv=shown), rec, new_link if len(plan.sessions) > 1 else None, known


def _known(rec: Recorder, given: list[str], shown: list[str], stdio: bool) -> KnownSecrets | None:
    """As ``record`` does: the secrets the shown argv or URL lacks, replaced wherever they
    reappear in the new capture (a server that echoes its argv on stderr or its key in an
    answer); returned for the report. None: there are none."""
    known = known_secrets(given, shown, placeholder, stdio=stdio)
    if known is not None and rec.writer is not None:
        rec.writer.line_filter = known.line
        rec.known = known if stdio else None
    return known


def _status(replayer: Replayer) -> str:
    """The progress text of a running replay (read from the progress thread:
    a copy of the live steps, never the dict being filled)."""
    live = list(replayer.result.live.values())
    answered = sum(1 for lv in live if lv.done.is_set())
    total = sum(1 for step in replayer.plan.steps if step.kind in ("request", "batch"))
    return f"{len(live)} of {total} requests sent, {answered} answered"


def _live_redaction(plan: Plan, unscrubbed: bool) -> tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None,
                                                       Callable[[dict[str, Any]], dict[str, Any]] | None]:
    """A scrubbed capture: functions that redact the live server's request params and live
    messages as the capture's were (redact/live.py), so they match the recorded placeholders,
    and the new capture's record transform: scrubbed with the same rules and key, so it holds
    no live secret either (and ``diff`` of the two compares placeholders); (None, None, None)
    for a capture in clear. Raises McptapError when the capture's passes cannot be redone
    (no key, another key: the new capture would hold the live secrets in clear) unless
    ``unscrubbed`` (``--unscrubbed-output``: then said once), and RedactionError when the
    user's key is there but unusable (keyfile.existing_keyer)."""
    if not plan.header.get("scrubbed"):
        return None, None, None
    from mcptap.redact.keyfile import existing_keyer
    from mcptap.redact.live import live_redactors, message_redaction, params_redaction
    from mcptap.redact.scrub import Scrubber

    keyer = existing_keyer()
    redactors, why = live_redactors(plan.header, keyer)
    if redactors is None:
        why = why or "the capture's scrub passes cannot be redone"
        if not unscrubbed:
            raise McptapError(f"{why}; the new capture would hold the live server's secrets in clear, so replay stops "
                              "(--unscrubbed-output: write it unscrubbed all the same)")
        _say(why)
        return None, None, None
    passes = [Scrubber(r) for r in redactors]

    def scrub(rec: dict[str, Any]) -> dict[str, Any]:
        for p in passes:                # each pass in order: the new header lists them as the capture's does
            rec = p.transform(rec)
        return rec

    return params_redaction(redactors), message_redaction(redactors), scrub


def _url_name(url: str) -> str:
    """The server name of a new capture of ``--url URL`` (``http-HOST-PORT``, as the HTTP
    tap names its captures): never the URL's user info, path or query (tokens go there)."""
    try:
        u = urlsplit(url)
        return f"http-{u.hostname or 'server'}-{u.port or (443 if u.scheme == 'https' else 80)}"
    except ValueError:
        return "http"


def _headers(items: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for h in items:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"{h!r} is not 'Name: value'", param_hint="--header")
        out.append((name.strip(), value.strip()))
    return out


@click.command("replay", epilog=options.example('mcptap replay cap.jsonl -- python server.py',
                                                'mcptap replay cap.jsonl --url http://127.0.0.1:8000/mcp --ignore result.structuredContent.now'),
               cls=options.TrailingCommand, leading=1,
               short_help="Replay a capture's client side against a server; report what changed.")
@click.argument("capture", type=options.NonEmptyPath(dir_okay=False))
@click.option("--url", default=None, help="HTTP endpoint of the server (instead of -- CMD): Streamable HTTP, or for a capture "
              "of the legacy HTTP+SSE transport its event stream URL (the SDK's /sse).")
@click.option("-o", "--output", type=options.NonEmptyPath(dir_okay=False), default=None,
              help="Capture file for the new session (default: the capture directory).")
@click.option("--allow-side-effects", is_flag=True,
              help="Also call tools not declared readOnlyHint: true (or declared destructiveHint: true).")
@options.ignore("Also ignore this JSON path when comparing (repeatable).")
@click.option("--timeout", type=click.FloatRange(min=0.01), default=30.0, show_default=True,
              help="Seconds to wait for one answer.")
@click.option("--grace", type=click.FloatRange(min=0), default=2.0, show_default=True,
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
        _say("give exactly one server: -- CMD ARGS... or --url URL")
        ctx.exit(2)
    refuse_input_as_output([capture], output)
    extra_headers = _headers(headers)
    if url and not url.startswith(("http://", "https://")):
        _say(f"--url {scrub_command_url(url)!r}: expected an http:// or https:// URL")
        ctx.exit(2)
    if cacert is not None:
        if not (url or "").startswith("https://"):
            _say("--cacert needs an https:// --url")
            ctx.exit(2)
        try:
            ssl.create_default_context(cafile=cacert)
        except (OSError, ssl.SSLError) as exc:
            _say(f"cannot load --cacert {cacert}: {exc}")
            ctx.exit(2)
    try:
        masker = Masker(ignore)
        with progress("replay", [capture]):
            plan, recorded_errors = plan_and_errors(capture, allow_side_effects=allow_side_effects, masker=masker)
    except (McptapError, ValueError) as exc:
        _say(str(exc))
        ctx.exit(2)
    if not plan.steps:
        _say(f"{capture}: no client messages to replay")
        ctx.exit(2)
    try:
        prepare, redact_message, scrub = _live_redaction(plan, unscrubbed_output)
    except McptapError as exc:          # no key, another key, or one that cannot be used: before any capture exists
        _say(str(exc))
        ctx.exit(2)
    try:
        path = str(output or default_capture_path(list(cmd) or [_url_name(url or "")]))
        if os.path.exists(path) and not os.path.isfile(path):
            raise McptapError(f"{path}: not a regular file")
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
    try:
        with progress("replay", status=functools.partial(_status, replayer)):
            result = trio.run(replayer.run)
    except BaseException as exc:
        if not interrupted(exc):
            raise
        # Ctrl-C: trio has stopped the server; the new capture still gets its end record
        rec.close(exit_code=None, replay_error="interrupted (SIGINT)")
        _say(f"interrupted; the new capture so far: {path}")
        ctx.exit(130)
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
    items = compare_surface(surface_of(plan, None), surface_of(plan, responses))
    try:
        # protocol errors the live server made that the recorded one did not (a doubled answer…): a regression too
        live_errors = errors_of(path)
        # a request lost on a kept-alive connection the server closed, sent again by the link: recovered, not a regression
        lost = "http.request_lost_on_closed_connection"
        live_errors[lost] = max(0, live_errors[lost] - getattr(link, "retried", 0))
        fresh = new_errors(recorded_errors, live_errors)
    except McptapError as exc:
        _say(f"cannot read the new capture back for its findings: {exc}")
        ctx.exit(2)
    changed = any(r.status not in (MATCH, SKIPPED) for r in rows) or bool(fresh)
    if fmt == "json":
        sys.stdout.buffer.write(dumps(report_json(result, rows, items, path, fresh), indent=True, newline=True))
    else:
        style = styler(color)
        target = scrub_command_url(url) if url else " ".join(scrub_argv(list(cmd)))
        era = {"legacy": "initialize handshake", "modern": "stateless"}.get(plan.era or "", "no handshake seen")   # not the transport's era
        click.echo(esc(f"replay of {capture} against {target} ({era}, {plan.revision or '?'})"))
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
        if fresh:
            click.echo("findings new in the live session:")
            for code, n in fresh:
                text = f"  ! {shown(code)}: {n} (error; mcptap check {esc(path)})"
                click.echo(style(text, "error") if style is not None else text, color=True)
        counts = _counts(rows)
        click.echo(", ".join(f"{n} {k.lower()}" for k, n in counts.items() if n or k == MATCH)
                   + f" ({result.duration_s:.2f} s; original {plan.duration_us / 1e6:.2f} s)")
        if result.exit_code:
            # a server that died says why on stderr: that is in the new capture
            click.echo(f"server exited with status {result.exit_code} (its stderr is in the new capture: mcptap show {esc(path)})")
        click.echo(esc(f"new capture: {path}"))
    if writer.failed is not None:
        # the comparison stands, but the new capture is not whole: say so, and fail
        _say(f"new capture incomplete ({writer.failed}; {writer.dropped} records lost): {path}")
        ctx.exit(2)
    ctx.exit(1 if changed else 0)
