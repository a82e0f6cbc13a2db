"""A wrapped entry whose key the user renamed carries its wrap record under
the old name (mcptap/hosts/memo.py ``claim``); records of servers gone from
the file are stale: reported by wrap, dropped by unwrap."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcptap.hosts import dialects
from mcptap.hosts.wrap import WrapSpec, unwrap, wrap

SPEC = WrapSpec(("/opt/mcptap/bin/mcptap",), "/caps")
HTTP = WrapSpec(SPEC.launcher, "/caps", http=True)
FS = '{"mcpServers": {"fs": {"command": "npx", "args": ["fs"]}, "web": {"url": "https://x.example/mcp"}}}'


def notes(out: Any) -> dict[str, tuple[str, str]]:
    return {n.name: (n.action, n.detail) for n in out.notes}


def rename(text: str, old: str, new: str) -> str:
    return text.replace(f'"{old}": {{', f'"{new}": {{', 1)


@pytest.mark.parametrize("edit", [False, True])
def test_unwrap_finds_the_record_of_a_renamed_entry(edit: bool) -> None:
    """Before: "files: left as it is: … has no wrap record (wrapped by hand?)",
    exit 0, the entry still wrapped, and the ``fs`` record stayed for good."""
    once = wrap(dialects.MCP_SERVERS, FS, None, HTTP)
    moved = rename(rename(once.text, "fs", "files"), "web", "site")
    if edit:                                     # the wrapped line edited too: only its --name fs tells
        moved = moved.replace('"--name", "fs",', '"--name", "fs", "--redact",')
    back = unwrap(dialects.MCP_SERVERS, moved, once.memo)
    got = notes(back)
    assert got["files"][0] == ("restored-args" if edit else "restored") and "'fs'" in got["files"][1]
    assert got["site"][0] in ("restored", "restored-args") and "'web'" in got["site"][1]
    servers = json.loads(back.text)["mcpServers"]
    assert servers == {"files": {"command": "npx", "args": ["fs"]}, "site": {"url": "https://x.example/mcp"}}
    assert back.memo["servers"] == {}


def test_wrap_rewraps_a_renamed_entry_under_its_new_name() -> None:
    once = wrap(dialects.MCP_SERVERS, FS, None, SPEC)
    moved = rename(once.text, "fs", "files")
    again = wrap(dialects.MCP_SERVERS, moved, once.memo, SPEC)
    action, detail = notes(again)["files"]
    assert action == "rewrapped" and "'fs'" in detail
    args = json.loads(again.text)["mcpServers"]["files"]["args"]
    assert args == ["record", "--dir", "/caps", "--name", "files", "--", "npx", "fs"]     # one tap, the new name
    assert set(again.memo["servers"]) == {"files"}
    assert unwrap(dialects.MCP_SERVERS, again.text, again.memo).text == rename(FS, "fs", "files")


def test_stale_records_are_reported_by_wrap_and_dropped_by_unwrap() -> None:
    once = wrap(dialects.MCP_SERVERS, FS, None, SPEC)
    gone = '{"mcpServers": {"web": {"url": "https://x.example/mcp"}}}'       # the fs entry removed
    w = wrap(dialects.MCP_SERVERS, gone, once.memo, SPEC)
    assert notes(w)["fs"][0] == "stale" and "mcptap unwrap" in notes(w)["fs"][1]
    assert set(w.memo["servers"]) == {"fs"} and w.text == gone
    assert "fs" not in notes(wrap(dialects.MCP_SERVERS, gone, once.memo, SPEC, ["web"]))
    named = unwrap(dialects.MCP_SERVERS, gone, once.memo, ["web"])         # only the named servers
    assert "fs" not in notes(named) and set(named.memo["servers"]) == {"fs"}
    u = unwrap(dialects.MCP_SERVERS, gone, once.memo)
    assert notes(u)["fs"][0] == "dropped" and u.memo["servers"] == {} and u.text == gone


def test_another_scopes_records_are_not_stale() -> None:
    text = json.dumps({"mcpServers": {"u": {"command": "a"}},
                       "projects": {"/p": {"mcpServers": {"l": {"command": "b"}}}}}, indent=2)
    local = dialects.claude_code_local("/p")
    one = wrap(dialects.MCP_SERVERS, text, None, SPEC)
    both = wrap(local, one.text, one.memo, SPEC)
    assert set(both.memo["servers"]) == {"u", "projects[/p]:l"}
    for dialect in (dialects.MCP_SERVERS, local):
        assert {a for a, _ in notes(wrap(dialect, both.text, both.memo, SPEC)).values()} == {"unchanged"}
    user = unwrap(dialects.MCP_SERVERS, both.text, both.memo)
    assert set(user.memo["servers"]) == {"projects[/p]:l"}
    assert unwrap(local, user.text, user.memo).text == text
