"""`mcptap wrap` / `unwrap` as a user runs them: --host default files,
--dry-run diff, backups, sidecar, bad input (exit 2, file untouched), --http."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
CONFIG = """{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "remote": {"url": "https://example.com/mcp"}
  }
}
"""


def run(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([*MCPTAP, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    p = tmp_path / "mcp.json"
    p.write_text(CONFIG)
    return p


def test_dry_run_prints_a_diff_and_writes_nothing(cfg: Path) -> None:
    p = run("wrap", "--config", str(cfg), "--dir", "/caps", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"--- {cfg}\n+++ {cfg} (mcptap)\n")
    assert '-    "time": {"command": "uvx"' in p.stdout and '"--name", "time", "--", "uvx", "mcp-server-time"' in p.stdout
    assert "time: would wrap" in p.stderr and "remote: skipped" in p.stderr
    assert cfg.read_text() == CONFIG
    assert sorted(os.listdir(cfg.parent)) == ["mcp.json"]


def test_dry_run_diff_escapes_control_characters(tmp_path: Path) -> None:
    """A cloned project's .cursor/mcp.json may hold terminal escapes and bidi
    overrides (raw in a comment, or from a \\u escape in a name): the diff on
    the terminal shows them as escapes; a TAB of the indentation stays one."""
    cfg = tmp_path / "mcp.json"
    cfg.write_text('{\n\t// \x1b[2J\x1b]0;owned\x07 \u202e\n\t"mcpServers": {"e\\u001b[31mvil\\u202e": {"command": "x"}}\n}\n')
    p = run("wrap", "--config", str(cfg), "--dry-run")
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout and "\u202e" not in p.stdout and "\x07" not in p.stdout
    assert "\\x1b[2J" in p.stdout and "\\u202e" in p.stdout
    assert "\n+\t\"mcpServers\"" in p.stdout


def test_named_servers_backup_sidecar_and_unwrap(cfg: Path) -> None:
    mode = 0o640
    cfg.chmod(mode)
    p = run("wrap", "--config", str(cfg), "--dir", "/caps", "files")
    assert p.returncode == 0, p.stderr
    servers = json.loads(cfg.read_text())["mcpServers"]
    assert servers["time"] == {"command": "uvx", "args": ["mcp-server-time"]}
    assert servers["files"]["args"][:5] == ["record", "--dir", "/caps", "--name", "files"]
    assert stat.S_IMODE(cfg.stat().st_mode) == mode
    backup = cfg.with_name("mcp.json.mcptap-backup")
    sidecar = cfg.with_name("mcp.json.mcptap-wrap.json")
    assert backup.read_text() == CONFIG
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
    assert set(json.loads(sidecar.read_text())["servers"]) == {"files"}
    # a second wrap (all servers) keeps the first backup, records both
    wrapped_once = cfg.read_text()
    assert run("wrap", "--config", str(cfg), "--dir", "/caps").returncode == 0
    assert backup.read_text() == CONFIG and cfg.read_text() != wrapped_once
    assert set(json.loads(sidecar.read_text())["servers"]) == {"files", "time"}
    p = run("unwrap", "--config", str(cfg), "time")
    assert p.returncode == 0 and "time: restored" in p.stderr
    assert set(json.loads(sidecar.read_text())["servers"]) == {"files"}
    assert run("unwrap", "--config", str(cfg)).returncode == 0
    assert cfg.read_text() == CONFIG and not sidecar.exists()


def test_host_default_file(tmp_path: Path) -> None:
    cursor = tmp_path / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text(CONFIG)
    p = run("wrap", "--host", "cursor", "--dir", str(tmp_path / "caps"), home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(cursor.read_text())["mcpServers"]["time"]["args"][-2:] == ["uvx", "mcp-server-time"]
    zed = tmp_path / ".config" / "zed" / "settings.json"
    p = run("wrap", "--host", "zed", home=tmp_path)
    assert p.returncode == 2 and p.stderr == f"mcptap: {zed}: no such file\n"


def test_symlinked_config_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text(CONFIG)
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    assert run("wrap", "--config", str(link), "--dir", "/caps").returncode == 0
    assert link.is_symlink() and "record" in real.read_text()
    assert run("unwrap", "--config", str(link)).returncode == 0
    assert real.read_text() == CONFIG


@pytest.mark.parametrize("content, args, message", [
    ('{"mcpServers": {"a": {"command": "x"}', (), "unterminated object at line 1"),
    (CONFIG, ("nope",), "no server named 'nope' in this configuration (servers: time, files, remote)"),
    ('{"theme": 1}', (), "no MCP server section found"),
    (b"\xff\xfe{}", (), "not UTF-8 text"),
])
def test_bad_input_is_one_line_exit_2_file_untouched(tmp_path: Path, content: str | bytes, args: tuple[str, ...], message: str) -> None:
    p = tmp_path / "c.json"
    raw = content.encode() if isinstance(content, str) else content
    p.write_bytes(raw)
    for cmd in ("wrap", "unwrap"):
        r = run(cmd, "--config", str(p), *args)
        assert r.returncode == 2, r
        assert r.stderr.count("\n") == 1 and message in r.stderr and "Traceback" not in r.stderr
        assert p.read_bytes() == raw and os.listdir(tmp_path) == ["c.json"]


def test_read_only_file(cfg: Path) -> None:
    cfg.chmod(0o444)
    r = run("wrap", "--config", str(cfg))
    assert r.returncode == 2 and r.stderr == f"mcptap: {cfg}: the file is read-only\n"
    assert cfg.read_text() == CONFIG
    # a dry run only reads
    assert run("wrap", "--config", str(cfg), "--dry-run").returncode == 0


def test_usage_errors() -> None:
    r = run("wrap")
    assert r.returncode == 2 and "give --host NAME or --config FILE" in r.stderr
    r = run("wrap", "--host", "notepad")
    assert r.returncode == 2 and "notepad" in r.stderr


def test_http_prints_the_tap_command(cfg: Path) -> None:
    r = run("wrap", "--config", str(cfg), "--dir", "/caps", "--http", "remote")
    assert r.returncode == 0, r.stderr
    url = json.loads(cfg.read_text())["mcpServers"]["remote"]["url"]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    port = url.split(":")[2].split("/")[0]
    (line,) = r.stdout.splitlines()
    assert line.endswith(f"record --upstream https://example.com/mcp --listen 127.0.0.1:{port} --dir /caps --name remote")
    assert run("unwrap", "--config", str(cfg)).returncode == 0
    assert cfg.read_text() == CONFIG


def test_python_m_mcptap_runs_the_cli() -> None:
    r = subprocess.run([sys.executable, "-m", "mcptap", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("mcptap")


def test_claude_code_local_scope(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude = tmp_path / ".claude.json"
    original = json.dumps({"projects": {str(project): {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}}}, indent=2)
    claude.write_text(original)
    p = run("wrap", "--host", "claude-code-local", "--project", str(project), "--dir", "/caps", home=tmp_path)
    assert p.returncode == 0, p.stderr
    entry = json.loads(claude.read_text())["projects"][str(project)]["mcpServers"]["time"]
    assert entry["args"][:5] == ["record", "--dir", "/caps", "--name", "time"]
    p = run("wrap", "--host", "claude-code-local", "--project", str(tmp_path), home=tmp_path)
    assert p.returncode == 0 and "no MCP servers" in p.stderr
    assert run("unwrap", "--host", "claude-code-local", "--project", str(project), home=tmp_path).returncode == 0
    assert claude.read_text() == original
    p = run("wrap", "--host", "cursor", "--project", str(project), home=tmp_path)
    assert p.returncode == 2 and "--project applies to --host claude-code-local" in p.stderr


def test_launcher_prefers_the_script_beside_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcptap.cli.wrap import launcher

    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    py = bindir / "python"
    py.symlink_to(sys.executable)                   # a venv interpreter is a symlink: never resolved
    monkeypatch.setattr(sys, "executable", str(py))
    assert launcher() == (str(py), "-m", "mcptap")
    script = bindir / "mcptap"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert launcher() == (str(script),)
    monkeypatch.setenv("HOME", str(tmp_path / "venv"))
    assert launcher("~/bin/mcptap") == (str(script),)


def test_python_m_mcptap_records_with_a_reduced_environment(tmp_path: Path) -> None:
    # the fallback launcher: `<python> -m mcptap record …` with only PATH=/usr/bin:/bin and HOME
    echo = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "mcptap", "record", "--dir", str(tmp_path / "c"), "--name", "n", "--",
                        sys.executable, "-c", echo], input=b'{"jsonrpc":"2.0","method":"x"}\n', capture_output=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b'{"jsonrpc":"2.0","method":"x"}\n'
    (cap,) = (tmp_path / "c").iterdir()
    assert "-n-" in cap.name


def test_without_host_or_config_the_error_lists_the_hosts_found(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(CONFIG)
    r = run("wrap", home=tmp_path)
    assert r.returncode == 2 and f"found here: --host gemini ({tmp_path}/.gemini/settings.json)" in r.stderr


def test_a_config_name_of_238_bytes(tmp_path: Path) -> None:
    """Its sidecar FILE.mcptap-wrap.json is 255 bytes, the most a name may
    have; the temporary file of the atomic rewrite was .FILE.mcptap-PID.tmp,
    longer still (wrap stopped with "File name too long"). Now it is short."""
    cfg = tmp_path / ("c" * 233 + ".json")
    cfg.write_text(CONFIG)
    p = run("wrap", "--config", str(cfg), "--dir", "/caps")
    assert p.returncode == 0, p.stderr
    assert json.loads(cfg.read_text())["mcpServers"]["time"]["args"][:3] == ["record", "--dir", "/caps"]
    sidecar = cfg.with_name(cfg.name + ".mcptap-wrap.json")
    assert len(sidecar.name.encode()) == 255 and set(json.loads(sidecar.read_text())["servers"]) == {"time", "files"}
    assert sorted(os.listdir(tmp_path)) == sorted([cfg.name, cfg.name + ".mcptap-backup", sidecar.name])
    assert run("unwrap", "--config", str(cfg)).returncode == 0 and cfg.read_text() == CONFIG


def test_claude_code_local_project_through_a_symlink(tmp_path: Path) -> None:
    """Before: --project LINK looked for projects["…/LINK"] and found no
    servers, while running inside LINK (getcwd: the resolved path) worked."""
    project = tmp_path / "proj"
    project.mkdir()
    link = tmp_path / "link"
    link.symlink_to(project)
    claude = tmp_path / ".claude.json"
    claude.write_text(json.dumps({"projects": {str(project): {"mcpServers": {"time": {"command": "uvx"}}}}}))
    for where in (str(link), str(link) + "/", str(link / ".." / "link")):
        p = run("wrap", "--host", "claude-code-local", "--project", where, "--dir", "/caps", "-n", home=tmp_path)
        assert p.returncode == 0 and "time: would wrap" in p.stderr, (where, p.stderr)
    inside = subprocess.run([*MCPTAP, "wrap", "--host", "claude-code-local", "--dir", "/caps", "-n"], cwd=link,
                            capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)})
    assert inside.returncode == 0 and "time: would wrap" in inside.stderr, inside.stderr
