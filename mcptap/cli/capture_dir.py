"""Capture naming and retention options shared by ``record`` (stdio and
HTTP): ``--dir DIR``, ``--name NAME``, ``--keep N``.

They travel as arguments, never as environment, because hosts start servers
with a filtered environment (``mcptap wrap`` writes them into the host's
configuration). ``--keep N`` runs once the new session has proven it started
(stdio: the server wrote its first bytes to stdout; HTTP: the tap listens):
the N newest captures of this server name in the directory stay (the new one
among them), older ones are deleted; captures still being written are never
touched. A start that fails (no such command, a server that dies before it
says anything) deletes nothing: its capture stays beside the good ones until
the next good start.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

from mcptap.catalog import keep_newest
from mcptap.cli.options import NonEmptyPath
from mcptap.escape import escape_name
from mcptap.liveness import remove_leftovers
from mcptap.model import Direction, Finding, Message
from mcptap.paths import safe_name, server_name
from mcptap.protocol.framing import Parses
from mcptap.recorder import Recorder


def capture_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--dir`` (keyword ``capture_dir``), ``--name`` and ``--keep``."""
    opts = [
        click.option("--dir", "capture_dir", type=NonEmptyPath(file_okay=False), default=None,
                     help="Directory for the capture (default: MCPTAP_DIR or the user data directory)."),
        click.option("--name", default=None, metavar="NAME",
                     help="Server name for the capture file name and `mcptap ls` (default: guessed from the command)."),
        click.option("--keep", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Keep only the N newest captures of this server name in the directory."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def sweep_reserves(path: str) -> None:
    """Remove the disk-full reserves and ``serve --extend`` work files a killed mcptap left
    beside ``path`` (liveness.remove_leftovers; never raises)."""
    remove_leftovers(os.path.dirname(os.path.abspath(path)))


def apply_keep(path: str, name: str | None, argv: Sequence[str], keep: int | None, say: Callable[[str], None],
               quiet: bool) -> None:
    """Retention after the capture at ``path`` was created (never raises)."""
    if keep is None:
        return
    word = safe_name(name) if name else server_name(argv)
    try:
        done = keep_newest(os.path.dirname(path), name or server_name(argv), keep, path)
    except OSError as exc:
        say(f"--keep: cannot list {escape_name(os.path.dirname(path))}: {exc.strerror or exc}")
        return
    failed = [(i, err) for i, err in done if err]
    for info, err in failed:
        say(f"--keep: cannot remove {escape_name(info.path)}: {err}")
    removed = len(done) - len(failed)
    if removed and not quiet:
        say(f"removed {removed} older capture{'s' if removed != 1 else ''} of {word} (--keep {keep})")


class KeepOnAnswer(Recorder):
    """The stdio Recorder that runs ``on_answer`` (``--keep`` retention) once,
    when the server first writes to stdout, on whichever thread records it."""

    on_answer: Callable[[], None] | None = None

    def _first_s2c(self, direction: Direction) -> None:
        cb = self.on_answer
        if cb is not None and direction is Direction.S2C:
            self.on_answer = None
            cb()

    def stdio_bytes(self, direction: Direction, data: bytes, extra: Iterable[Finding] = (),
                    behind: Callable[[], bool] | None = None, parsed: Parses | None = None) -> list[Message]:
        self._first_s2c(direction)
        return super().stdio_bytes(direction, data, extra, behind, parsed)

    def stdio_unframed(self, direction: Direction, data: bytes) -> None:
        self._first_s2c(direction)
        super().stdio_unframed(direction, data)
