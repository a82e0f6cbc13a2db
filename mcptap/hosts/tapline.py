"""The command line of a wrapped entry (pure): building it, and reading one
back, whoever wrote it.

A wrapped stdio entry runs ``LAUNCHER record OPTIONS -- CMD ARGS``. ``wrap``
manages three of the record options (``--dir``, ``--name``, ``--keep``);
any other option in an entry (``--redact``, ``--redact-key K``…) was put
there by the user and is kept when ``wrap`` rewrites the line. A line is
recognised as mcptap's by its launcher: the one in use (``--mcptap``), the one
its wrap record names, a program whose name starts with ``mcptap``, or
``python -m mcptap``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_MODULES = ("mcptap", "mcptap.cli.main")
#: `mcptap record` options that take a value (stdio forms): the word after them is never "--"'s
_VALUED = frozenset({"--dir", "--name", "--keep", "-o", "--output", "--grace", "--otlp-endpoint", "--otlp-header",
                     "--redact-key", "--redact-path", "--redact-pattern", "--redact-rules"})
#: the record options wrap writes and rewrites
MANAGED = ("--dir", "--name", "--keep")


@dataclass(frozen=True)
class WrapSpec:
    """How to wrap. ``launcher``: the absolute argv that runs mcptap
    (``("/venv/bin/mcptap",)`` or ``("/venv/bin/python", "-m", "mcptap")``).
    ``directory``: absolute capture directory. ``keep``: ``record --keep``.
    ``http``: also wrap URL entries."""

    launcher: tuple[str, ...]
    directory: str
    keep: int | None = None
    http: bool = False


@dataclass(frozen=True)
class TapLine:
    """A stdio entry's command line read as ``LAUNCHER record OPTIONS -- COMMAND ARGS``."""

    launcher: tuple[str, ...]
    options: tuple[str, ...]
    command: str
    args: tuple[str, ...]

    def pairs(self) -> list[tuple[str, str | None]]:
        """The options as (option, value or None), in order."""
        out: list[tuple[str, str | None]] = []
        i = 0
        while i < len(self.options):
            opt = self.options[i]
            if opt in _VALUED and i + 1 < len(self.options):
                out.append((opt, self.options[i + 1]))
                i += 2
            else:
                out.append((opt, None))
                i += 1
        return out

    def managed(self) -> dict[str, str | None]:
        """The value of each option wrap manages (None: absent)."""
        got: dict[str, str | None] = dict.fromkeys(MANAGED)
        for opt, value in self.pairs():
            if opt in MANAGED:
                got[opt] = value
        return got

    def extras(self) -> list[str]:
        """The options wrap does not manage, as written."""
        out: list[str] = []
        for opt, value in self.pairs():
            if opt not in MANAGED:
                out += [opt] if value is None else [opt, value]
        return out

    def as_wrap_writes(self, name: str) -> bool:
        """Exactly the options ``wrap`` writes for server ``name`` (``--dir D
        --name NAME [--keep N]``): a line that can be unwrapped without its
        record. Anything else (the README's hand-wrapped ``record --name X
        --``, a ``--redact``) may be the user's own tap line."""
        opts = list(self.options)
        if len(opts) not in (4, 6) or opts[0] != "--dir" or opts[2:4] != ["--name", name]:
            return False
        return len(opts) == 4 or opts[4] == "--keep"


def wrapped_argv(spec: WrapSpec, name: str, command: str, args: Sequence[str], extras: Sequence[str] = ()) -> tuple[str, list[str]]:
    """(command, args) of the wrapped entry for server ``name``; ``extras``:
    the user's own record options, kept after the ones wrap manages."""
    opts = ["record", "--dir", spec.directory, "--name", name]
    if spec.keep is not None:
        opts += ["--keep", str(spec.keep)]
    return spec.launcher[0], [*spec.launcher[1:], *opts, *extras, "--", command, *args]


def matches(line: TapLine, spec: WrapSpec, name: str) -> bool:
    """Whether ``line`` is wrapped as ``spec`` would wrap server ``name``
    (the user's extra options do not count)."""
    want = {"--dir": spec.directory, "--name": name, "--keep": None if spec.keep is None else str(spec.keep)}
    return line.launcher == spec.launcher and line.managed() == want


def _launcher_of(command: str, args: Sequence[str], launchers: Iterable[Sequence[str]]) -> tuple[str, ...] | None:
    for known in launchers:
        known = tuple(known)
        if known and command == known[0] and tuple(args[:len(known) - 1]) == known[1:]:
            return known
    base = posixpath.basename(command.replace("\\", "/")).lower()
    if base.startswith("mcptap"):
        return (command,)
    if len(args) >= 2 and args[0] == "-m" and args[1] in _MODULES:
        return (command, "-m", args[1])
    return None


def parse_tap_line(command: str, args: Sequence[str], launchers: Iterable[Sequence[str]] = ()) -> TapLine | None:
    """``command args`` read as mcptap recording a stdio server, or None.
    ``launchers``: argvs known to run mcptap (the one in use, the one a wrap
    record names), besides ``mcptap*`` programs and ``python -m mcptap``."""
    launcher = _launcher_of(command, args, launchers)
    if launcher is None:
        return None
    rest = list(args[len(launcher) - 1:])
    if not rest or rest[0] != "record":
        return None
    i = 1
    while i < len(rest) and rest[i] != "--":
        i += 2 if rest[i] in _VALUED else 1      # "--name --" names a server "--"
    after = rest[i + 1:]
    if not after:
        return None
    return TapLine(launcher, tuple(rest[1:i]), after[0], tuple(after[1:]))


def parse_wrapped(command: str, args: Sequence[str], launchers: Iterable[Sequence[str]] = ()) -> tuple[str, list[str]] | None:
    """(original command, original args) when ``command args`` is mcptap
    recording a stdio server (``mcptap record … -- CMD ARGS``, or
    ``python -m mcptap record … -- CMD ARGS``); None otherwise."""
    line = parse_tap_line(command, args, launchers)
    return None if line is None else (line.command, list(line.args))
