"""``mcptap unwrap [--host NAME | --config FILE] [--dry-run] [SERVER]...``:
undo ``mcptap wrap``.

Each wrapped server (all, or the named ones) gets its original entry back,
byte for byte, from the wrap record in ``FILE.mcptap-wrap.json``; an entry
edited since it was wrapped (or without a record) gets its original command
and arguments back from the wrapped arguments. Other bytes stay as they are.

Exit status: 0; 2 for a usage error, a configuration that does not parse, a
server name not in it, a read-only file (then nothing is written).
"""

from __future__ import annotations

import click

from mcptap.cli import options
from mcptap.cli.errors import Fail
from mcptap.cli.hostfiles import config_options, diff, load, save
from mcptap.cli.wrap import report
from mcptap.hosts.errors import ConfigError
from mcptap.hosts.wrap import unwrap


@click.command("unwrap", epilog=options.example('mcptap unwrap --host claude-desktop', 'mcptap unwrap --config .cursor/mcp.json filesystem'),
               short_help="Undo `mcptap wrap`: restore a host's original server entries.")
@config_options
def command(host: str | None, config: str | None, dialect: str | None, project: str | None, dry_run: bool,
            servers: tuple[str, ...]) -> None:
    """Restore the original entries of wrapped servers (all, or each SERVER)."""
    cf = load(host, config, dialect, need_write=not dry_run, project=project)
    try:
        outcome = unwrap(cf.dialect, cf.text, cf.memo, servers)
    except ConfigError as exc:
        raise Fail(f"{cf.path}: {exc}") from None
    report(outcome, dry_run)
    if not outcome.notes:
        click.echo(f"mcptap: {cf.path}: no MCP servers in {cf.dialect.label}", err=True)
    if dry_run:
        click.echo(diff(cf, outcome.text), nl=False)
        return
    save(cf, outcome, memo_first=False)
    click.echo(f"mcptap: {'wrote' if outcome.text != cf.text else 'unchanged:'} {cf.path}", err=True)
