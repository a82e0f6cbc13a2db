"""Whether `mcptap wrap` may rewrite a host configuration is the kernel's
answer (os.access: group and other bits, ACLs, read-only mounts), not the
file's owner bit: a group-writable file is the group's to wrap. Root (who
may write anything) still leaves a file or directory no one may write."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcptap.cli.errors import Fail
from mcptap.cli.hostfiles import load
from tests.cli.test_wrap_cli_edges import PLAIN, one_line_failure

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY, GROUP = 65534, 54321
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _wrap(cfg: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([*MCPTAP, "wrap", "--config", str(cfg), "--dir", "/caps"], capture_output=True, text=True,
                          timeout=60, env=env, cwd=str(home))


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory root owns and GROUP may write (pytest's tmp_path is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="mcptap-perm-"))
    os.chown(where, 0, GROUP)
    where.chmod(0o770)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


@contextlib.contextmanager
def _as(uid: int, gid: int) -> Iterator[None]:
    """This process as ``uid``/``gid`` (effective ids only, no other groups): root's real
    and saved ids bring it back. In-process: the interpreter lives under /root, which
    another user cannot run."""
    groups = os.getgroups()
    os.setgroups([])
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


@pytest.mark.skipif(not ROOT, reason="needs root (chown, acting as another user)")
def test_a_group_writable_file_may_be_wrapped_by_a_member_of_its_group(shared: Path) -> None:
    """Before: 'the file is read-only' (its owner bit is unset), though the
    kernel lets the group write it."""
    cfg = shared / "mcp.json"
    cfg.write_text(PLAIN)
    os.chown(cfg, 0, GROUP)
    cfg.chmod(0o464)
    other = shared / "other.json"
    other.write_text(PLAIN)
    os.chown(other, 0, GROUP)
    other.chmod(0o644)
    with _as(NOBODY, GROUP):
        assert load(None, str(cfg), None, need_write=True).text == PLAIN
        # one the group may not write is still refused
        with pytest.raises(Fail, match="the file is read-only"):
            load(None, str(other), None, need_write=True)
    shared.chmod(0o750)         # nor a file in a directory the group may not write
    with _as(NOBODY, GROUP), pytest.raises(Fail, match="its directory is not writable"):
        load(None, str(cfg), None, need_write=True)


@pytest.mark.skipif(not ROOT, reason="needs root")
def test_root_wraps_a_file_someone_may_write_and_leaves_one_no_one_may(tmp_path: Path) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(PLAIN)
    os.chown(cfg, NOBODY, GROUP)
    cfg.chmod(0o464)            # its group writes it, its owner does not
    p = _wrap(cfg, tmp_path)
    assert p.returncode == 0, p.stderr
    assert "mcptap" in cfg.read_text()
    ro = tmp_path / "ro.json"
    ro.write_text(PLAIN)
    ro.chmod(0o444)
    one_line_failure(_wrap(ro, tmp_path), "the file is read-only")
    assert ro.read_text() == PLAIN
