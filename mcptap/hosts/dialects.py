"""The configuration dialects of MCP hosts: how each lists its servers, and
how one entry's command, arguments or URL are replaced without touching any
other byte of the file.

* ``mcpServers`` JSON — Claude Desktop, Claude Code (``.mcp.json``, and the
  user-scope ``mcpServers`` of ``~/.claude.json``), Cursor, Windsurf, Gemini
  CLI: ``{"mcpServers": {NAME: {"command", "args", "env", …}}}``; URL
  entries use ``url``, ``httpUrl`` (Gemini CLI) or ``serverUrl`` (Windsurf).
* VS Code ``mcp.json`` — JSONC, ``{"servers": {NAME: {"type": "stdio",
  "command", "args", …}}, "inputs": […]}``; also ``{"mcp": {"servers": …}}``
  in a VS Code ``settings.json``.
* Zed ``settings.json`` — JSONC, ``{"context_servers": {NAME: {"command",
  "args", "env"}}}``, and the older ``"command": {"path", "args", "env"}``.
* Codex ``config.toml`` — ``[mcp_servers.NAME]`` tables (or inline tables,
  or dotted keys) with ``command``, ``args``, ``url`` (tomlkit keeps every
  other byte).

Sources for each host: docs/hosts.md. Pure; raises ConfigError /
ConfigSyntaxError.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from mcptap.hosts import jsonc
from mcptap.hosts.errors import ConfigError, ConfigSyntaxError

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


def _shallow(node: jsonc.Node) -> Any:
    """An ``args`` value as far as ``_stdio_entry`` looks (a nested item stays
    a node, no string): never the whole value, maybe thousands of levels deep."""
    if isinstance(node, jsonc.Array):
        return [x.value if isinstance(x, jsonc.Scalar) else x for x in node.items]
    return node.value if isinstance(node, jsonc.Scalar) else node


class JsonDialect(Dialect):
    """A JSON/JSONC dialect whose servers live in the object at ``path``."""

    def __init__(self, name: str, label: str, path: tuple[str, ...], scope: str = "") -> None:
        self.name = name
        self.label = label
        self.path = path
        self.scope = scope

    # -- reading -----------------------------------------------------------------
    def _container(self, root: jsonc.Node) -> jsonc.Object | None:
        if not isinstance(root, jsonc.Object):
            raise ConfigError("the top level is not a JSON object")
        node: jsonc.Node = root
        for key in self.path:
            if not isinstance(node, jsonc.Object):
                return None
            member = node.get(key)
            if member is None:
                return None
            node = member.value
        if not isinstance(node, jsonc.Object):
            raise ConfigError(f"{'.'.join(self.path)} is not an object")
        return node

    def _entries(self, text: str) -> dict[str, jsonc.Object]:
        container = self._container(jsonc.parse(text))
        out: dict[str, jsonc.Object] = {}
        if container is None:
            return out
        for m in container.members:
            out.pop(m.key, None)             # a duplicate key: the last one counts
            if isinstance(m.value, jsonc.Object):
                out[m.key] = m.value
        return out

    @staticmethod
    def _stdio_parts(entry: jsonc.Object) -> tuple[jsonc.Scalar, jsonc.Object, jsonc.Member | None] | None:
        """(command string node, the object holding args, its args member)."""
        cmd = entry.get("command")
        if cmd is None:
            return None
        if isinstance(cmd.value, jsonc.Scalar) and isinstance(cmd.value.value, str):
            return cmd.value, entry, entry.get("args")
        if isinstance(cmd.value, jsonc.Object):        # Zed before 0.19x: "command": {"path", "args", "env"}
            path = cmd.value.get("path")
            if path is not None and isinstance(path.value, jsonc.Scalar) and isinstance(path.value.value, str):
                return path.value, cmd.value, cmd.value.get("args")
        return None

    def servers(self, text: str) -> dict[str, ServerEntry]:
        out = {}
        for name, entry in self._entries(text).items():
            parts = self._stdio_parts(entry)
            if parts is not None:
                cmd, _, args = parts
                out[name] = _stdio_entry(name, cmd.value, None if args is None else _shallow(args.value))
                continue
            for key in URL_KEYS:
                m = entry.get(key)
                if m is not None and isinstance(m.value, jsonc.Scalar) and isinstance(m.value.value, str):
                    out[name] = ServerEntry(name, url=m.value.value, url_key=key)
                    break
            else:
                out[name] = ServerEntry(name)
        return out

    # -- writing -----------------------------------------------------------------
    def _entry(self, text: str, name: str) -> jsonc.Object:
        entry = self._entries(text).get(name)
        if entry is None:
            raise ConfigError(f"no server named {name!r}")
        return entry

    def set_stdio(self, text: str, name: str, command: str, args: Sequence[str]) -> str:
        parts = self._stdio_parts(self._entry(text, name))
        if parts is None:
            raise ConfigError(f"{name}: not a stdio entry")
        cmd, holder, args_member = parts
        edits = [(cmd.start, cmd.end, jsonc.dumps(command))]
        if args_member is not None:
            edits.append((args_member.value.start, args_member.value.end, jsonc.dumps(list(args))))
        else:
            at, piece = _insertion(text, holder, "args", jsonc.dumps(list(args)))
            edits.append((at, at, piece))
        return _splice(text, edits)

    def entry_texts(self, text: str) -> dict[str, str]:
        return {name: text[e.start:e.end] for name, e in self._entries(text).items()}

    def confined(self, text: str, name: str, start: int, end: int, new: str) -> bool:
        entry = self._entries(text).get(name)
        return entry is not None and entry.start < start and end < entry.end      # inside its braces

    def set_url(self, text: str, name: str, url: str) -> str:
        entry = self._entry(text, name)
        for key in URL_KEYS:
            m = entry.get(key)
            if m is not None and isinstance(m.value, jsonc.Scalar) and isinstance(m.value.value, str):
                return _splice(text, [(m.value.start, m.value.end, jsonc.dumps(url))])
        raise ConfigError(f"{name}: not a URL entry")


def _insertion(text: str, obj: jsonc.Object, key: str, value: str) -> tuple[int, str]:
    """Where and what to insert to add ``"key": value`` as the last member of
    ``obj``: right after the last member's value, a comma and the same line
    break and indentation as that member (or one space when it shares its
    line with the previous token)."""
    if not obj.members:
        return obj.start + 1, f"{jsonc.dumps(key)}: {value}"
    last = obj.members[-1]
    nl = text.rfind("\n", obj.start, last.start)
    sep = " "
    if nl >= 0 and not text[nl + 1:last.start].strip():
        crlf = nl > 0 and text[nl - 1] == "\r"
        sep = ("\r\n" if crlf else "\n") + text[nl + 1:last.start]
    return last.value.end, f",{sep}{jsonc.dumps(key)}: {value}"


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


class CodexToml(Dialect):
    """Codex ``config.toml``: ``mcp_servers.NAME`` tables."""

    name = "codex"
    label = "Codex config.toml ([mcp_servers.NAME])"
    substitutes = False        # a url is used as written (secrets come from bearer_token_env_var)

    @staticmethod
    def _doc(text: str) -> Any:
        try:
            return tomlkit.parse(text)
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
        tbl["args"] = value
        return str(doc.as_string())

    def set_url(self, text: str, name: str, url: str) -> str:
        doc = self._doc(text)
        self._table(doc, name)["url"] = url
        return str(doc.as_string())

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


def _plain_servers(text: str) -> dict[str, Any]:
    """``mcp_servers`` of ``text`` read by tomllib (names to tables); empty
    when tomllib does not read the file (tomlkit's values are used then)."""
    try:
        servers = tomllib.loads(text).get("mcp_servers")
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


MCP_SERVERS = JsonDialect("mcpServers", 'JSON "mcpServers" (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI)', ("mcpServers",))
VSCODE = JsonDialect("vscode", 'VS Code mcp.json ("servers")', ("servers",))
VSCODE_SETTINGS = JsonDialect("vscode-settings", 'VS Code settings.json ("mcp": {"servers"})', ("mcp", "servers"))
ZED = JsonDialect("zed", 'Zed settings.json ("context_servers")', ("context_servers",))
CODEX = CodexToml()

def claude_code_local(project: str) -> JsonDialect:
    """Claude Code's local scope (its default for ``claude mcp add``): the
    ``mcpServers`` of ``projects[<absolute project directory>]`` in
    ``~/.claude.json``."""
    return JsonDialect("claude-code-local", f"Claude Code local scope ({project})", ("projects", project, "mcpServers"),
                       scope=f"projects[{project}]")


DIALECTS: dict[str, Dialect] = {d.name: d for d in (MCP_SERVERS, VSCODE, VSCODE_SETTINGS, ZED, CODEX)}


def detect(text: str, filename: str = "") -> Dialect:
    """The dialect of a configuration, from its content (a ``.toml`` name or
    a ``mcp_servers`` table means Codex; otherwise the JSON object's
    ``mcpServers``, ``servers``, ``context_servers`` or ``mcp.servers``).
    Raises ConfigSyntaxError when it parses as neither, ConfigError when no
    server section is found."""
    if filename.endswith(".toml"):
        CODEX._doc(text)
        return CODEX
    try:
        root = jsonc.parse(text)
    except ConfigSyntaxError as json_error:
        try:
            doc = tomlkit.parse(text)
        except tomlkit.exceptions.ParseError:
            raise json_error from None
        if "mcp_servers" in doc:
            return CODEX
        raise json_error from None
    if not isinstance(root, jsonc.Object):
        raise ConfigError("the top level is not a JSON object")
    for key, dialect in (("mcpServers", MCP_SERVERS), ("servers", VSCODE), ("context_servers", ZED)):
        if root.get(key) is not None:
            return dialect
    mcp = root.get("mcp")
    if mcp is not None and isinstance(mcp.value, jsonc.Object) and mcp.value.get("servers") is not None:
        return VSCODE_SETTINGS
    raise ConfigError("no MCP server section found (mcpServers, servers, context_servers, mcp.servers or [mcp_servers])")
