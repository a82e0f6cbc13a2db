"""`mcptap wrap` / `unwrap` while someone else changes the configuration:
another mcptap run (it waits for the lock) or a host rewriting its file
(the change is never replaced unseen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli.config_lock import config_lock, lock_path
from mcptap.cli.wrap import command as wrap_command
from tests.cli.test_wrap_cli import MCPTAP

TWO = '{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}\n'


def _holds(pid: int, path: str) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux /proc)."""
    fds = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fds)
    except OSError:
        return False
    for fd in names:
        try:
            if os.readlink(os.path.join(fds, fd)) == path:
                return True
        except OSError:
            continue
    return False


def test_a_second_run_waits_for_the_first_and_keeps_its_change(tmp_path: Path) -> None:
    """Before: two runs wrapping different servers of one file both said
    "wrote", and the file held only one of the two changes. Here the first
    run is this test, holding the lock while it changes the file."""
    cfg = tmp_path / "c.json"
    cfg.write_text(TWO)
    real = str(cfg)
    with config_lock(real, real):
        proc = subprocess.Popen([*MCPTAP, "wrap", "--config", real, "--dir", str(tmp_path / "caps"), "b"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if sys.platform.startswith("linux"):
            # the run is parked on the lock file (or, without the lock, finished)
            while proc.poll() is None and not _holds(proc.pid, lock_path(real)):
                time.sleep(0.005)
            assert proc.poll() is None, f"it did not wait for the lock: {proc.communicate()}"
        cfg.write_text(TWO.replace('"x"', '"x2"'))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    servers = json.loads(cfg.read_text())["mcpServers"]
    assert servers["a"] == {"command": "x2"}
    assert servers["b"]["args"][-2:] == ["--", "y"]
    assert not os.path.exists(lock_path(real))


def test_a_run_that_waits_for_the_lock_says_so(tmp_path: Path) -> None:
    # a wait of up to 30 s must not look like a hang
    import select

    cfg = tmp_path / "c.json"
    cfg.write_text(TWO)
    real = str(cfg)
    with config_lock(real, real):
        proc = subprocess.Popen([*MCPTAP, "wrap", "--config", real, "--dir", str(tmp_path / "caps"), "b"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 25)
        line = proc.stderr.readline() if ready else ""
    proc.communicate(timeout=60)
    assert "waiting for another mcptap wrap/unwrap to finish with this file" in line, line
    assert proc.returncode == 0


def test_a_host_rewrite_during_the_write_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the file was compared once, then backup, sidecar and the new
    file were written with fsyncs (milliseconds) and renamed over whatever
    the host had written meanwhile. The host here rewrites the file (atomic
    rename, as Claude Code does) during mcptap's first fsync."""
    cfg = tmp_path / "claude.json"
    cfg.write_text('{"numStartups": 1, "mcpServers": {"a": {"command": "x"}}}')
    host = '{"numStartups": 2, "mcpServers": {"a": {"command": "x"}}}'
    real_fsync = os.fsync
    done = []

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if not done:
            done.append(True)
            tmp = tmp_path / "host.tmp"
            tmp.write_text(host)
            os.replace(tmp, cfg)

    monkeypatch.setattr(os, "fsync", fsync)
    r = CliRunner().invoke(wrap_command, ["--config", str(cfg), "--dir", str(tmp_path / "caps")])
    assert done and r.exit_code == 2, r.output
    assert "the file changed while mcptap was working on it" in r.output
    assert cfg.read_text() == host
    # nothing of this run is left: no backup of a file it never changed, no records of entries it never wrapped
    assert sorted(os.listdir(tmp_path)) == ["claude.json"]
