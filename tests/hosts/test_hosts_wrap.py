"""Wrap/unwrap on every dialect: byte-exact restore, idempotence, edits
elsewhere survive, detection, bad input; property test over generated
configurations (JSON/JSONC with comments and trailing commas, TOML)."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.hosts import dialects, jsonc
from mcptap.hosts.errors import ConfigError, ConfigSyntaxError
from mcptap.hosts.locations import HOSTS, default_path
from mcptap.hosts.wrap import WrapSpec, parse_wrapped, tap_port, tap_url, text_change, unwrap, wrap

SPEC = WrapSpec(("/opt/mcptap/bin/mcptap",), "/home/u/captures")
PY_SPEC = WrapSpec(("/opt/py/bin/python3", "-m", "mcptap"), "/caps", keep=5)

VSCODE = """{
  // Workspace MCP servers
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "API key", "password": true},
  ],
  "servers": {
    "time": {
      "type": "stdio",
      "command": "uvx", // the launcher
      "args": [
        "mcp-server-time",   /* the package */
        "--local-timezone=UTC",
      ],
      "env": {"KEY": "${input:api-key}"},
    },
    "web": {"type": "http", "url": "https://example.com/mcp"},
  },
}
"""

CODEX = """# Codex configuration
model = "o3"

[mcp_servers.time]   # the time server
command = "uvx"
args = ["mcp-server-time"]   # package
startup_timeout_sec = 20

[mcp_servers.time.env]
TZ = "UTC"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"

