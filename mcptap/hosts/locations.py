"""Where each host keeps its MCP server configuration (``mcptap wrap
--host NAME``), per operating system. Pure: the caller passes the platform
(``sys.platform`` style: ``linux``, ``darwin``, ``win32``), the home
directory and the environment. Sources: docs/hosts.md.

Only each host's user-level file is a default; project files
(``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``,
``.gemini/settings.json``, ``.codex/config.toml``, ``.zed/settings.json``)
are given with ``--config``.
"""

from __future__ import annotations

import ntpath
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from mcptap.hosts.dialects import CODEX, MCP_SERVERS, VSCODE, ZED, Dialect
from mcptap.hosts.errors import ConfigError


@dataclass(frozen=True)
class Host:
    name: str
    title: str
    dialect: Dialect


HOSTS: dict[str, Host] = {h.name: h for h in (
    Host("claude-desktop", "Claude Desktop", MCP_SERVERS),
    Host("claude-code", "Claude Code (user scope, ~/.claude.json)", MCP_SERVERS),
    # the dialect depends on the project directory: the CLI builds it (dialects.claude_code_local)
    Host("claude-code-local", "Claude Code (local scope: this project's servers in ~/.claude.json)", MCP_SERVERS),
    Host("cursor", "Cursor", MCP_SERVERS),
    Host("windsurf", "Windsurf", MCP_SERVERS),
    Host("gemini", "Gemini CLI", MCP_SERVERS),
    Host("vscode", "VS Code (user profile mcp.json)", VSCODE),
    Host("codex", "Codex", CODEX),
    Host("zed", "Zed", ZED),
)}


def default_path(host: str, platform: str, home: str, env: Mapping[str, str]) -> str:
    """The user-level configuration file of ``host`` on ``platform``.
    Raises ConfigError for an unknown host."""
    if host not in HOSTS:
        raise ConfigError(f"unknown host {host!r} (hosts: {', '.join(HOSTS)})")
    win = platform.startswith("win")
    mac = platform == "darwin"
    j = ntpath.join if win else posixpath.join
    appdata = env.get("APPDATA") or j(home, "AppData", "Roaming")
    xdg = env.get("XDG_CONFIG_HOME") or j(home, ".config")
    mac_support = j(home, "Library", "Application Support")
    if host == "claude-desktop":
        base = appdata if win else mac_support if mac else xdg
        return j(base, "Claude", "claude_desktop_config.json")
    if host in ("claude-code", "claude-code-local"):
        return j(home, ".claude.json")
    if host == "cursor":
        return j(home, ".cursor", "mcp.json")
    if host == "windsurf":
        return j(home, ".codeium", "windsurf", "mcp_config.json")
    if host == "gemini":
        return j(home, ".gemini", "settings.json")
    if host == "vscode":
        base = appdata if win else mac_support if mac else xdg
        return j(base, "Code", "User", "mcp.json")
    if host == "codex":
        return j(env.get("CODEX_HOME") or j(home, ".codex"), "config.toml")
    # zed: ~/.config/zed on Linux and macOS, %APPDATA%\Zed on Windows
    return j(appdata, "Zed", "settings.json") if win else j(xdg, "zed", "settings.json")
