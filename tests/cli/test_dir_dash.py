"""``-`` given to an option that takes a directory is a usage error, as ``-o -`` is where
standard output makes no sense: it created a directory named ``-`` (``record --dir -``) or
looked for one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("args", [
    ["record", "--dir", "-", "--", sys.executable, "-c", "pass"],
    ["record", "--upstream", "http://127.0.0.1:9/mcp", "--dir", "-"],
    ["ls", "--dir", "-"],
    ["prune", "--dir", "-", "--dry-run"],
    ["wrap", "--config", "cfg.json", "--dir", "-", "--dry-run"],
    ["unwrap", "--host", "claude-code", "--project", "-", "--dry-run"],
])
def test_dash_is_no_directory(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "cfg.json").write_text('{"mcpServers": {"s": {"command": "srv"}}}')
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], capture_output=True, cwd=tmp_path, env=env,
                          input=b"", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert b"- (standard input or output) is no directory" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "-").exists()
