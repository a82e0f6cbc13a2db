"""``mcptap ls [--dir DIR] [--format text|json]``: the captures in the
capture directory, newest first, one line each.

Text columns: start time (UTC), server name, transport, protocol revision,
messages, findings by severity (``2E 1W 3I``; ``-`` for none; LIVE-FINDINGS: the counts
the live recorder wrote in the end record, without the schema shape checks (``shape.*``)
that ``mcptap check``, the full judgement, adds: docs/capture-format.md, end), status
(``complete``, ``incomplete``: it has its end record but part of the traffic is not in it:
recording stopped or failed before it (an internal error, a full disk) or ``gap`` records
say what was not recorded (the relay's spill file at its bound), each ``capture.gap`` error
``check`` reports for that counted, ``truncated``: no end record and its mcptap is gone,
``recording``: still being written; ``damaged``: its header line is cut (a
``.jsonl.gz`` cut short); ``format version N not supported``: a newer mcptap's;
``empty``: a file named as mcptap names captures, with no byte; ``no traffic`` when a complete capture
holds no message, e.g. the server failed to start: such captures and empty ones are listed
only with ``--all``, and a line on stderr says how many were left out), size, path. JSON: one
object per line (``mcptap.catalog.CaptureInfo.as_json``). Only each file's
header, end record and first 64 KiB are read. A spill file whose capture is
gone (deleted by hand) and that no tap uses gets a line on stderr
(``prune`` removes it). Peer-controlled text (names,
paths, revisions) never reaches the terminal with its control characters.

Exit status: 0 (an empty or missing directory lists nothing); 2 when DIR is
not a directory.
"""

from __future__ import annotations

import os

import click
import orjson

from mcptap.catalog import EMPTY, UNSUPPORTED, CaptureInfo, scan
from mcptap.cli import options
from mcptap.cli.errors import Fail
from mcptap.escape import escape_controls, escape_name
from mcptap.liveness import orphan_spills, remove_leftovers
from mcptap.paths import capture_dir

_SEV = (("error", "E"), ("warn", "W"), ("info", "I"))


def printable(text: str) -> str:
    """``text`` safe for a terminal (mcptap/escape.py: controls and bidi
    formatting characters become visible escapes)."""
    return escape_controls(text)


def human_size(n: int) -> str:
    """Bytes as ``512B``, ``12.3K``, ``4.0M``, ``1.2G`` (powers of 1024)."""
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{int(size)}B" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{size:.1f}T"  # pragma: no cover


def _started(s: str) -> str:
    # 2026-12-01T01:02:03.123456Z -> 2026-12-01 01:02:03Z
    if len(s) >= 19 and s[10] == "T":
        return f"{s[:10]} {s[11:19]}Z"
    return s


def _findings(info: CaptureInfo) -> str:
    parts = [f"{info.severities[k]}{letter}" for k, letter in _SEV if info.severities.get(k)]
    if info.messages is None and not parts:
        return "?"
    return " ".join(parts) or "-"


def _status(info: CaptureInfo) -> str:
    if info.status == UNSUPPORTED:
        return f"format version {info.version} not supported"      # as `check` says it
    status = f"{info.status}, extending" if info.extending else info.status
    return f"{status}, no traffic" if info.no_traffic and info.status != EMPTY else status


def text_lines(infos: list[CaptureInfo]) -> list[str]:
    """The table (header line first) for ``infos`` in the given order."""
    rows = [("STARTED", "NAME", "TRANSPORT", "REVISION", "MSGS", "LIVE-FINDINGS", "STATUS", "SIZE", "PATH")]
    for i in infos:
        rows.append((
            printable(_started(i.started)), printable(i.name), printable(i.transport), printable(i.revision or "-"),
            "?" if i.messages is None else str(i.messages), _findings(i), _status(i), human_size(i.size), escape_name(i.path),
        ))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    right = {4, 7}
    out = []
    for r in rows:
        cells = [r[c].rjust(widths[c]) if c in right else r[c].ljust(widths[c]) for c in range(len(widths))]
        out.append("  ".join(cells + [r[-1]]))
    return out


@click.command("ls", epilog=options.example('mcptap ls', 'mcptap ls --format json'), short_help="List the captures in the capture directory, newest first.")
@click.option("--dir", "directory", type=options.NonEmptyPath(directory=True), default=None,
              help="Capture directory (default: MCPTAP_DIR or the user data directory).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: an aligned table; json: one JSON object per capture and line.")
@click.option("-a", "--all", "show_all", is_flag=True,
              help="Also list captures with no traffic (commands that failed before any message).")
def command(directory: str | None, fmt: str, show_all: bool) -> None:
    """List captures newest first: start time, server name, transport,
    protocol revision, messages, findings by severity, status, size, path.

    The findings are the live recorder's counts from each end record
    (LIVE-FINDINGS), without the schema shape checks (shape.*) that `mcptap check`,
    the full judgement, adds: check may report more warnings."""
    where = captures_dir(directory)
    remove_leftovers(where)        # left by a killed mcptap (kill -9): never listed, never kept
    infos = scan_dir(where)
    for path in orphan_spills(where, [i.named_spill for i in infos if i.named_spill]):
        # what a killed tap set aside for a capture deleted since: `recover` has nothing to add it to
        click.echo(f"mcptap: {escape_name(path)}: a spill file whose capture is gone (`mcptap prune` removes it)", err=True)
    hidden = 0
    if not show_all:
        shown = [i for i in infos if not i.no_traffic]
        hidden, infos = len(infos) - len(shown), shown
        if hidden:
            click.echo(f"mcptap: {hidden} capture(s) with no traffic not listed (--all lists them)", err=True)
    if fmt == "json":
        for info in infos:
            click.echo(orjson.dumps(info.as_json()).decode())
        return
    if not infos:
        if not hidden:
            click.echo(f"mcptap: no captures in {escape_name(where)}", err=True)
        return
    for line in text_lines(infos):
        click.echo(line)
    unframed = sum(i.unframed for i in infos)
    if unframed:
        click.echo(f"mcptap: ? for {unframed} capture(s) stored partly unframed while analysis was behind: "
                   "`mcptap check` counts their messages and findings", err=True)


def captures_dir(directory: str | None) -> str:
    """The captures directory ``--dir`` names (None: the default one, which may
    not exist yet). Raises click.UsageError for a path that is no directory, or
    a ``--dir`` that does not exist (a mistyped --dir is not an empty one)."""
    where = directory if directory is not None else str(capture_dir())
    if os.path.exists(where) and not os.path.isdir(where):
        raise click.UsageError(f"{escape_name(where)}: not a directory")
    if directory is not None and not os.path.lexists(where):
        raise click.UsageError(f"{escape_name(where)}: no such directory")
    return where


def scan_dir(where: str) -> list[CaptureInfo]:
    """``catalog.scan(where)``; raises Fail when the directory cannot be read
    (a symbolic link loop, a path through a file, no permission)."""
    try:
        return scan(where)
    except OSError as exc:
        raise Fail(f"cannot read {escape_name(where)}: {exc.strerror or exc}") from None
