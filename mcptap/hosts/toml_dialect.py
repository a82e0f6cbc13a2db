"""The TOML dialect of host configurations: Codex ``config.toml`` (hosts/dialects.py).

:class:`CodexToml` reads the ``[mcp_servers.NAME]`` tables (or inline
tables, or dotted keys) with ``command``, ``args``, ``url``: values as
tomllib and Codex read them, edits through tomlkit, which keeps every other
byte. Pure; raises ConfigError (``mcp_servers`` not a table, no such server)
and ConfigSyntaxError (text tomlkit cannot parse).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from typing import Any

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from mcptap.hosts.entries import Dialect, ServerEntry, _stdio_entry
from mcptap.hosts.errors import ConfigError, ConfigSyntaxError


class CodexToml(Dialect):
    """Codex ``config.toml``: ``mcp_servers.NAME`` tables."""

    name = "codex"
    label = "Codex config.toml ([mcp_servers.NAME])"
    substitutes = False        # a url is used as written (secrets come from bearer_token_env_var)

    @staticmethod
    def _doc(text: str) -> Any:
        try:
            # a BOM (Windows editors write one) is no key: tomlkit would read it as an empty one
            return tomlkit.parse(text.removeprefix(_BOM))
        except tomlkit.exceptions.ParseError as exc:
            raise ConfigSyntaxError(str(exc)) from None

    @staticmethod
    def _tables(doc: Any) -> dict[str, Any]:
        servers = doc.get("mcp_servers")
        if servers is None:
            return {}
        if not isinstance(servers, dict):
            raise ConfigError("mcp_servers is not a table")
        return {str(k): v for k, v in servers.items() if isinstance(v, dict)}

    def servers(self, text: str) -> dict[str, ServerEntry]:
        out = {}
        plain = _plain_servers(text)
        for name, raw in self._tables(self._doc(text)).items():
            # values as tomllib and Codex read them (tomlkit keeps a multi-line string's CRLF raw)
            tbl = plain.get(name, raw)
            cmd = tbl.get("command")
            if isinstance(cmd, str):
                out[name] = _stdio_entry(name, str(cmd), tbl.get("args"))
            elif isinstance(tbl.get("url"), str):
                out[name] = ServerEntry(name, url=str(tbl["url"]), url_key="url")
            else:
                out[name] = ServerEntry(name)
        return out

    def _table(self, doc: Any, name: str) -> Any:
        tbl = self._tables(doc).get(name)
        if tbl is None:
            raise ConfigError(f"no server named {name!r}")
        return tbl

    def set_stdio(self, text: str, name: str, command: str, args: Sequence[str]) -> str:
        doc = self._doc(text)
        tbl = self._table(doc, name)
        tbl["command"] = command
        fresh = "args" not in tbl
        value = tomlkit.item(list(args))
        if fresh and "\r\n" in text and not isinstance(tbl, tomlkit.items.InlineTable):
            value.trivia.trail = "\r\n"       # a line tomlkit adds ends as the file's lines do
        _set(tbl, "args", value)
        return _bom(text) + str(doc.as_string())

    def set_url(self, text: str, name: str, url: str) -> str:
        doc = self._doc(text)
        _set(self._table(doc, name), "url", url)
        return _bom(text) + str(doc.as_string())

    def entry_texts(self, text: str) -> dict[str, str]:
        return {name: _table_text(tbl) for name, tbl in self._tables(self._doc(text)).items()}

    def confined(self, text: str, name: str, start: int, end: int, new: str) -> bool:
        # a TOML table has no single span (sub-tables, dotted keys): compare the values instead
        try:
            old_doc, new_doc = self._doc(text).unwrap(), self._doc(text[:start] + new + text[end:]).unwrap()
        except ConfigError:
            return False
        old_servers, new_servers = old_doc.get("mcp_servers"), new_doc.get("mcp_servers")
        if not isinstance(old_servers, dict) or not isinstance(new_servers, dict) or name not in new_servers:
            return False
        old_servers.pop(name, None)
        new_servers.pop(name)
        return bool(old_doc == new_doc)


_BOM = "\ufeff"


def _bom(text: str) -> str:
    """The BOM ``text`` starts with, kept in front of an edited file ("" when none)."""
    return _BOM if text.startswith(_BOM) else ""


def _set(tbl: Any, key: str, value: Any) -> None:
    """``tbl[key] = value`` keeping the layout: a key tomlkit adds before a sub-table
    (``[mcp_servers.NAME.env]`` right after the table's keys) also gets a blank line put in
    front of that sub-table, in LF whatever the file's line ends; the sub-tables' leading
    whitespace is restored as it was."""
    body = getattr(getattr(tbl, "value", None), "body", None) or []
    heads = [t for _, v in body for t in (v.body[:1] if isinstance(v, tomlkit.items.AoT) else [v])
             if isinstance(t, tomlkit.items.Table)]
    indents = [t.trivia.indent for t in heads]
    tbl[key] = value
    for t, indent in zip(heads, indents, strict=True):
        t.trivia.indent = indent


def _plain_servers(text: str) -> dict[str, Any]:
    """``mcp_servers`` of ``text`` read by tomllib (names to tables); empty
    when tomllib does not read the file (tomlkit's values are used then)."""
    try:
        servers = tomllib.loads(text.removeprefix(_BOM)).get("mcp_servers")
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}
    return {k: v for k, v in servers.items() if isinstance(v, dict)} if isinstance(servers, dict) else {}


def _table_text(tbl: Any) -> str:
    """What an entry's digest covers in TOML: the table's text as tomlkit
    writes it, without the blank and comment lines that end it (they go with
    whatever the user appends after the table, such as another table's
    heading comment). A table split over several places (dotted keys, a
    sub-table written before its table: tomlkit's out-of-order proxy) has no
    one text: then its values, canonically."""
    as_string = getattr(tbl, "as_string", None)
    if as_string is None:
        return "values:" + json.dumps(tbl.unwrap(), sort_keys=True, ensure_ascii=False, default=str)
    lines = str(as_string()).splitlines(keepends=True)
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    return "".join(lines)
