"""`mcptap unwrap` is honest about what it restored: "restored exactly" only
when the entry then has the SHA-256 its wrap record keeps; a damaged sidecar
(whole, or one record) is a clear message and the fallback a missing sidecar
has (command and args from the wrapped arguments), never exit 2; what cannot
be restored without it (a --http URL) is said, exit 1. Unit cases on
hosts/wrap.py, CLI cases as a user runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcptap.hosts import dialects
from mcptap.hosts.wrap import WrapSpec, unwrap, wrap
from tests.cli.test_wrap_cli import CONFIG, run

SPEC = WrapSpec(("/opt/mcptap/bin/mcptap",), "/caps")
HTTP = WrapSpec(SPEC.launcher, "/caps", http=True)
TOML = '[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n\n[mcp_servers.time.env]\nTZ = "UTC"\n'


def _notes(out: object) -> dict[str, tuple[str, str]]:
    return {n.name: (n.action, n.detail) for n in out.notes}      # type: ignore[attr-defined]


@pytest.mark.parametrize("dialect, text, edit", [
    (dialects.MCP_SERVERS, CONFIG, ('"files": {"command"', '"files": {"env": {"A": "1"}, "command"')),
    (dialects.CODEX, TOML, ('TZ = "UTC"', 'TZ = "CET"')),
])
def test_restored_exactly_only_when_the_entry_is_the_original(dialect: dialects.Dialect, text: str, edit: tuple[str, str]) -> None:
    name = "files" if dialect is dialects.MCP_SERVERS else "time"
    once = wrap(dialect, text, None, SPEC)
    assert all("entry_sha256" in r for r in once.memo["servers"].values())
    exact = unwrap(dialect, once.text, once.memo)
    assert exact.text == text
    assert _notes(exact)[name] == ("restored", "original entry restored exactly (SHA-256 verified)")
    # the user edited the wrapped entry outside the text wrapping changed: the splice still
    # finds its place, but the entry is not the original any more (before: "restored exactly")
    edited = once.text.replace(*edit)
    assert edited != once.text
    back = unwrap(dialect, edited, once.memo)
    action, detail = _notes(back)[name]
    assert action == "restored-args" and "differs from the original" in detail
    assert back.text == text.replace(*edit)


def test_a_record_without_a_digest_is_not_called_verified() -> None:
    once = wrap(dialects.MCP_SERVERS, CONFIG, None, SPEC)
    for r in once.memo["servers"].values():
        del r["entry_sha256"]                           # a sidecar written by an older mcptap
    back = unwrap(dialects.MCP_SERVERS, once.text, once.memo)
    assert back.text == CONFIG
    assert all(a == "restored" and "not verified" in d for a, d in _notes(back).values() if a != "not-wrapped")


@pytest.mark.parametrize("bad", [None, 5, {"kind": "stdio"}, {"kind": "url", "before": "", "after": "x", "original": {}}])
def test_a_damaged_record_falls_back_to_the_wrapped_arguments(bad: object) -> None:
    once = wrap(dialects.MCP_SERVERS, CONFIG, None, HTTP)
    once.memo["servers"]["time"] = bad
    back = unwrap(dialects.MCP_SERVERS, once.text, once.memo)       # before: KeyError/TypeError (internal error)
    notes = _notes(back)
    assert notes["time"][0] == "restored-args" and "damaged" in notes["time"][1]
    assert notes["files"][0] == "restored" and notes["remote"][0] == "restored"
    assert back.text == CONFIG and back.memo["servers"] == {}


def test_a_tap_url_without_its_record_is_reported_not_passed_over() -> None:
    once = wrap(dialects.MCP_SERVERS, CONFIG, None, HTTP)
    back = unwrap(dialects.MCP_SERVERS, once.text, None, backup=CONFIG)      # the backup shows another URL
    action, detail = _notes(back)["remote"]
    assert action == "failed" and "original URL" in detail
    assert json.loads(back.text)["mcpServers"]["remote"] == json.loads(once.text)["mcpServers"]["remote"]


LOCAL = '{"mcpServers": {"local": {"url": "http://127.0.0.1:42000/mcp"}}}'


@pytest.mark.parametrize("backup", [None, LOCAL, "{not json", '{"mcpServers": {}}'])
def test_a_local_url_never_wrapped_is_not_wrapped(backup: str | None) -> None:
    """Before: any 127.0.0.1 URL on a port in 41000..48999 (Linux's ephemeral
    range) was "failed: still points at its local tap", exit 1."""
    back = unwrap(dialects.MCP_SERVERS, LOCAL, None, backup=backup)
    assert _notes(back)["local"][0] == "not-wrapped" and back.text == LOCAL


def test_unwrap_of_a_local_url_never_wrapped_exits_0(tmp_path: Path) -> None:
    cfg = tmp_path / "u.json"
    cfg.write_text(LOCAL)
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 0 and "local: not wrapped" in p.stderr and "failed" not in p.stderr, p.stderr
    assert cfg.read_text() == LOCAL and sorted(os.listdir(tmp_path)) == ["u.json"]


@pytest.mark.parametrize("damage", [b"{not json", b'{"format": "other"}', b'{"format": "mcptap-wrap", "version": 9, "servers": {}}',
                                    b"\xff\xfe"])
def test_unwrap_with_a_damaged_sidecar(tmp_path: Path, damage: bytes) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(CONFIG)
    assert run("wrap", "--config", str(cfg), "--dir", "/caps").returncode == 0
    sidecar = tmp_path / "mcp.json.mcptap-wrap.json"
    sidecar.write_bytes(damage)
    w = run("wrap", "--config", str(cfg), "--dir", "/other")       # wrap would overwrite the records: refused
    assert w.returncode == 2 and w.stderr.count("\n") == 1 and "mcptap unwrap" in w.stderr
    assert sidecar.read_bytes() == damage
    dry = run("unwrap", "--config", str(cfg), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert sidecar.read_bytes() == damage
    p = run("unwrap", "--config", str(cfg))                          # before: exit 2, nothing restored
    assert p.returncode == 0, p.stderr
    assert "damaged wrap record" in p.stderr and "Traceback" not in p.stderr
    assert "restored exactly" not in p.stderr and "no wrap record in the sidecar" in p.stderr
    assert cfg.read_text() == CONFIG                                 # command/args of these entries come back whole
    assert not sidecar.exists() and (tmp_path / "mcp.json.mcptap-wrap.json.damaged").read_bytes() == damage
    assert "kept as" in p.stderr


def test_unwrap_with_a_damaged_sidecar_and_a_tap_url_exits_1(tmp_path: Path) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(CONFIG)
    assert run("wrap", "--config", str(cfg), "--dir", "/caps", "--http").returncode == 0
    (tmp_path / "mcp.json.mcptap-wrap.json").write_text("garbage")
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 1, p.stderr
    assert "remote: failed: still points at its local tap" in p.stderr
    servers = json.loads(cfg.read_text())["mcpServers"]
    assert servers["time"] == {"command": "uvx", "args": ["mcp-server-time"]}
    assert servers["remote"]["url"].startswith("http://127.0.0.1:")


def test_unwrap_after_the_user_renamed_a_wrapped_server(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    plain = '{"mcpServers":{"fs":{"command":"npx","args":["fs"]}}}'
    cfg.write_text(plain)
    assert run("wrap", "--config", str(cfg)).returncode == 0
    cfg.write_text(cfg.read_text().replace('"fs":{', '"files":{'))
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 0, p.stderr
    assert "files: restored" in p.stderr and "wrap record of server 'fs'" in p.stderr, p.stderr
    assert cfg.read_text() == plain.replace('"fs":{', '"files":{')
    assert not (tmp_path / "c.json.mcptap-wrap.json").exists()
