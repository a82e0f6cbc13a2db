"""End to end, one test per host dialect: `mcptap wrap` a configuration that
starts the official SDK server (sdk_server.py); start the wrapped entry the
way a host does — the SDK's stdio client with the entry's command, args and
env, the environment reduced to PATH=/usr/bin:/bin and HOME, so PATH does
not hold mcptap — and run a real session; a capture lands in --dir and
`mcptap ls --dir` lists it; wrapping twice equals once; `mcptap unwrap`
gives back the original bytes (comments included)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcptap.hosts import jsonc
from sdk_scenario import EXPECTED, drive

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent
SERVER = str(HERE / "sdk_server.py")
PY = sys.executable
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
J = json.dumps


def mcptap(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAP, *args], capture_output=True, text=True, timeout=60)


def flat(servers_key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda doc: doc[servers_key]["sdk"]


# (file name, original text, how to read the wrapped file, how to get the sdk entry, extra checks)
CASES: dict[str, tuple[str, str, Callable[[str], Any], Callable[[Any], dict[str, Any]]]] = {
    "claude-desktop": ("claude_desktop_config.json", f"""{{
  "mcpServers": {{
    "sdk": {{
      "command": {J(PY)},
      "args": [{J(SERVER)}]
    }}
  }},
  "globalShortcut": ""
}}
""", json.loads, flat("mcpServers")),
    "cursor": ("mcp.json", f"""{{"mcpServers": {{"sdk": {{"command": {J(PY)}, "args": [{J(SERVER)}], "env": {{"E2E_FROM_ENTRY": "1"}}}},
  "remote": {{"url": "https://example.com/mcp"}}}}}}
""", json.loads, flat("mcpServers")),
    "windsurf": ("mcp_config.json", f"""{{
    "mcpServers": {{
        "sdk": {{
            "command": {J(PY)},
            "args": [
                {J(SERVER)}
            ],
            "disabled": false
        }},
        "zap": {{
            "serverUrl": "https://example.com/sse"
        }}
    }}
}}""", json.loads, flat("mcpServers")),
    "gemini": ("settings.json", f"""{{
  "theme": "GitHub",
  "mcpServers": {{
    "sdk": {{
      "command": {J(PY)},
      "args": [{J(SERVER)}],
      "cwd": "/",
      "timeout": 30000,
      "trust": false
    }}
  }}
}}
""", json.loads, flat("mcpServers")),
    "claude-code": (".mcp.json", f"""{{
  "mcpServers": {{
    "sdk": {{
      "type": "stdio",
      "command": {J(PY)},
      "args": [{J(SERVER)}],
      "env": {{}}
    }}
  }}
}}
""", json.loads, flat("mcpServers")),
    "vscode": ("mcp.json", f"""{{
  // VS Code workspace servers
  "inputs": [
    {{"type": "promptString", "id": "token", "description": "Token", "password": true}},
  ],
  "servers": {{
    "sdk": {{
      "type": "stdio", /* the SDK test server */
      "command": {J(PY)},
      "args": [
        {J(SERVER)}, // the script
      ],
    }},
    "web": {{"type": "http", "url": "https://example.com/mcp"}},
  }},
}}
""", lambda t: jsonc.to_python(jsonc.parse(t)), flat("servers")),
    "codex": ("config.toml", f"""# Codex
model = "o3"

[mcp_servers.sdk]   # the SDK test server
command = {J(PY)}
args = [{J(SERVER)}]
startup_timeout_sec = 30

[mcp_servers.sdk.env]
E2E_FROM_ENTRY = "1"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
""", tomllib.loads, lambda d: d["mcp_servers"]["sdk"]),
    "zed": ("settings.json", f"""// Zed settings
{{
  "ui_font_size": 16,
  "context_servers": {{
    "sdk": {{
      "source": "custom",
      "command": {J(PY)},
      "args": [{J(SERVER)}],
      "env": {{}},
    }},
  }},
}}
""", lambda t: jsonc.to_python(jsonc.parse(t)), flat("context_servers")),
    "zed-legacy": ("settings.json", f"""{{
  "context_servers": {{
    "sdk": {{
      "command": {{"path": {J(PY)}, "args": [{J(SERVER)}], "env": {{"E2E_FROM_ENTRY": "1"}}}},
      "settings": {{}}
    }}
  }}
}}
""", json.loads, lambda d: {"command": d["context_servers"]["sdk"]["command"]["path"],
                            "args": d["context_servers"]["sdk"]["command"]["args"],
                            "env": d["context_servers"]["sdk"]["command"]["env"]}),
}


@pytest.mark.parametrize("host", list(CASES))
async def test_wrapped_entry_records_a_real_session(host: str, tmp_path: Path) -> None:
    filename, original, load, entry_of = CASES[host]
    cfg = tmp_path / filename
    cfg.write_bytes(original.encode())
    captures = tmp_path / "captures"

    p = mcptap("wrap", "--config", str(cfg), "--dir", str(captures))
    assert p.returncode == 0, p.stderr
    wrapped = cfg.read_bytes()
    assert wrapped != original.encode()
    assert Path(str(cfg) + ".mcptap-backup").read_bytes() == original.encode()
    for line in original.splitlines():
        if line.strip().startswith(("//", "#")) or "/*" in line:
            assert line.split("//")[-1].split("#")[-1] in wrapped.decode(), f"comment lost: {line!r}"

    entry = entry_of(load(wrapped.decode()))
    assert os.path.isabs(entry["command"]) and "record" in entry["args"]
    assert shutil.which("mcptap", path="/usr/bin:/bin") is None, "the reduced PATH must not find mcptap"
    assert entry["args"][-2:] == [PY, SERVER]
    # the host: only PATH=/usr/bin:/bin and HOME (the SDK adds LOGNAME/SHELL/TERM/USER if set) plus the entry's env
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **entry.get("env", {})}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=entry.get("cwd"))
    async with Client(params, mode="legacy") as client:
        got, progress = await drive(client)
    assert got == EXPECTED and progress == [1.0, 2.0, 3.0]

    p = mcptap("ls", "--dir", str(captures), "--format", "json")
    assert p.returncode == 0, p.stderr
    listed = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(listed) == 1, listed
    cap = listed[0]
    assert cap["name"] == "sdk" and cap["transport"] == "stdio" and cap["status"] == "complete"
    assert cap["messages"] > 10 and not cap["no_traffic"] and cap["severities"].get("error", 0) == 0
    assert cap["revision"] and Path(cap["path"]).parent == captures
    text = mcptap("ls", "--dir", str(captures))
    assert text.returncode == 0 and "sdk" in text.stdout and "complete" in text.stdout

    p = mcptap("wrap", "--config", str(cfg), "--dir", str(captures))
    assert p.returncode == 0, p.stderr
    assert cfg.read_bytes() == wrapped, "wrapping twice must equal wrapping once"

    p = mcptap("unwrap", "--config", str(cfg))
    assert p.returncode == 0, p.stderr
    assert cfg.read_bytes() == original.encode()
    assert not Path(str(cfg) + ".mcptap-wrap.json").exists()
