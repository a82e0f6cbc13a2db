"""``mcptap prune [--dir DIR] [--older-than AGE] [--keep N] [--dry-run]``:
retention for a capture directory.

``--older-than AGE`` (``90s``, ``15m``, ``12h``, ``7d``, ``2w``) removes
captures last written longer ago than AGE; ``--keep N`` keeps the N newest
captures of each server name whatever their age (alone, it removes every
other). Damaged, empty and unsupported captures (``mcptap ls``) go by the same
rules. A removed capture's spill file (``CAPTURE.spill``: what a killed tap set
aside for ``recover``) goes with it, as do disk-full reserves and ``serve
--extend`` work files whose process is gone, and, listed as removed, spill
files whose capture is gone (deleted by hand) and which no tap uses
(``liveness.orphan_spills``). Captures still being recorded or
extended (``serve --extend``) and
files that are not mcptap captures are never removed. ``--dry-run`` lists what would go.

Exit status: 0; 2 for a usage error or when a file could not be removed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import click

from mcptap.catalog import CaptureInfo, parse_age, remove, select_prune
from mcptap.cli import options
from mcptap.cli.ls import captures_dir, human_size, scan_dir
from mcptap.escape import escape_name
from mcptap.liveness import orphan_spills, remove_leftovers, remove_orphan_spills

#: why prune removes a spill file of its own
ORPHAN = "a spill file whose capture is gone"


def _named(infos: Iterable[CaptureInfo]) -> list[str]:
    """The spill file names the captures' headers give (a renamed capture's spill file is still its)."""
    return [i.named_spill for i in infos if i.named_spill]


def _age(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("prune", epilog=options.example('mcptap prune --older-than 7d --dry-run', 'mcptap prune --keep 5'),
               short_help="Delete old captures (by age, keeping the newest N per server).")
@click.option("--dir", "directory", type=options.NonEmptyPath(directory=True), default=None,
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
    where = captures_dir(directory)
    infos = scan_dir(where)
    doomed = select_prune(infos, now=time.time(), older_than=older_than, keep=keep)
    if dry_run:
        for info in doomed:
            click.echo(f"would remove {escape_name(info.path)} ({human_size(info.size)})")
        for path in orphan_spills(where, _named(infos)):
            click.echo(f"would remove {escape_name(path)} ({ORPHAN})")
        return
    failed = 0
    freed = 0
    for info, err in remove(doomed):
        if err:
            failed += 1
            click.echo(f"mcptap: cannot remove {escape_name(info.path)}: {err}", err=True)
        else:
            freed += info.size
            click.echo(f"removed {escape_name(info.path)}")
    gone = {i.path for i in doomed}
    kept = [i for i in infos if i.path not in gone]
    stuck = 0
    for path, err in remove_orphan_spills(orphan_spills(where, _named(kept))):
        if err:
            stuck += 1
            click.echo(f"mcptap: cannot remove {escape_name(path)}: {err}", err=True)
        else:
            click.echo(f"removed {escape_name(path)} ({ORPHAN})")
    remove_leftovers(where)        # reserves a killed mcptap left, and those of removed captures
    click.echo(f"mcptap: removed {len(doomed) - failed} capture(s), {human_size(freed)}", err=True)
    if failed or stuck:
        ctx.exit(2)
