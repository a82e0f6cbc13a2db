"""Wrap/unwrap facing what users and other tools leave in a configuration and
its sidecar: malformed wrap records, entries wrapped by hand or with options
the user added, several scopes holding the same entry, tap ports, TOML
layouts, text that cannot be UTF-8."""

from __future__ import annotations

from typing import Any

import pytest

from mcptap.hosts import dialects
from mcptap.hosts.wrap import WrapSpec, unwrap, wrap

SPEC = WrapSpec(("/opt/mcptap/bin/mcptap",), "/caps")
HTTP = WrapSpec(SPEC.launcher, "/caps", http=True)


def actions(out: Any) -> dict[str, str]:
    return {n.name: n.action for n in out.notes}


@pytest.mark.parametrize("original", ["https://x/mcp", {}, {"url": 3}, None, ["https://x/mcp"]])
def test_a_malformed_url_record_is_treated_as_absent_by_wrap(original: Any) -> None:
    text = '{"mcpServers": {"w": {"url": "https://x/mcp"}}}'
    memo = {"format": "mcptap-wrap", "version": 1,
            "servers": {"w": {"kind": "url", "before": "a", "after": "b", "original": original}}}
    out = wrap(dialects.MCP_SERVERS, text, memo, HTTP)
    assert actions(out) == {"w": "wrapped"}
    assert out.memo["servers"]["w"]["original"]["url"] == "https://x/mcp"
    assert unwrap(dialects.MCP_SERVERS, out.text, out.memo).text == text
    assert actions(wrap(dialects.MCP_SERVERS, text, memo, SPEC)) == {"w": "skipped"}


PLAIN = '{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}'


def args_of(text: str, name: str = "a") -> list[str]:
    return list(dialects.MCP_SERVERS.servers(text)[name].args or ())


def test_options_the_user_added_to_a_wrapped_entry_are_kept() -> None:
    once = wrap(dialects.MCP_SERVERS, PLAIN, None, SPEC)
    edited = once.text.replace('"record", ', '"record", "--redact", "--redact-key", "apiKey", ')
    again = wrap(dialects.MCP_SERVERS, edited, once.memo, SPEC)
    assert actions(again) == {"a": "unchanged"} and again.text == edited
    moved = wrap(dialects.MCP_SERVERS, edited, once.memo, WrapSpec(SPEC.launcher, "/elsewhere", keep=3))
    assert actions(moved) == {"a": "rewrapped"}
    assert args_of(moved.text) == ["record", "--dir", "/elsewhere", "--name", "a", "--keep", "3",
                                   "--redact", "--redact-key", "apiKey", "--", "node", "a.js"]
    assert unwrap(dialects.MCP_SERVERS, moved.text, moved.memo).text == PLAIN


HAND = ('{"mcpServers": {"files": {"command": "/usr/local/bin/mcptap", "args": ["record", "--redact", '
        '"--redact-key", "apiKey", "--name", "files", "--", "npx", "-y", "srv"]}}}')


@pytest.mark.parametrize("text", [HAND, HAND.replace('"--redact", "--redact-key", "apiKey", ', "")])
def test_a_tap_line_written_by_hand_is_left_alone(text: str) -> None:
    for memo in (None, {"format": "mcptap-wrap", "version": 1, "servers": {}}):
        out = wrap(dialects.MCP_SERVERS, text, memo, SPEC)
        assert actions(out) == {"files": "left"} and out.text == text and out.memo["servers"] == {}
        back = unwrap(dialects.MCP_SERVERS, text, memo)
        assert actions(back) == {"files": "left"} and back.text == text and not back.changed


def test_a_line_in_the_shape_wrap_writes_is_unwrapped_without_its_record() -> None:
    once = wrap(dialects.MCP_SERVERS, PLAIN, None, WrapSpec(SPEC.launcher, "/caps", keep=2))
    back = unwrap(dialects.MCP_SERVERS, once.text, None)
    assert actions(back) == {"a": "restored-args"} and args_of(back.text) == ["a.js"]


