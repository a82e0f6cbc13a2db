"""``mcptap wrap [--host NAME | --config FILE] [--dir DIR] [--keep N] [--http]
[--dry-run] [SERVER]...``: make a host start ``mcptap record`` in front of
its MCP servers.

Every stdio entry (or the named ones) of the host's configuration gets
``"command": "<absolute path of mcptap>"`` and ``"args": ["record", "--dir",
DIR, "--name", SERVER, "--", <original command and args>]``; nothing else in
the file changes (mcptap/hosts/wrap.py). URL entries stay untouched unless
``--http``: then they point at a local tap and mcptap prints the command that
starts it. ``mcptap unwrap`` undoes it byte for byte.

Exit status: 0 (also when everything was already wrapped); 1 when an entry
was refused (args that are not a list of strings; with ``--http``, a URL
with a placeholder the host fills in or not http(s): the other servers are
wrapped and written); 2 for a usage
error, a configuration that does not parse, a server name not in it, a
read-only file — the file is then untouched.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import click

from mcptap.cli import options
from mcptap.cli.errors import Fail, say, usage
from mcptap.cli.hostfiles import ConfigFile, check_writable, config_options, diff, opened, save
from mcptap.cli.ls import printable
from mcptap.escape import escape_name
from mcptap.hosts.errors import ConfigError
from mcptap.hosts.wrap import Outcome, WrapSpec, wrap
from mcptap.paths import capture_dir


def launcher(override: str | None = None) -> tuple[str, ...]:
    """The absolute argv a host runs to start this mcptap: ``override``, else
    the ``mcptap`` script installed beside this interpreter (pip, pipx, uv
    tool), else ``<this python> -m mcptap``. Symlinks are not resolved: a
    virtual environment's interpreter must be called by its own path. Raises
    a usage error when ``override`` is not an executable file (every wrapped server
    would fail to start)."""
    if override is not None:
        path = os.path.abspath(os.path.expanduser(override))
        if not os.path.exists(path):
            usage(f"--mcptap {escape_name(path)}: no such file")
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            usage(f"--mcptap {escape_name(path)}: not an executable file (the host runs it to start each server)")
        return (path,)
    exe = os.path.abspath(sys.executable)
    script = Path(exe).parent / ("mcptap.exe" if sys.platform.startswith("win") else "mcptap")
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    return (exe, "-m", "mcptap")


def edited(cf: ConfigFile, change: Callable[[], Outcome], dry_run: bool) -> Outcome:
    """``change()`` of the host file ``cf`` (wrap's or unwrap's), checked writable and
    reported; raises Fail for a file it cannot read (ConfigError, nesting too deep)."""
    try:
        outcome = change()
    except ConfigError as exc:
        raise Fail(f"{escape_name(cf.path)}: {exc}") from None
    except RecursionError:
        raise Fail(f"{escape_name(cf.path)}: nested too deeply to read") from None
    check_writable(cf, outcome)
    report(outcome, dry_run)
    if not outcome.notes:
        say(f"{escape_name(cf.path)}: no MCP servers in {cf.dialect.label}")
    return outcome


def report(outcome: Outcome, dry_run: bool) -> None:
    """One stderr line per server; commands the user must run on stdout."""
    for note in outcome.notes:
        verb = {"wrapped": "would wrap" if dry_run else "wrapped", "rewrapped": "would re-wrap" if dry_run else "re-wrapped",
                "restored": "would restore" if dry_run else "restored",
                "restored-args": "would restore" if dry_run else "restored", "left": "left as it is",
                "stale": "stale wrap record",
                "dropped": "would drop its stale wrap record" if dry_run else "dropped its stale wrap record"}.get(note.action, note.action.replace("-", " "))
        click.echo(f"mcptap: {printable(note.name)}: {verb}" + (f": {printable(note.detail)}" if note.detail else ""), err=True)
        if note.command:
            click.echo(shlex.join(note.command))


@click.command("wrap", epilog=options.example('mcptap wrap --host claude-desktop --dry-run', 'mcptap wrap --config .cursor/mcp.json filesystem'),
               short_help="Make a host start its MCP servers through `mcptap record`.")
@config_options
@click.option("--dir", "directory", type=options.NonEmptyPath(file_okay=False), default=None,
              help="Capture directory written into each entry (default: MCPTAP_DIR or the user data directory).")
@click.option("--keep", type=click.IntRange(min=1), default=None, metavar="N",
              help="Pass --keep N to record: keep only the N newest captures of each server.")
@click.option("--http", "http", is_flag=True, help="Also wrap URL entries: point them at a local tap on a stable port.")
@click.option("--mcptap", "mcptap_path", type=options.NonEmptyPath(dir_okay=False), default=None,
              help="The mcptap executable the host runs (default: this installation's, by absolute path).")
def command(host: str | None, config: str | None, dialect: str | None, project: str | None, dry_run: bool,
            servers: tuple[str, ...],
            directory: str | None, keep: int | None, http: bool, mcptap_path: str | None) -> None:
    """Wrap the stdio servers (all, or each SERVER) of a host configuration
    so that the host runs `mcptap record --dir DIR --name SERVER -- <original>`.
    Idempotent; `mcptap unwrap` restores the original bytes."""
    with opened(host, config, dialect, need_write=not dry_run, project=project) as cf:
        where = os.path.abspath(os.path.expanduser(directory)) if directory else str(capture_dir())
        spec = WrapSpec(launcher(mcptap_path), where, keep=keep, http=http)
        outcome = edited(cf, lambda: wrap(cf.dialect, cf.text, cf.memo, spec, servers), dry_run)
        refused = any(n.action == "refused" for n in outcome.notes)
        if dry_run:
            click.echo(diff(cf, outcome.text), nl=False)
            sys.exit(1 if refused else 0)
        backup = save(cf, outcome, memo_first=True)
        if outcome.text != cf.text:
            say(f"wrote {escape_name(cf.path)}" + (f" (original saved as {escape_name(backup)})" if backup else "") + "; restart the host to apply")
        else:
            say(f"{escape_name(cf.path)} unchanged")
        sys.exit(1 if refused else 0)
