"""`mcptap wrap --http` on URL entries a tap cannot stand in front of: a URL
the host fills in (``${VAR}``, ``${input:ID}``, ``$VAR``, ``{env:VAR}``) or
one that is not http(s). Before, each was rewritten (the placeholder ended
up in the tap URL's path, or the tap had no upstream) and wrap exited 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_wrap_cli import run

UNTAPPABLE = {
    "api": "${API_BASE_URL:-https://api.example.com}/mcp",
    "vsc": "https://${input:tenant}.example.com/mcp",
    "envv": "https://${env:HOST}/mcp",
    "gem": "https://$HOST/mcp",
    "oc": "https://{env:HOST}/mcp",
    "ftp": "ftp://x/y",
    "nohost": "http:///mcp",
}


@pytest.mark.parametrize("name", sorted(UNTAPPABLE))
def test_an_untappable_url_is_refused_and_left_as_it_is(tmp_path: Path, name: str) -> None:
    cfg = tmp_path / "mcp.json"
    text = json.dumps({"mcpServers": {name: {"type": "http", "url": UNTAPPABLE[name]},
                                      "ok": {"type": "http", "url": "https://api.example.com/mcp"}}}, indent=2)
    cfg.write_text(text)
    p = run("wrap", "--http", "--config", str(cfg), "--dir", str(tmp_path / "caps"))
    assert p.returncode == 1, p.stderr
    assert f"mcptap: {name}: refused: " in p.stderr and "left as it is" in p.stderr
    assert "--upstream " + UNTAPPABLE[name] not in p.stdout and "--upstream https://api.example.com/mcp" in p.stdout
    servers = json.loads(cfg.read_text())["mcpServers"]
    assert servers[name]["url"] == UNTAPPABLE[name]
    assert servers["ok"]["url"].startswith("http://127.0.0.1:")
    assert name not in json.loads((tmp_path / "mcp.json.mcptap-wrap.json").read_text())["servers"]


def test_codex_uses_a_url_as_written(tmp_path: Path) -> None:
    """Codex does not substitute in a url: a literal ``$`` (OData's
    ``$metadata``) is part of the upstream and the entry is wrapped."""
    cfg = tmp_path / "config.toml"
    cfg.write_text('[mcp_servers.od]\nurl = "https://api.example.com/odata/$metadata"\n')
    p = run("wrap", "--http", "--config", str(cfg), "--dir", str(tmp_path / "caps"))
    assert p.returncode == 0, p.stderr
    assert "/odata/$metadata" in cfg.read_text() and "127.0.0.1" in cfg.read_text()


@pytest.mark.parametrize(("url", "why"), [
    # an ESC in the port read "does not parse (bad port?)"; one in the host was tapped as it was
    ("https://api.example.com:443\x1b/mcp", "the URL holds a control character (https://api.example.com:443\\x1b/mcp)"),
    ("https://api\x1b.example.com/mcp", "the URL holds a control character (https://api\\x1b.example.com/mcp)"),
    ("https://api.example.com:4x3/mcp", "the URL does not parse (Port could not be cast to integer value as '4x3')"),
])
def test_a_url_that_cannot_be_tapped_says_why(tmp_path: Path, url: str, why: str) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"bad": {"type": "http", "url": url}}}, indent=2))
    p = run("wrap", "--http", "--config", str(cfg), "--dir", str(tmp_path / "caps"))
    assert p.returncode == 1, p.stderr
    assert f"mcptap: bad: refused: {why}; left as it is" in p.stderr, p.stderr
    assert "\x1b" not in p.stderr and json.loads(cfg.read_text())["mcpServers"]["bad"]["url"] == url
