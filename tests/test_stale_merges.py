"""``serve --extend``'s leftover work files (``liveness.stale_merges``): a pid in a
file name is not proof its writer runs, since pids are reused. A merge file counts
as in use while its writer holds the capture lock on it, or while the named pid
runs and started no later than the file was last written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcptap import liveness
from mcptap.liveness import remove_leftovers, stale_merges
from mcptap.serve.extend import _Out

HOUR = 3600.0


@pytest.fixture
def newcomer() -> subprocess.Popen[bytes]:
    """A process started now: what holds a merge's pid once it was reused."""
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield p
    assert p.stdin is not None
    p.stdin.close()
    p.wait(timeout=60)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process start times come from /proc")
def test_a_merge_file_whose_pid_was_reused_is_stale(tmp_path: Path, newcomer: subprocess.Popen[bytes]) -> None:
    """Before: its pid is alive (another process now), so it stayed forever, never listed."""
    old = time.time() - HOUR
    work = tmp_path / f".cap.jsonl.extending-{newcomer.pid}"
    part = tmp_path / f".mcptap-episode-{newcomer.pid}-abc.part"
    for f in (work, part):
        f.write_bytes(b'{"type":"header"}\n')
        os.utime(f, (old, old))             # written by a merge killed an hour ago, before the pid's process started
    assert stale_merges(tmp_path) == sorted([str(part), str(work)])
    started = liveness.started_at(newcomer.pid)
    assert started is not None and started > old + HOUR / 2
    assert remove_leftovers(tmp_path, "cap.jsonl") == 2 and os.listdir(tmp_path) == []


def test_a_merge_in_progress_is_never_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = tmp_path / "cap.jsonl"
    cap.write_bytes(b'{"type":"header"}\n')
    out = _Out(str(cap), gz=False)
    try:
        assert out.named is not None
        assert stale_merges(tmp_path) == []             # its pid (this process) runs, and started before it
        old = time.time() - HOUR
        os.utime(out.named, (old, old))
        monkeypatch.setattr(liveness, "alive", lambda pid: False)     # whatever its pid says: its lock holds
        assert stale_merges(tmp_path) == []
        out.write(b'{"type":"end"}\n')
        out.publish()                                   # the lock held until the rename
    finally:
        out.discard()
    assert sorted(os.listdir(tmp_path)) == ["cap.jsonl"]
    assert stale_merges(tmp_path) == []
