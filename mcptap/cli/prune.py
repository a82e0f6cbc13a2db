"""``mcptap prune [--dir DIR] [--older-than AGE] [--keep N] [--dry-run]``:
retention for a capture directory.

``--older-than AGE`` (``90s``, ``15m``, ``12h``, ``7d``, ``2w``) removes
captures last written longer ago than AGE; ``--keep N`` keeps the N newest
captures of each server name whatever their age (alone, it removes every
other). Damaged, empty and unsupported captures (``mcptap ls``) go by the same
rules. A removed capture's spill file (``CAPTURE.spill``: what a killed tap set
aside for ``recover``) goes with it, as do disk-full reserves and ``serve
--extend`` work files whose process is gone. Captures still being recorded or
extended (``serve --extend``) and
files that are not mcptap captures are never removed. ``--dry-run`` lists what would go.

Exit status: 0; 2 for a usage error or when a file could not be removed.
"""

from __future__ import annotations

import os
import time

import click

from mcptap.catalog import parse_age, remove, select_prune
from mcptap.cli import options
from mcptap.cli.ls import human_size, printable, scan_dir
from mcptap.liveness import remove_leftovers
from mcptap.paths import capture_dir


def _age(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("prune", epilog=options.example('mcptap prune --older-than 7d --dry-run', 'mcptap prune --keep 5'),
               short_help="Delete old captures (by age, keeping the newest N per server).")
@click.option("--dir", "directory", type=options.NonEmptyPath(), default=None,
              help="Capture directory (default: MCPTAP_DIR or the user data directory).")
@click.option("--older-than", "older_than", callback=_age, default=None, metavar="AGE",
              help="Remove captures last written more than AGE ago: a number with a unit s, m, h, d or w (e.g. 7d, 12h, 30m).")
@click.option("--keep", type=click.IntRange(min=0), default=None, metavar="N",
              help="Always keep the N newest captures of each server name.")
@click.option("-n", "--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.pass_context
def command(ctx: click.Context, directory: str | None, older_than: float | None, keep: int | None, dry_run: bool) -> None:
    """Delete captures older than AGE, keeping the N newest of each server."""
    if older_than is None and keep is None:
        raise click.UsageError("give --older-than AGE, --keep N or both")
    where = directory if directory is not None else str(capture_dir())
    if os.path.exists(where) and not os.path.isdir(where):
        raise click.UsageError(f"{where}: not a directory")
    if directory is not None and not os.path.lexists(where):
        raise click.UsageError(f"{where}: no such directory")     # a mistyped --dir is not an empty one
    doomed = select_prune(scan_dir(where), now=time.time(), older_than=older_than, keep=keep)
    if dry_run:
        for info in doomed:
            click.echo(f"would remove {printable(info.path)} ({human_size(info.size)})")
        return
    failed = 0
    freed = 0
    for info, err in remove(doomed):
        if err:
            failed += 1
            click.echo(f"mcptap: cannot remove {printable(info.path)}: {err}", err=True)
        else:
            freed += info.size
            click.echo(f"removed {printable(info.path)}")
    remove_leftovers(where)        # reserves a killed mcptap left, and those of removed captures
    click.echo(f"mcptap: removed {len(doomed) - failed} capture(s), {human_size(freed)}", err=True)
    if failed:
        ctx.exit(2)
