"""``mcptap unwrap [--host NAME | --config FILE] [--dry-run] [SERVER]...``:
undo ``mcptap wrap``.

Each wrapped server (all, or the named ones) gets its original entry back,
byte for byte, from the wrap record in ``FILE.mcptap-wrap.json`` ("restored
exactly" only when the entry then has the SHA-256 the record keeps); an entry
edited since it was wrapped (or without a usable record) gets its original
command and arguments back from the wrapped arguments. Other bytes stay as
they are. A damaged sidecar (not JSON, not a wrap record) is reported and
unwrap goes on as without one; the file is moved aside to
``FILE.mcptap-wrap.json.damaged``.

Exit status: 0; 1 when a server stays wrapped because its original was only
in a missing or damaged sidecar (a URL entry pointing at its tap: a damaged
record, or the backup ``FILE.mcptap-backup`` holding another URL for it, shows
it was wrapped; a local URL with no such sign is not wrapped), or an
entry was refused (args that are not a list of strings; the others are
unwrapped and written); 2 for a
usage error, a configuration that does not parse, a server name not in it, a
read-only file (then nothing is written).
"""

from __future__ import annotations

import sys

import click

from mcptap.cli import options
from mcptap.cli.hostfiles import config_options, diff, opened, read_backup, save, set_damaged_aside
from mcptap.cli.wrap import edited
from mcptap.escape import escape_name, escape_os
from mcptap.hosts.wrap import unwrap


@click.command("unwrap", epilog=options.example('mcptap unwrap --host claude-desktop', 'mcptap unwrap --config .cursor/mcp.json filesystem'),
               short_help="Undo `mcptap wrap`: restore a host's original server entries.")
@config_options
def command(host: str | None, config: str | None, dialect: str | None, project: str | None, dry_run: bool,
            servers: tuple[str, ...]) -> None:
    """Restore the original entries of wrapped servers (all, or each SERVER)."""
    with opened(host, config, dialect, need_write=not dry_run, project=project, damaged_ok=True) as cf:
        if cf.damaged is not None:
            click.echo(f"mcptap: {escape_name(cf.sidecar)}: damaged wrap record ({escape_os(cf.damaged)}): "
                       "unwrapping without it (command and args from the wrapped arguments)", err=True)
        outcome = edited(cf, lambda: unwrap(cf.dialect, cf.text, cf.memo, servers, backup=read_backup(cf)), dry_run)
        failed = any(n.action in ("failed", "refused") for n in outcome.notes)
        if dry_run:
            click.echo(diff(cf, outcome.text), nl=False)
            sys.exit(1 if failed else 0)
        save(cf, outcome, memo_first=False)
        click.echo(escape_os(f"mcptap: {'wrote' if outcome.text != cf.text else 'unchanged:'} {escape_name(cf.path)}"), err=True)
        if cf.damaged is not None:
            click.echo(escape_os(f"mcptap: the damaged wrap record is kept as {escape_name(set_damaged_aside(cf))}"), err=True)
        sys.exit(1 if failed else 0)
