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
