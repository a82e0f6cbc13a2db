"""The command line of a wrapped entry (pure): building it, and reading one
back, whoever wrote it.

A wrapped stdio entry runs ``LAUNCHER record OPTIONS -- CMD ARGS``. ``wrap``
manages three of the record options (``--dir``, ``--name``, ``--keep``);
any other option in an entry (``--redact``, ``--redact-key K``…) was put
there by the user and is kept when ``wrap`` rewrites the line. A line is
recognised as mcptap's by its launcher: the one in use (``--mcptap``), the one
its wrap record names, a program whose name starts with ``mcptap``,
``python -m mcptap``, or a runner starting one (``uvx mcptap``, ``pipx run
mcptap``, ``/usr/bin/env mcptap``…); or, whatever its launcher, by having
exactly the options wrap writes.

A URL entry wrapped with ``--http`` points at ``http://127.0.0.1:PORT/<the
upstream's path and query>``, PORT in 41000..48999.
"""

from __future__ import annotations

import posixpath
import re
import zlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from mcptap.escape import escape_controls, has_controls
from mcptap.hosts.errors import ConfigError

_MODULES = ("mcptap", "mcptap.cli.main")
#: `mcptap record` options that take a value (stdio forms): the word after them is never "--"'s
_VALUED = frozenset({"--dir", "--name", "--keep", "-o", "--output", "--grace", "--otlp-endpoint", "--otlp-header",
                     "--redact-key", "--redact-path", "--redact-pattern", "--redact-rules"})
#: the record options wrap writes and rewrites
MANAGED = ("--dir", "--name", "--keep")
#: Ports for --http taps: 41000..48999, picked from the server name.
PORT_BASE, PORT_SPAN = 41000, 8000


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

    def _split(self) -> list[tuple[str, str | None, list[str]]]:
        """The options as (option, value or None, the words as written), in
        order; ``--opt=value`` (click reads it as ``--opt value``) is the option too."""
        out: list[tuple[str, str | None, list[str]]] = []
        i = 0
        while i < len(self.options):
            word = self.options[i]
            opt, eq, value = word.partition("=")
            if eq and word.startswith("--") and opt in _VALUED:
                out.append((opt, value, [word]))
                i += 1
            elif word in _VALUED and i + 1 < len(self.options):
                out.append((word, self.options[i + 1], [word, self.options[i + 1]]))
                i += 2
            else:
                out.append((word, None, [word]))
                i += 1
        return out

    def pairs(self) -> list[tuple[str, str | None]]:
        """The options as (option, value or None), in order."""
        return [(opt, value) for opt, value, _ in self._split()]

    def managed(self) -> dict[str, str | None]:
        """The value of each option wrap manages (None: absent; the last one
        given wins, as in click)."""
        got: dict[str, str | None] = dict.fromkeys(MANAGED)
        for opt, value in self.pairs():
            if opt in MANAGED:
                got[opt] = value
        return got

    def extras(self) -> list[str]:
        """The options wrap does not manage, as written."""
        out: list[str] = []
        for opt, _, words in self._split():
            if opt not in MANAGED:
                out += words
        return out

    def wrap_shaped(self) -> bool:
        """Exactly the options ``wrap`` writes (``--dir D --name N [--keep K]``), for any N."""
        opts = list(self.options)
        if len(opts) not in (4, 6) or opts[0] != "--dir" or opts[2] != "--name":
            return False
        return len(opts) == 4 or opts[4] == "--keep"

    def as_wrap_writes(self, name: str) -> bool:
        """Exactly the options ``wrap`` writes for server ``name`` (``--dir D
        --name NAME [--keep N]``): a line that can be unwrapped without its
        record. Anything else (the README's hand-wrapped ``record --name X
        --``, a ``--redact``) may be the user's own tap line."""
        return self.wrap_shaped() and self.options[3] == name


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


#: programs that start the program named in their arguments (``env mcptap``, ``uvx mcptap``,
#: ``pipx run mcptap``, ``uv tool run mcptap``, ``npx mcptap``…)
_RUNNERS = frozenset({"env", "uvx", "uv", "pipx", "npx", "bunx", "pnpx"})
#: how far into the arguments a runner's mcptap may be (``uv tool run --python 3.12 mcptap``)
_RUNNER_REACH = 8


def _is_mcptap(word: str) -> bool:
    """A program (or package spec: ``mcptap@1.2``, ``mcptap==1.2``) named ``mcptap*``."""
    return posixpath.basename(word.replace("\\", "/")).lower().startswith("mcptap")


def _launcher_of(command: str, args: Sequence[str], launchers: Iterable[Sequence[str]]) -> tuple[str, ...] | None:
    for known in launchers:
        known = tuple(known)
        if known and command == known[0] and tuple(args[:len(known) - 1]) == known[1:]:
            return known
    if _is_mcptap(command):
        return (command,)
    if len(args) >= 2 and args[0] == "-m" and args[1] in _MODULES:
        return (command, "-m", args[1])
    base = posixpath.basename(command.replace("\\", "/")).lower().removesuffix(".exe")
    if base in _RUNNERS:
        # a runner's mcptap is known by the `record` after it (`uvx --from mcptap mcptap record`)
        words = list(args)
        for k in range(min(len(words), _RUNNER_REACH)):
            if _is_mcptap(words[k]) and words[k + 1:k + 2] == ["record"]:
                return (command, *words[:k + 1])
            if words[k] == "-m" and words[k + 1:k + 2] and words[k + 1] in _MODULES and words[k + 2:k + 3] == ["record"]:
                return (command, *words[:k + 2])
    return None


