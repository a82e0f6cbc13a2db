"""How ``mcptap replay`` reaches the server and keeps secrets out (cli/replay.py).

* :func:`_link` — the link to the server (stdio: a process per recorded session;
  ``--url``: Streamable HTTP, or legacy HTTP+SSE for a capture of it), its
  recorder of the new capture and the secrets of its command line or URL;
* :func:`_known` — those secrets, replaced wherever they reappear in the new capture;
* :func:`_live_redaction` — for a scrubbed capture, the redaction of live
  requests and answers and the new capture's scrub (raises McptapError when the
  capture's passes cannot be redone, unless ``--unscrubbed-output``; RedactionError
  when the user's key is unusable);
* :func:`_url_name` — the server name of a new capture of ``--url``;
* :func:`_headers` — ``-H 'Name: value'`` options as pairs (raises click.BadParameter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import click

from mcptap.cli.errors import say as _say
from mcptap.known_secrets import KnownSecrets, known_secrets
from mcptap.recorder import Recorder
from mcptap.redact import placeholder, scrub_argv, scrub_command_url
from mcptap.redact.headers import is_secret_header, redact_header
from mcptap.replay.plan import Plan
from mcptap.replay.runner import StdioLink


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
    from mcptap.redact.live import message_redaction, output_redactors, params_redaction
    from mcptap.redact.scrub import record_scrub

    redactors = output_redactors(plan.header, existing_keyer(), unscrubbed,
                                 "the new capture would hold the live server's secrets in clear, so replay stops", _say)
    if redactors is None:
        return None, None, None
    return params_redaction(redactors), message_redaction(redactors), record_scrub(redactors)


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
