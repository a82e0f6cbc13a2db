"""``serve --extend`` stopped or killed: Ctrl-C (SIGINT) ends the session and merges it as
SIGTERM does (exit 130); the merged end record of a scrubbed capture keeps the source's
``original`` digests; a merge file a SIGKILLed mcptap left (``.NAME.extending-PID``) is
removed by the next serve of that capture and is never listed as a capture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture
from test_serve_extend import ECHO_NEW, INIT, MCPTAP, SERVER, _check, _copy, _line, legacy_capture, run_raw, synthesized

pytestmark = pytest.mark.e2e
__all__ = ["legacy_capture"]            # the fixture, shared with test_serve_extend

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped): nothing runs under it now."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("own", [False, True], ids=["no-o", "with-o"])
def test_sigint_ends_the_session_and_merges_what_the_real_server_answered(legacy_capture: Path, tmp_path: Path,
                                                                         own: bool) -> None:
    cap = _copy(legacy_capture, tmp_path)
    out = tmp_path / "own.jsonl"
    proc = subprocess.Popen([*MCPTAP, "serve", str(cap), *(["-o", str(out)] if own else []), "--extend", "--", *SERVER],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for m in (INIT, INITIALIZED,
              {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "fresh"}}},
              {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "sleepy", "arguments": {"seconds": 60}}}):
        proc.stdin.write(_line(m))
        proc.stdin.flush()
    answers = [proc.stdout.readline() for _ in range(2)]
    assert b"fresh" in answers[1]                   # forwarded and answered: the session has something to keep
    proc.send_signal(signal.SIGINT)                 # stdin still open, sleepy still running
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    # echo was answered, sleepy with the SDK server's "Connection closed" as its stdin closed
    assert b"2 request(s) forwarded to the real server, 2 answered (1 with an error);" in err, err
    merged = cap.read_bytes()
    assert b"fresh" in merged and json.loads(merged.splitlines()[0])["episodes"] == 1
    assert "digest_mismatch" not in _check(cap)
    if own:
        end = read_capture(str(out)).end
        assert end is not None and end["exit_code"] == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.jsonl", *(["own.jsonl"] if own else [])]


def test_extend_of_a_scrubbed_capture_keeps_the_original_digests(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    synthesized(src)
    cap = tmp_path / "cap.jsonl"
    subprocess.run([*MCPTAP, "scrub", str(src), "-o", str(cap)], check=True, capture_output=True, timeout=60)
    before = read_capture(str(cap)).end
    assert before is not None and isinstance(before.get("original"), dict)
    done = run_raw(cap, [INIT, INITIALIZED, ECHO_NEW])
    assert done.returncode == 0, done.stderr
    after = read_capture(str(cap)).end
    assert after is not None and after.get("original") == before["original"]
    assert after["c2s"] != before["c2s"]                    # the merged digests are the whole file's
    assert "digest_mismatch" not in _check(cap)


def _leftover(cap: Path, pid: int) -> Path:
    """What a SIGKILLed merge leaves: a started merge file beside the capture."""
    left = cap.parent / f".{cap.name}.extending-{pid}"
    left.write_bytes(cap.read_bytes()[:200])
    return left


def test_a_dead_merge_file_is_removed_by_the_next_serve_even_with_nothing_forwarded(legacy_capture: Path,
                                                                                     tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    dead = _leftover(cap, _dead_pid())
    live = _leftover(cap, os.getpid())              # a merge still running (this process): left alone
    recorded: list[dict[str, Any]] = [INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    done = run_raw(cap, recorded)                   # every request answered from the capture: no merge
    assert done.returncode == 0, done.stderr
    assert b'"tools"' in done.stdout
    assert not dead.exists()
    assert live.exists()
    plain = subprocess.run([*MCPTAP, "serve", str(cap)], input=b"".join(_line(m) for m in recorded),
                           capture_output=True, timeout=60)
    assert plain.returncode == 0 and live.exists()


def test_ls_never_lists_nor_keeps_a_dead_merge_file(legacy_capture: Path, tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    dead = _leftover(cap, _dead_pid())
    done = subprocess.run([*MCPTAP, "ls", "--all", "--format", "json", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert ".extending-" not in done.stdout and cap.name in done.stdout
    assert not dead.exists()


def test_the_session_file_of_a_system_without_proc_is_no_capture(legacy_capture: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``/proc`` cannot keep it nameless, serve --extend's own session is a named file
    beside the capture: never listed as a capture, and removed once its process is gone."""
    from mcptap.catalog import scan
    from mcptap.cli.serve import _episode_file
    from mcptap.liveness import remove_leftovers

    cap = _copy(legacy_capture, tmp_path)
    real = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: False if str(p).startswith("/proc/") else real(p))
    path, kept = _episode_file(str(cap))
    monkeypatch.undo()
    assert kept is None and Path(path).parent == tmp_path
    Path(path).write_bytes(cap.read_bytes())        # a whole capture in it, as the mock writes one
    assert [i.path for i in scan(tmp_path)] == [str(cap)]
    assert remove_leftovers(tmp_path) == 0 and real(path)          # its process (this one) still runs
    dead = tmp_path / Path(path).name.replace(f"-{os.getpid()}-", f"-{_dead_pid()}-")
    os.rename(path, dead)
    assert remove_leftovers(tmp_path) == 1 and not dead.exists()
    old = tmp_path / ".mcptap-episode-abc123.jsonl"                # an older mcptap's name
    old.write_bytes(cap.read_bytes())
    assert [i.path for i in scan(tmp_path)] == [str(cap)]