[mcp_servers.bare]
command = "/usr/local/bin/srv"
"""

ZED = """// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "time": {"source": "custom", "command": "uvx", "args": ["mcp-server-time"], "env": {}},
    "old": {
      "command": {"path": "/usr/bin/old-server", "args": ["--stdio"], "env": {"A": "b"}},
      "settings": {},
    },
    "ext": {"settings": {"token": "x"}},
  },
}
"""

MCP = """{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time"],
      "env": {"TZ": "UTC"}
    },
    "noargs": {"command": "srv"},
    "gem": {"httpUrl": "https://example.com/mcp", "timeout": 30000},
    "wind": {"serverUrl": "https://example.com/sse"}
  },
  "globalShortcut": "Ctrl+Space"
}
"""


@pytest.mark.parametrize("text, dialect", [(VSCODE, "vscode"), (CODEX, "codex"), (ZED, "zed"), (MCP, "mcpServers")])
def test_roundtrip_and_idempotence(text: str, dialect: str) -> None:
    d = dialects.detect(text)
    assert d.name == dialect
    for spec in (SPEC, PY_SPEC):
        once = wrap(d, text, None, spec)
        assert once.changed and once.text != text
        twice = wrap(d, once.text, once.memo, spec)
        assert twice.text == once.text and not twice.changed
        assert {n.action for n in twice.notes} <= {"unchanged", "skipped"}
        back = unwrap(d, once.text, once.memo)
        assert back.text == text
        assert back.memo["servers"] == {}


def test_wrapped_entry_runs_mcptap_with_dir_and_name() -> None:
    out = wrap(dialects.MCP_SERVERS, MCP, None, PY_SPEC, ["time"])
    entry = json.loads(out.text)["mcpServers"]["time"]
    assert entry == {"command": "/opt/py/bin/python3",
                     "args": ["-m", "mcptap", "record", "--dir", "/caps", "--name", "time", "--keep", "5", "--", "uvx", "mcp-server-time"],
                     "env": {"TZ": "UTC"}}
    assert json.loads(out.text)["mcpServers"]["noargs"] == {"command": "srv"}        # not named: untouched
    assert parse_wrapped(entry["command"], entry["args"]) == ("uvx", ["mcp-server-time"])


def test_jsonc_comments_and_inputs_survive() -> None:
    out = wrap(dialects.VSCODE, VSCODE, None, SPEC)
    for piece in ("// Workspace MCP servers", "// the launcher", '"inputs": [', '"type": "stdio"', '"KEY": "${input:api-key}"'):
        assert piece in out.text
    value = jsonc.to_python(jsonc.parse(out.text))
    assert value["servers"]["time"]["args"][-3:] == ["--", "uvx", "mcp-server-time", "--local-timezone=UTC"][-3:]
    assert value["servers"]["web"] == {"type": "http", "url": "https://example.com/mcp"}


def test_codex_tables_and_subtables() -> None:
    out = wrap(dialects.CODEX, CODEX, None, SPEC)
    doc = tomllib.loads(out.text)
    t = doc["mcp_servers"]["time"]
    assert t["command"] == SPEC.launcher[0]
    assert t["args"][-3:] == ["--", "uvx", "mcp-server-time"] and t["env"] == {"TZ": "UTC"} and t["startup_timeout_sec"] == 20
    assert doc["mcp_servers"]["bare"]["args"][-2:] == ["--", "/usr/local/bin/srv"]
    assert doc["mcp_servers"]["figma"] == tomllib.loads(CODEX)["mcp_servers"]["figma"]
    assert "# the time server" in out.text and 'model = "o3"' in out.text


def test_zed_both_command_shapes() -> None:
    out = wrap(dialects.ZED, ZED, None, SPEC)
    value = jsonc.to_python(jsonc.parse(out.text))["context_servers"]
    assert value["time"]["source"] == "custom" and value["time"]["command"] == SPEC.launcher[0]
    assert value["old"]["command"]["path"] == SPEC.launcher[0]
    assert value["old"]["command"]["args"][-3:] == ["--", "/usr/bin/old-server", "--stdio"]
    assert value["old"]["command"]["env"] == {"A": "b"}
    assert value["ext"] == {"settings": {"token": "x"}}
    assert {n.name: n.action for n in wrap(dialects.ZED, ZED, None, SPEC).notes}["ext"] == "skipped"


def test_unwrap_after_edits_elsewhere_is_exact_there() -> None:
    once = wrap(dialects.MCP_SERVERS, MCP, None, SPEC)
    edited = once.text.replace('"globalShortcut": "Ctrl+Space"', '"globalShortcut": "Alt+Space",\n  "new": [1, 2]')
    back = unwrap(dialects.MCP_SERVERS, edited, once.memo)
    assert back.text == MCP.replace('"globalShortcut": "Ctrl+Space"', '"globalShortcut": "Alt+Space",\n  "new": [1, 2]')


def test_unwrap_of_an_edited_entry_keeps_the_edit() -> None:
    once = wrap(dialects.MCP_SERVERS, MCP, None, SPEC, ["time"])
    edited = once.text.replace('"/home/u/captures", "--name", "time", "--", "uvx", "mcp-server-time"',
                               '"/home/u/captures", "--name", "time", "--", "uvx", "mcp-server-time", "--verbose"')
    back = unwrap(dialects.MCP_SERVERS, edited, once.memo)
    assert json.loads(back.text)["mcpServers"]["time"] == {"command": "uvx", "args": ["mcp-server-time", "--verbose"], "env": {"TZ": "UTC"}}
    # an edit inside the changed span: the original command and args come from the wrapped args
    edited = once.text.replace('"/home/u/captures"', '"/elsewhere"').replace('"mcp-server-time"]', '"mcp-server-time", "-v"]')
    back = unwrap(dialects.MCP_SERVERS, edited, once.memo)
    assert [n.action for n in back.notes if n.name == "time"] == ["restored-args"]
    assert json.loads(back.text)["mcpServers"]["time"] == {"command": "uvx", "args": ["mcp-server-time", "-v"], "env": {"TZ": "UTC"}}


def test_unwrap_without_sidecar_uses_the_wrapped_args() -> None:
    once = wrap(dialects.MCP_SERVERS, MCP, None, SPEC)
    back = unwrap(dialects.MCP_SERVERS, once.text, None)
    servers = json.loads(back.text)["mcpServers"]
    assert servers["time"]["command"] == "uvx" and servers["time"]["args"] == ["mcp-server-time"]
    assert servers["noargs"] == {"command": "srv", "args": []}


def test_rewrap_with_another_dir_then_unwrap_is_exact() -> None:
    once = wrap(dialects.VSCODE, VSCODE, None, SPEC)
    again = wrap(dialects.VSCODE, once.text, once.memo, WrapSpec(SPEC.launcher, "/elsewhere"))
    assert [n.action for n in again.notes if n.name == "time"] == ["rewrapped"]
    assert '"/elsewhere"' in again.text and '"/home/u/captures"' not in again.text
    assert unwrap(dialects.VSCODE, again.text, again.memo).text == VSCODE


def test_http_mode_points_url_entries_at_a_stable_local_tap() -> None:
    spec = WrapSpec(SPEC.launcher, SPEC.directory, http=True)
    out = wrap(dialects.MCP_SERVERS, MCP, None, spec)
    servers = json.loads(out.text)["mcpServers"]
    assert servers["gem"]["httpUrl"] == f"http://127.0.0.1:{tap_port('gem')}/mcp" == tap_url("gem", "https://example.com/mcp")
    assert servers["wind"]["serverUrl"] == f"http://127.0.0.1:{tap_port('wind')}/sse"
    note = next(n for n in out.notes if n.name == "gem")
    assert note.command == (SPEC.launcher[0], "record", "--upstream", "https://example.com/mcp", "--listen",
                            f"127.0.0.1:{tap_port('gem')}", "--dir", SPEC.directory, "--name", "gem")
    assert tap_port("gem") == tap_port("gem") and 41000 <= tap_port("gem") < 49000
    assert wrap(dialects.MCP_SERVERS, out.text, out.memo, spec).text == out.text
    assert unwrap(dialects.MCP_SERVERS, out.text, out.memo).text == MCP
    # without --http the URL entries are left alone
    assert json.loads(wrap(dialects.MCP_SERVERS, MCP, None, SPEC).text)["mcpServers"]["gem"]["httpUrl"] == "https://example.com/mcp"


def test_bad_input() -> None:
    with pytest.raises(ConfigError, match="no server named 'nope'"):
        wrap(dialects.MCP_SERVERS, MCP, None, SPEC, ["nope"])
    with pytest.raises(ConfigSyntaxError):
        dialects.detect('{"mcpServers": {')
    with pytest.raises(ConfigSyntaxError):
        dialects.detect("[mcp_servers.x\ncommand = 1", "config.toml")
    with pytest.raises(ConfigError, match="no MCP server section"):
        dialects.detect('{"theme": "x"}')
    assert dialects.MCP_SERVERS.servers('{"mcpServers": {"a": {"command": "x", "args": [1]}}}')["a"].problem == \
        "args is not a list of strings"
    with pytest.raises(ConfigError, match="top level is not a JSON object"):
        dialects.MCP_SERVERS.servers("[]")


def test_detection() -> None:
    assert dialects.detect('{"mcp": {"servers": {}}}').name == "vscode-settings"
    assert dialects.detect("[mcp_servers.a]\ncommand = 'x'\n").name == "codex"
    assert dialects.detect("", "config.toml").name == "codex"


def test_default_locations() -> None:
    env: dict[str, str] = {}
    assert default_path("claude-desktop", "darwin", "/Users/u", env) == "/Users/u/Library/Application Support/Claude/claude_desktop_config.json"
    assert default_path("claude-desktop", "win32", "C:\\Users\\u", {"APPDATA": "C:\\Users\\u\\AppData\\Roaming"}) == \
        "C:\\Users\\u\\AppData\\Roaming\\Claude\\claude_desktop_config.json"
    assert default_path("vscode", "linux", "/home/u", env) == "/home/u/.config/Code/User/mcp.json"
    assert default_path("codex", "linux", "/home/u", {"CODEX_HOME": "/srv/codex"}) == "/srv/codex/config.toml"
    assert default_path("zed", "darwin", "/Users/u", env) == "/Users/u/.config/zed/settings.json"
    assert default_path("windsurf", "linux", "/home/u", env) == "/home/u/.codeium/windsurf/mcp_config.json"
    assert set(HOSTS) == {"claude-desktop", "claude-code", "claude-code-local", "cursor", "windsurf", "gemini", "vscode", "codex", "zed"}


def test_text_change_is_unique() -> None:
    old = 'a "x" b "x" c'
    new = 'a "y" b "x" c'
    before, after = text_change(old, new)
    assert new.count(after) == 1 and new.replace(after, before) == old


# -- property: unwrap(wrap(x)) == x over generated configurations ----------------------

NAMES = st.text(st.sampled_from("abcxyz-_é @"), min_size=1, max_size=6)
WORDS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)


@st.composite
def entries(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["stdio", "stdio", "url", "other"]))
    e: dict[str, Any] = {}
    if kind == "stdio":
        e["command"] = draw(WORDS.filter(bool))
        if draw(st.booleans()):
            e["args"] = draw(st.lists(WORDS, max_size=3))
    elif kind == "url":
        e[draw(st.sampled_from(["url", "httpUrl", "serverUrl"]))] = "https://h.example/" + draw(st.text("abc/", max_size=5))
    if draw(st.booleans()):
        e["env"] = draw(st.dictionaries(st.text("ABC", min_size=1, max_size=3), WORDS, max_size=2))
    if draw(st.booleans()):
        e["type"] = "stdio" if kind == "stdio" else "http"
    keys = list(e)
    order = draw(st.permutations(keys))
    return {k: e[k] for k in order}


def render(value: Any, draw: Any, depth: int = 0) -> str:
    """JSONC with drawn layout: inline or one member per line, comments,
    trailing commas, CRLF or LF."""
    if not isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=draw(st.booleans()))
    items = list(value.items()) if isinstance(value, dict) else list(value)
    if not items:
        return "{}" if isinstance(value, dict) else "[]"
    multiline = draw(st.booleans())
    nl = draw(st.sampled_from(["\n", "\r\n"])) if multiline else ""
    pad = " " * (2 * (depth + 1)) if multiline else ""
    parts = []
    for item in items:
        comment = draw(st.sampled_from(["", "", "/* c */ ", "// note" + (nl or "\n") + pad]))
        body = (f"{json.dumps(item[0])}{draw(st.sampled_from([':', ': ', ' : ']))}{render(item[1], draw, depth + 1)}"
                if isinstance(value, dict) else render(item, draw, depth + 1))
        parts.append(comment + body)
    sep = "," + (nl + pad if multiline else draw(st.sampled_from(["", " "])))
    trailing = "," if draw(st.booleans()) else ""
    close_pad = " " * (2 * depth) if multiline else ""
    open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return f"{open_}{nl}{pad}{sep.join(parts)}{trailing}{nl}{close_pad}{close}"


@st.composite
def json_configs(draw: Any) -> tuple[str, dialects.Dialect]:
    dialect = draw(st.sampled_from([dialects.MCP_SERVERS, dialects.VSCODE, dialects.ZED]))
    servers = draw(st.dictionaries(NAMES, entries(), max_size=4))
    top: dict[str, Any] = {dialect.path[0]: servers}
    if draw(st.booleans()):
        top["inputs"] = [{"id": "k", "type": "promptString"}]
    if draw(st.booleans()):
        top = {"theme": "x", **top}
    lead = draw(st.sampled_from(["", "// settings\n", "\ufeff"]))
    tail = draw(st.sampled_from(["", "\n", "\n// end\n"]))
    return lead + render(top, draw) + tail, dialect


def toml_string(s: str) -> str:
    return json.dumps(s)        # a JSON string is a valid TOML basic string for these characters


@st.composite
def toml_configs(draw: Any) -> tuple[str, dialects.Dialect]:
    lines = [draw(st.sampled_from(["", "# codex\n", 'model = "o3"\n\n']))]
    names = draw(st.lists(st.text("abcxyz_-", min_size=1, max_size=5), unique=True, max_size=4))
    for name in names:
        e = draw(entries())
        style = draw(st.sampled_from(["table", "inline"]))
        kv = []
        for k, v in e.items():
            if k == "env":
                continue
            if k in ("httpUrl", "serverUrl"):
                k = "url"
            if isinstance(v, str):
                val = toml_string(v)
            else:
                sep, trailing = draw(st.sampled_from([", ", ","])), draw(st.sampled_from(["", ","]))
                val = "[" + sep.join(toml_string(a) for a in v) + trailing + "]"
            kv.append((k, val))
        if style == "inline":
            lines.append(f"[mcp_servers]\n{name} = {{ " + ", ".join(f"{k} = {v}" for k, v in kv) + " }\n" if kv else "")
        else:
            comment = draw(st.sampled_from(["", "  # server"]))
            lines.append(f"[mcp_servers.{name}]{comment}\n" + "".join(f"{k} = {v}{draw(st.sampled_from(['', '  # c']))}\n" for k, v in kv))
            if e.get("env"):
                lines.append(f"[mcp_servers.{name}.env]\n" + "".join(f"{k} = {toml_string(v)}\n" for k, v in e["env"].items()))
        lines.append(draw(st.sampled_from(["", "\n"])))
    text = "".join(lines)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        from hypothesis import assume
        assume(False)
    return text, dialects.CODEX


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.one_of(json_configs(), toml_configs()), st.sampled_from([SPEC, PY_SPEC, WrapSpec(SPEC.launcher, "/d", http=True)]))
def test_unwrap_of_wrap_is_identity(config: tuple[str, dialects.Dialect], spec: WrapSpec) -> None:
    text, dialect = config
    once = wrap(dialect, text, None, spec)
    assert wrap(dialect, once.text, once.memo, spec).text == once.text
    assert unwrap(dialect, once.text, once.memo).text == text
    # the wrapped file still parses, and only command/args/URLs changed
    before = dialect.servers(text)
    after = dialect.servers(once.text)
    assert list(before) == list(after)
    for name, entry in before.items():
        if entry.kind == "stdio":
            assert after[name].command == spec.launcher[0]
            assert parse_wrapped(after[name].command or "", after[name].args or ()) == (entry.command, list(entry.args or ()))
        elif entry.kind == "url" and spec.http:
            assert after[name].url == tap_url(name, entry.url or "")
        else:
            assert after[name] == entry


CLAUDE_JSON = """{
  "numStartups": 12,
  "mcpServers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {}}},
  "projects": {
    "/home/u/proj": {
      "allowedTools": [],
      "mcpServers": {"time": {"type": "stdio", "command": "npx", "args": ["-y", "time-server"], "env": {}}}
    },
    "/home/u/other": {"mcpServers": {}}
  }
}
"""


def test_claude_code_user_and_local_scopes_share_one_file() -> None:
    local = dialects.claude_code_local("/home/u/proj")
    user = dialects.detect(CLAUDE_JSON)
    assert user is dialects.MCP_SERVERS and list(local.servers(CLAUDE_JSON)) == ["time"]
    a = wrap(user, CLAUDE_JSON, None, SPEC)
    b = wrap(local, a.text, a.memo, SPEC)
    value = json.loads(b.text)
    assert value["mcpServers"]["time"]["args"][-2:] == ["uvx", "mcp-server-time"]
    assert value["projects"]["/home/u/proj"]["mcpServers"]["time"]["args"][-3:] == ["npx", "-y", "time-server"]
    assert set(b.memo["servers"]) == {"time", "projects[/home/u/proj]:time"}
    c = unwrap(user, b.text, b.memo)
    assert json.loads(c.text)["mcpServers"]["time"]["command"] == "uvx"
    assert set(c.memo["servers"]) == {"projects[/home/u/proj]:time"}
    assert unwrap(local, c.text, c.memo).text == CLAUDE_JSON
    assert dialects.claude_code_local("/nowhere").servers(CLAUDE_JSON) == {}
