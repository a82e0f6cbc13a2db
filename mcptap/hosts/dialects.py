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

This module names the dialects and detects a file's (:func:`detect`); the
shared types are in hosts/entries.py, the JSON/JSONC dialects in
hosts/json_dialect.py, the TOML one in hosts/toml_dialect.py.

Sources for each host: docs/hosts.md. Pure; raises ConfigError /
ConfigSyntaxError.
"""

from __future__ import annotations

import tomlkit
import tomlkit.exceptions

from mcptap.hosts import jsonc
from mcptap.hosts.entries import URL_KEYS as URL_KEYS
from mcptap.hosts.entries import Dialect as Dialect
from mcptap.hosts.entries import ServerEntry as ServerEntry
from mcptap.hosts.errors import ConfigError, ConfigSyntaxError
from mcptap.hosts.json_dialect import JsonDialect as JsonDialect
from mcptap.hosts.toml_dialect import CodexToml as CodexToml

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