def parse_tap_line(command: str, args: Sequence[str], launchers: Iterable[Sequence[str]] = ()) -> TapLine | None:
    """``command args`` read as mcptap recording a stdio server, or None.
    ``launchers``: argvs known to run mcptap (the one in use, the one a wrap
    record names), besides ``mcptap*`` programs, ``python -m mcptap`` and
    runners (``uvx``, ``pipx run``, ``env``, ``npx``…) starting one of them.
    Any other program followed by exactly the options wrap writes
    (``X record --dir D --name N [--keep K] -- …``: a ``--mcptap`` launcher
    whose record is lost) is a tap line too."""
    launcher = _launcher_of(command, args, launchers)
    line = _split_line(launcher or (command,), args)
    if line is None or (launcher is None and not line.wrap_shaped()):
        return None
    return line


def _split_line(launcher: tuple[str, ...], args: Sequence[str]) -> TapLine | None:
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


# -- --http taps --------------------------------------------------------------------------


def tap_port(name: str) -> int:
    """The preferred local port of the --http tap for server ``name`` (stable)."""
    return PORT_BASE + zlib.crc32(name.encode("utf-8", "surrogatepass")) % PORT_SPAN


def pick_port(name: str, taken: Collection[int]) -> int:
    """``tap_port(name)``, or the next port of the range no other tap has.
    Raises ConfigError when all are taken."""
    for step in range(PORT_SPAN):
        port = PORT_BASE + (tap_port(name) - PORT_BASE + step) % PORT_SPAN
        if port not in taken:
            return port
    raise ConfigError("every --http tap port (41000..48999) is taken in this file")


#: text a host replaces before it connects: ``${VAR}``, ``${VAR:-default}`` (Claude Code),
#: ``${input:ID}``, ``${env:VAR}``, ``${workspaceFolder}`` (VS Code, Cursor, Windsurf),
#: ``$VAR`` (Gemini CLI), ``{env:VAR}``
_PLACEHOLDER = re.compile(r"\$(?:\{|[A-Za-z_])|\{env:")


def untappable(url: str, substitutes: bool = True) -> str | None:
    """Why ``--http`` cannot put a tap in front of ``url``, or None when it
    can: only a literal ``http``/``https`` URL with a host has an upstream
    the tap can connect to. ``substitutes``: the host replaces placeholders
    in URLs (the JSON hosts; Codex does not), so the URL mcptap reads is not
    the one the host uses."""
    if substitutes and (m := _PLACEHOLDER.search(url)):
        return (f"the URL has a placeholder the host fills in ({url[m.start():m.start() + 2]}…): the tap would need the URL "
                "the host makes of it; left as it is (start a tap by hand with that URL as --upstream)")
    if has_controls(url):
        # urlsplit takes one in the host (``h\x1b``) and reads one in the port as a bad port
        return f"the URL holds a control character ({escape_controls(url)}); left as it is"
    try:
        parts = urlsplit(url)
        if parts.port == 0:
            raise ValueError("port 0")
    except ValueError as exc:
        return f"the URL does not parse ({escape_controls(str(exc))}); left as it is"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "not an http:// or https:// URL with a host (a tap forwards HTTP only); left as it is"
    return None


def tap_url(name: str, upstream: str, port: int | None = None) -> str:
    """The URL a host uses to reach the tap of ``upstream``: the tap's origin
    (``port``, default ``tap_port(name)``) and the upstream's path and query."""
    parts = urlsplit(upstream)
    return urlunsplit(("http", f"127.0.0.1:{tap_port(name) if port is None else port}", parts.path or "/", parts.query, ""))


def tap_port_of(url: str | None) -> int | None:
    """The port when ``url`` points at a local tap (127.0.0.1, a tap port), else None."""
    try:
        parts = urlsplit(url or "")
        port = parts.port
    except ValueError:
        return None
    return port if parts.hostname == "127.0.0.1" and port is not None and PORT_BASE <= port < PORT_BASE + PORT_SPAN else None


def is_tap_of(url: str | None, upstream: str) -> bool:
    """Whether ``url`` is the tap URL of ``upstream`` (on any tap port)."""
    port = tap_port_of(url)
    return port is not None and url == tap_url("", upstream, port)


def tap_command(spec: WrapSpec, name: str, upstream: str, port: int) -> tuple[str, ...]:
    """The command that starts the tap for a --http wrapped server."""
    opts = ["record", "--upstream", upstream, "--listen", f"127.0.0.1:{port}", "--dir", spec.directory, "--name", name]
    if spec.keep is not None:
        opts += ["--keep", str(spec.keep)]
    return (*spec.launcher, *opts)
