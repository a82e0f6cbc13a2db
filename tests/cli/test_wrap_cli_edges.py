"""`mcptap wrap` / `unwrap` as a user runs them, on inputs that once broke
them: a bad --mcptap, files whose entries cannot all be handled, ownership
of the rewritten files. Failures are one `mcptap:` line, never a traceback."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.cli.test_wrap_cli import run

PLAIN = '{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}'


def one_line_failure(p: object, *words: str) -> None:
    err = p.stderr  # type: ignore[attr-defined]
    assert p.returncode == 2, err  # type: ignore[attr-defined]
    assert err.count("\n") == 1 and err.startswith("mcptap: ") and "Traceback" not in err and "internal error" not in err
    for w in words:
        assert w in err


@pytest.mark.parametrize("target", ["missing", "plain", "dir"])
def test_mcptap_must_name_an_executable_file(tmp_path: Path, target: str) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(PLAIN)
    path = tmp_path / target
    if target == "plain":
        path.write_text("not a program")
    elif target == "dir":
        path.mkdir()
    for extra in ((), ("--dry-run",)):
        p = run("wrap", "--config", str(cfg), "--mcptap", str(path), *extra)
        one_line_failure(p, "--mcptap", str(path))
    assert cfg.read_text() == PLAIN and sorted(x.name for x in tmp_path.iterdir()) == sorted(["mcp.json", *([target] if target != "missing" else [])])


def test_a_custom_launcher_wraps_once(tmp_path: Path) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(PLAIN)
    tap = tmp_path / "tap"
    tap.write_text("#!/bin/sh\n")
    tap.chmod(0o755)
    for _ in range(2):
        p = run("wrap", "--config", str(cfg), "--mcptap", str(tap), "--dir", "/caps")
        assert p.returncode == 0, p.stderr
    args = json.loads(cfg.read_text())["mcpServers"]["a"]["args"]
    assert args == ["record", "--dir", "/caps", "--name", "a", "--", "node", "a.js"]
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 0 and "restored exactly" in p.stderr, p.stderr
    assert cfg.read_text() == PLAIN


def test_a_custom_launcher_whose_sidecar_is_lost_is_not_wrapped_again(tmp_path: Path) -> None:
    """Before: a second tap went in front of the custom one; unwrap removed it
    and then said "not wrapped" while the custom tap still ran."""
    cfg = tmp_path / "c.json"
    cfg.write_text(PLAIN)
    tap = tmp_path / "my dir" / "tap"
    tap.parent.mkdir()
    tap.write_text("#!/bin/sh\n")
    tap.chmod(0o755)
    assert run("wrap", "--config", str(cfg), "--mcptap", str(tap), "a").returncode == 0
    (tmp_path / "c.json.mcptap-wrap.json").unlink()
    wrapped = cfg.read_text()
    p = run("wrap", "--config", str(cfg), "a")
    assert p.returncode == 0 and "a: left as it is" in p.stderr and "mcptap unwrap" in p.stderr, p.stderr
    assert cfg.read_text() == wrapped
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 0 and "a: restored" in p.stderr, p.stderr
    assert json.loads(cfg.read_text()) == json.loads(PLAIN)


def test_a_lone_surrogate_escape_is_written_back_escaped(tmp_path: Path) -> None:
    """JSON allows \\ud800 (a string cut inside an emoji); reading it gives a code
    point UTF-8 cannot encode: wrap printed "wrapped", then failed (internal error)."""
    cfg = tmp_path / "sur.json"
    text = '{"mcpServers": {"a\\ud801": {"command": "x", "args": ["\\ud800", "\\ud83d\\ude00"]}}}'
    cfg.write_text(text)
    dry = run("wrap", "--config", str(cfg), "--dir", "/caps", "--dry-run")
    assert dry.returncode == 0 and "would wrap" in dry.stderr, dry.stderr
    p = run("wrap", "--config", str(cfg), "--dir", "/caps")
    assert p.returncode == 0 and "a\\ud801: wrapped" in p.stderr and "error" not in p.stderr, p.stderr
    wrapped = cfg.read_text()
    assert '"--name", "a\\ud801", "--", "x", "\\ud800", "\U0001f600"]' in wrapped
    assert json.loads(wrapped)["mcpServers"]["a\ud801"]["args"][-2:] == ["\ud800", "\U0001f600"]
    sidecar = json.loads((tmp_path / "sur.json.mcptap-wrap.json").read_bytes().decode("utf-8"))
    assert sidecar["servers"]["a\ud801"]["original"]["args"][0] == "\ud800"
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 0 and "restored exactly" in p.stderr, p.stderr
    assert cfg.read_text() == text
    # the entry edited after wrapping: its command and args are written anew, escaped too
    assert run("wrap", "--config", str(cfg), "--dir", "/caps").returncode == 0
    cfg.write_text(cfg.read_text().replace('"/caps"', '"/mine"'))
    p = run("unwrap", "--config", str(cfg))
    assert p.returncode == 0 and "a\\ud801: restored" in p.stderr, p.stderr
    assert json.loads(cfg.read_text()) == json.loads(text)


@pytest.mark.parametrize("bad", ['["p", 8080]', '[null]', '"p"'])
def test_an_entry_with_bad_args_is_refused_alone(tmp_path: Path, bad: str) -> None:
    cfg = tmp_path / "mcp.json"
    text = '{"mcpServers": {"a": {"command": "x", "args": ' + bad + '}, "b": {"command": "y"}}}'
    cfg.write_text(text)
    for names in ((), ("b",)):
        p = run("wrap", "--config", str(cfg), "--dir", "/caps", *names)
        assert p.returncode == (1 if not names else 0), p.stderr
        assert ("a: refused: args is not a list of strings" in p.stderr) == (not names)
        servers = json.loads(cfg.read_text())["mcpServers"]
        assert servers["a"] == json.loads(text)["mcpServers"]["a"] and servers["b"]["args"][-2:] == ["--", "y"]
    p = run("unwrap", "--config", str(cfg), "b")
    assert p.returncode == 0 and "b: restored" in p.stderr, p.stderr
    assert cfg.read_text() == text
    p = run("wrap", "--config", str(cfg), "a")
    assert p.returncode == 1 and "a: refused" in p.stderr and cfg.read_text() == text
    toml = tmp_path / "config.toml"
    toml.write_text('[mcp_servers.a]\ncommand = "x"\nargs = [1]\n\n[mcp_servers.b]\ncommand = "y"\n')
    p = run("wrap", "--config", str(toml), "--dir", "/caps")
    assert p.returncode == 1 and "a: refused" in p.stderr and "b: wrapped" in p.stderr, p.stderr


@pytest.mark.parametrize("command", ["wrap", "unwrap"])
def test_host_and_config_exclude_each_other(tmp_path: Path, command: str) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(PLAIN)
    for extra in (("--host", "zed", "--config", str(cfg)), ("--host", "cursor", "--dialect", "zed")):
        p = run(command, *extra, "--dry-run", home=tmp_path)
        assert p.returncode == 2 and p.stderr.startswith("mcptap: ") and p.stderr.count("\n") == 1, p.stderr
    assert cfg.read_text() == PLAIN
    # Claude Code's local scope of a ~/.claude.json elsewhere: --config names it
    claude = tmp_path / "claude.json"
    claude.write_text('{"projects": {"/p": {"mcpServers": {"a": {"command": "x"}}}}}')
    p = run(command, "--host", "claude-code-local", "--project", "/p", "--config", str(claude), "--dry-run", home=tmp_path)
    assert p.returncode == 0, p.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (chown)")
def test_run_as_root_the_files_stay_the_users(tmp_path: Path) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(PLAIN)
    os.chown(cfg, 65534, 65534)
    cfg.chmod(0o600)
    p = run("wrap", "--config", str(cfg), "--dir", "/caps")
    assert p.returncode == 0, p.stderr
    for f in (cfg, tmp_path / "mcp.json.mcptap-backup", tmp_path / "mcp.json.mcptap-wrap.json"):
        st = f.stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o600), f
    assert run("unwrap", "--config", str(cfg)).returncode == 0
    assert (cfg.stat().st_uid, cfg.stat().st_gid) == (65534, 65534) and cfg.read_text() == PLAIN


def test_a_deeply_nested_file_is_wrapped_or_refused_never_an_internal_error(tmp_path: Path) -> None:
    """Before: 500 levels anywhere in the file, or in an entry's args, was
    `internal error: RecursionError … (a damaged or hand-edited capture?`."""
    n = 3000
    cfg = tmp_path / "c.json"
    cfg.write_text('{"deep": ' + '{"a":'*n + '1' + '}'*n + ', "mcpServers": {"a": {"command": "x"}, '
                   '"b": {"command": "y", "args": ' + '['*n + ']'*n + '}}}')
    p = run("wrap", "--config", str(cfg), "--dir", str(tmp_path / "caps"))
    assert p.returncode == 1 and "internal error" not in p.stderr and "capture" not in p.stderr, p.stderr
    assert "mcptap: a: wrapped" in p.stderr and "mcptap: b: refused: args is not a list of strings" in p.stderr
    sidecar = tmp_path / "c.json.mcptap-wrap.json"
    sidecar.write_text('{"x": ' + '['*n + ']'*n + '}')
    p = run("wrap", "--config", str(cfg))
    one_line_failure(p, "damaged wrap record")


@pytest.mark.parametrize("command", ["wrap", "unwrap"])
def test_a_read_only_directory_is_refused_even_as_root(tmp_path: Path, command: str) -> None:
    """Before: root passes every os.access check, so a config in a 0555
    directory was wrapped (backup and sidecar created there)."""
    where = tmp_path / "ro"
    where.mkdir()
    cfg = where / "mcp.json"
    cfg.write_text(PLAIN)
    where.chmod(0o555)
    try:
        p = run(command, "--config", str(cfg))
        one_line_failure(p, "its directory is not writable")
        assert os.listdir(where) == ["mcp.json"] and cfg.read_text() == PLAIN
        assert run(command, "--config", str(cfg), "--dry-run").returncode == 0
    finally:
        where.chmod(0o755)
