"""``serve --extend`` holds the capture it extends from the session's start to the merge:
``prune`` leaves it (``ls`` says "extending"), a second ``--extend`` of it is refused
(its rename would drop this session), and a capture removed by hand meanwhile is merged
and put back all the same. The stderr summary counts forwarded and answered apart."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from test_serve_extend import INIT, MCPTAP, SERVER, _copy, _line, legacy_capture

pytestmark = pytest.mark.e2e
__all__ = ["legacy_capture"]            # the fixture, shared with test_serve_extend

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
FRESH = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "fresh"}}}


def _start(cap: Path) -> subprocess.Popen[bytes]:
    """A ``serve --extend`` whose session has forwarded one request and had it answered."""
    proc = subprocess.Popen([*MCPTAP, "serve", str(cap), "--extend", "--", *SERVER],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for m in (INIT, INITIALIZED, FRESH):
        proc.stdin.write(_line(m))
        proc.stdin.flush()
    answers = [proc.stdout.readline() for _ in range(2)]
    assert b"fresh" in answers[1]
    return proc


def _finish(proc: subprocess.Popen[bytes]) -> str:
    _, err = proc.communicate(timeout=60)         # stdin closed: the session ends, the merge runs
    assert proc.returncode == 0, err
    return err.decode()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAP, *args], capture_output=True, text=True, timeout=60)


def test_prune_and_a_second_extend_leave_a_capture_being_extended(legacy_capture: Path, tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    proc = _start(cap)
    try:
        listed = _run("ls", "--format", "json", "--dir", str(tmp_path))
        assert [i["extending"] for i in map(json.loads, listed.stdout.splitlines())] == [True], listed
        assert "complete, extending" in _run("ls", "--dir", str(tmp_path)).stdout
        pruned = _run("prune", "--keep", "0", "--dir", str(tmp_path))
        assert pruned.returncode == 0 and cap.exists(), pruned.stderr
        second = subprocess.run([*MCPTAP, "serve", str(cap), "--extend", "--", *SERVER], input=b"", capture_output=True, timeout=60)
        assert second.returncode == 2 and b"another mcptap is recording into it or extending it" in second.stderr
    finally:
        err = _finish(proc)
    assert "1 request(s) forwarded to the real server, 1 answered;" in err
    merged = cap.read_bytes()
    assert b"fresh" in merged and json.loads(merged.splitlines()[0])["episodes"] == 1
    listed = _run("ls", "--format", "json", "--dir", str(tmp_path))
    assert [i["extending"] for i in map(json.loads, listed.stdout.splitlines())] == [False]
    assert _run("prune", "--keep", "0", "--dir", str(tmp_path)).returncode == 0 and not cap.exists()


def test_a_capture_removed_while_extended_is_merged_and_put_back(legacy_capture: Path, tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    before = cap.read_bytes()
    proc = _start(cap)
    cap.unlink()                                    # by hand (or a filesystem without flock)
    _finish(proc)
    merged = cap.read_bytes()
    assert merged.startswith(before.splitlines(keepends=True)[0].replace(b"}\n", b',"episodes":1}\n')[:20])
    assert before.splitlines()[1] in merged and b"fresh" in merged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.jsonl"]