@pytest.mark.parametrize("launcher", [("/tmp/tap",), ("/usr/bin/python3", "-m", "mytap")])
def test_any_launcher_is_recognised_and_wrap_stays_idempotent(launcher: tuple[str, ...]) -> None:
    spec = WrapSpec(launcher, "/caps")
    once = wrap(dialects.MCP_SERVERS, PLAIN, None, spec)
    twice = wrap(dialects.MCP_SERVERS, once.text, once.memo, spec)
    assert actions(twice) == {"a": "unchanged"} and twice.text == once.text and twice.memo == once.memo
    # another launcher now: the line is rewritten, not nested
    other = wrap(dialects.MCP_SERVERS, once.text, once.memo, SPEC)
    assert actions(other) == {"a": "rewrapped"}
    assert dialects.MCP_SERVERS.servers(other.text)["a"].command == SPEC.launcher[0]
    assert args_of(other.text)[-3:] == ["--", "node", "a.js"] and args_of(other.text).count("--") == 1
    for text, memo in ((once.text, once.memo), (other.text, other.memo)):
        back = unwrap(dialects.MCP_SERVERS, text, memo)
        assert back.text == PLAIN and actions(back) == {"a": "restored"}


CLAUDE = """{
  "mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["fs"], "env": {}}},
  "projects": {"/tmp/brk1/proj": {"mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["fs"], "env": {}}}}}
}
"""


def test_unwrapping_one_scope_never_changes_another_scopes_entry() -> None:
    user, local = dialects.MCP_SERVERS, dialects.claude_code_local("/tmp/brk1/proj")
    a = wrap(local, CLAUDE, None, SPEC)
    b = wrap(user, a.text, a.memo, SPEC)
    # both ways round, untouched: exact
    for first, second in ((user, local), (local, user)):
        c = unwrap(first, b.text, b.memo)
        assert actions(c) == {"fs": "restored"}
        d = unwrap(second, c.text, c.memo)
        assert actions(d) == {"fs": "restored"} and d.text == CLAUDE
    # the user edits the LOCAL wrapped entry's capture dir: its recorded text is gone, the user
    # scope's identical text must not be taken for it
    at = b.text.rindex('"/caps"')
    edited = b.text[:at] + '"/mine"' + b.text[at + len('"/caps"'):]
    c = unwrap(local, edited, b.memo)
    assert actions(c) == {"fs": "restored-args"}
    assert user.servers(c.text) == user.servers(edited)                 # the user scope still wrapped
    assert local.servers(c.text)["fs"].args == ("fs",)
    d = unwrap(user, c.text, c.memo)
    assert actions(d) == {"fs": "restored"} and d.text == CLAUDE


def test_toml_splice_stays_in_its_table() -> None:
    text = '[mcp_servers.a]\ncommand = "npx"\nargs = ["fs"]\n\n[mcp_servers.b]\ncommand = "npx"\nargs = ["fs"]\n'
    once = wrap(dialects.CODEX, text, None, SPEC, ["a"])
    twice = wrap(dialects.CODEX, once.text, once.memo, SPEC, ["b"])
    edited = twice.text.replace('"/caps", "--name", "a"', '"/mine", "--name", "a"')
    back = unwrap(dialects.CODEX, edited, twice.memo, ["a"])
    assert dialects.CODEX.servers(back.text)["b"] == dialects.CODEX.servers(twice.text)["b"]
    assert dialects.CODEX.servers(back.text)["a"].args == ("fs",)
    assert unwrap(dialects.CODEX, back.text, back.memo).text == text


