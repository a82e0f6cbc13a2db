"""Codex TOML with CRLF line ends: a multi-line string holds the line breaks
a TOML reader gives (each "\\n"), not the file's raw CRLF. Before, tomlkit's
raw value went into the wrapped command: the server got '{\\r\\n' where it
had got '{\\n'."""

from __future__ import annotations

import tomllib

import pytest

from mcptap.hosts.dialects import CODEX
from mcptap.hosts.wrap import WrapSpec, unwrap, wrap


@pytest.mark.parametrize("quote", ["'''", '"""'])
def test_wrapped_args_are_the_values_codex_reads(quote: str) -> None:
    # the last arg is a basic string whose escapes make a real CR LF: that one stays
    text = f'[mcp_servers.x]\r\ncommand = "srv"\r\nargs = ["--config", {quote}{{\r\n  "a": 1\r\n}}{quote}, "t\\r\\n"]\r\n'
    before = tomllib.loads(text)["mcp_servers"]["x"]
    out = wrap(CODEX, text, None, WrapSpec(("/bin/mcptap",), "/caps"))
    after = tomllib.loads(out.text)["mcp_servers"]["x"]
    assert after["args"][after["args"].index("--") + 1:] == [before["command"], *before["args"]]
    assert after["args"][-2:] == ['{\n  "a": 1\n}', "t\r\n"]
    assert unwrap(CODEX, out.text, out.memo).text == text


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("sub", ["[mcp_servers.b.env]", "[[mcp_servers.b.hooks]]"])
@pytest.mark.parametrize("bom", ["", "\ufeff"], ids=["plain", "bom"])
def test_wrap_changes_only_command_and_args_lines(eol: str, sub: str, bom: str) -> None:
    # a sub-table right after the table's keys once got a blank line (LF, whatever the file's line
    # ends) in front of it from tomlkit; a leading BOM (Windows editors) was read as an empty key
    # and the file refused
    text = f'{bom}# mine{eol}[mcp_servers.b]{eol}command = "b"{eol}{sub}{eol}Y = "2"{eol}'
    out = wrap(CODEX, text, None, WrapSpec(("/bin/mcptap",), "/caps"))
    lines = out.text.split(eol)
    assert out.text.startswith(bom + "# mine" + eol) and out.text.count("\n") == out.text.count(eol) == text.count(eol) + 1
    assert lines[2].startswith("command = ") and lines[3].startswith("args = [") and lines[4] == sub
    assert tomllib.loads(out.text.removeprefix(bom))["mcp_servers"]["b"]["args"][-2:] == ["--", "b"]
    assert unwrap(CODEX, out.text, out.memo).text == text
