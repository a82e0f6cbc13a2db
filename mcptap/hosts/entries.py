"""What every host-configuration dialect shares (hosts/dialects.py lists them).

* :class:`ServerEntry` — one server of a configuration as far as wrapping
  cares: a stdio entry (command, args), a URL entry (url and the key holding
  it, one of :data:`URL_KEYS`), a stdio entry mcptap refuses (``problem``), or
  one it leaves alone;
* :class:`Dialect` — the interface of a dialect: read the servers of a file's
  text, replace one entry's command and args or URL, the text of each entry;
* :func:`_stdio_entry` — a stdio :class:`ServerEntry` from parsed values.

Pure; the dialects raise ConfigError / ConfigSyntaxError (hosts/errors.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

URL_KEYS = ("url", "httpUrl", "serverUrl")


@dataclass(frozen=True)
class ServerEntry:
    """One server of a configuration, as far as wrapping cares.

    ``command``/``args``: a stdio entry (``args`` None when the key is
    absent). ``url``/``url_key``: a URL entry. Neither: an entry mcptap
    leaves alone (an extension-provided server, a disabled stub).
    ``problem``: why a stdio entry cannot be handled (its args are not a
    list of strings); only this entry is refused, the others are handled.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] | None = None
    url: str | None = None
    url_key: str | None = None
    problem: str | None = None

    @property
    def kind(self) -> str:
        """``stdio``, ``url``, ``bad`` (see ``problem``) or ``other``."""
        if self.problem is not None:
            return "bad"
        if self.command is not None:
            return "stdio"
        if self.url is not None:
            return "url"
        return "other"


class Dialect:
    """Interface: ``servers(text)`` in file order; ``set_stdio`` /
    ``set_url`` return the new text with one entry changed."""

    name = "?"
    label = "?"
    #: distinguishes the wrap records of several server sections of one file
    #: (Claude Code's user and local scopes share ~/.claude.json)
    scope = ""
    #: whether the hosts of this dialect replace placeholders (``${VAR}``…) in a URL
    substitutes = True

    def memo_key(self, name: str) -> str:
        """The key of server ``name``'s record in the wrap memo."""
        return f"{self.scope}:{name}" if self.scope else name

    def servers(self, text: str) -> dict[str, ServerEntry]:
        raise NotImplementedError

    def set_stdio(self, text: str, name: str, command: str, args: Sequence[str]) -> str:
        raise NotImplementedError

    def set_url(self, text: str, name: str, url: str) -> str:
        raise NotImplementedError

    def entry_texts(self, text: str) -> dict[str, str]:
        """The source text of each server entry, by name (what a wrap
        record's digest covers). Raises ConfigError as ``servers`` does."""
        raise NotImplementedError

    def confined(self, text: str, name: str, start: int, end: int, new: str) -> bool:
        """Whether replacing ``text[start:end]`` by ``new`` changes server
        ``name``'s entry and nothing else (another scope's or server's entry
        may hold the same text)."""
        raise NotImplementedError


_NOT_STRINGS = "args is not a list of strings"


def _stdio_entry(name: str, command: str, args: Any) -> ServerEntry:
    """A stdio entry; ``args`` as parsed (None: absent)."""
    if args is None:
        return ServerEntry(name, command=command)
    if not isinstance(args, list) or not all(isinstance(v, str) for v in args):
        return ServerEntry(name, command=command, problem=_NOT_STRINGS)
    return ServerEntry(name, command=command, args=tuple(str(v) for v in args))