def test_url_servers_of_one_file_get_distinct_stable_tap_ports() -> None:
    from mcptap.hosts.wrap import tap_port
    text = '{"mcpServers": {"srv116": {"url": "https://a.example/mcp"}, "srv168": {"serverUrl": "https://b.example/sse?x=1"}}}'
    assert tap_port("srv116") == tap_port("srv168")           # crc32 mod 8000 collide
    once = wrap(dialects.MCP_SERVERS, text, None, HTTP)
    servers = dialects.MCP_SERVERS.servers(once.text)
    ports = {n: (e.url or "").split(":")[2].split("/")[0] for n, e in servers.items()}
    assert ports["srv116"] != ports["srv168"] and ports["srv116"] == str(tap_port("srv116"))
    listens = {n.name: n.command[n.command.index("--listen") + 1] for n in once.notes if n.command}
    assert listens == {n: f"127.0.0.1:{p}" for n, p in ports.items()}
    # stable: a re-run changes nothing; wrapping the first one anew later does not take the other's port
    again = wrap(dialects.MCP_SERVERS, once.text, once.memo, HTTP)
    assert again.text == once.text and set(actions(again).values()) == {"unchanged"}
    assert {n.name: n.command for n in again.notes} == {n.name: n.command for n in once.notes}
    half = unwrap(dialects.MCP_SERVERS, once.text, once.memo, ["srv116"])
    rewrapped = wrap(dialects.MCP_SERVERS, half.text, half.memo, HTTP)
    servers = dialects.MCP_SERVERS.servers(rewrapped.text)
    assert servers["srv168"].url == f"http://127.0.0.1:{ports['srv168']}/sse?x=1"
    assert servers["srv116"].url != f"http://127.0.0.1:{ports['srv168']}/mcp"
    back = unwrap(dialects.MCP_SERVERS, once.text, once.memo)
    assert back.text == text and set(actions(back).values()) == {"restored"}


@pytest.mark.parametrize("text", [
    'mcp_servers.fs.command = "npx"\nmcp_servers.fs.env.K = "v"\n',                       # dotted keys
    '[mcp_servers.fs.env]\nK = "v"\n\n[mcp_servers.fs]\ncommand = "npx"\n',               # sub-table first
    '[mcp_servers]\nfs.command = "npx"\nfs.args = ["a"]\n\n[mcp_servers.ok]\ncommand = "x"\n',
])
def test_codex_tables_split_over_several_places(text: str) -> None:
    once = wrap(dialects.CODEX, text, None, SPEC)                  # before: AttributeError (internal error)
    assert set(actions(once).values()) == {"wrapped"}
    assert dialects.CODEX.servers(once.text)["fs"].command == SPEC.launcher[0]
    assert wrap(dialects.CODEX, once.text, once.memo, SPEC).text == once.text
    back = unwrap(dialects.CODEX, once.text, once.memo)
    assert back.text == text and set(actions(back).values()) == {"restored"}


def test_codex_entry_untouched_by_a_table_appended_after_it_verifies() -> None:
    text = '[mcp_servers.a]\ncommand = "x"\n'
    once = wrap(dialects.CODEX, text, None, SPEC)
    appended = once.text + '\n# added later\n[mcp_servers.b]\ncommand = "y"\n'
    back = unwrap(dialects.CODEX, appended, once.memo, ["a"])
    assert actions(back) == {"a": "restored"}
    assert back.text == text + '\n# added later\n[mcp_servers.b]\ncommand = "y"\n'


@pytest.mark.parametrize("text", [
    '[mcp_servers.a]\r\ncommand = "x"\r\n\r\n[mcp_servers.b]\r\ncommand = "y"\r\nargs = []\r\n',
    'mcp_servers.a.command = "x"\r\n',
    '[mcp_servers]\r\na = { command = "x" }\r\n',
])
def test_codex_crlf_file_keeps_crlf_lines(text: str) -> None:
    import tomllib
    once = wrap(dialects.CODEX, text, None, SPEC)
    assert "\n" not in once.text.replace("\r\n", "") and "\r" not in once.text.replace("\r\n", "")
    assert tomllib.loads(once.text)["mcp_servers"]["a"]["args"][-2:] == ["--", "x"]
    assert unwrap(dialects.CODEX, once.text, once.memo).text == text
