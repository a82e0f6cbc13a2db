"""The spill file of a capture deleted by hand (``NAME.jsonl.spill``: what a
killed stdio tap set aside for ``recover``) is an orphan: ``ls`` says so and
``prune`` removes it, but never one a tap still uses (its relay and mcptap
hold a lock on it while it records, also when the capture was deleted under
it), one a capture of the directory still names, or a file that is no spill file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap import liveness
from mcptap.transport.spill import SpillFile, spill_path
from tests.cli.test_ls_prune import INIT, record, run

SPILLER = """import sys
from mcptap.transport.spill import SpillFile
s = SpillFile(sys.argv[1])
s.append(1, 5, 0, b'{"jsonrpc":"2.0","id":1,"result":{}}\\n')
print("spilled", flush=True)
sys.stdin.read()                # holds the file (as a tap's relay does) until told to go
"""


def _spill(path: str) -> None:
    s = SpillFile(path)
    s.append(1, 5, 0, b'{"jsonrpc":"2.0","id":1,"result":{}}\n')
    s.close()


def test_prune_removes_the_spill_file_of_a_capture_deleted_by_hand_and_ls_reports_it(tmp_path: Path) -> None:
    """Before: ls, prune and recover never looked at it; it stayed forever."""
    kept = record(tmp_path, "--name", "kept", input=INIT)
    _spill(spill_path(str(kept)))                       # its capture is there: not an orphan
    gone = record(tmp_path, "--name", "gone", input=INIT)
    orphan = spill_path(str(gone))
    _spill(orphan)
    gone.unlink()                                       # by hand
    other = tmp_path / "notes.spill"                    # a .spill that holds no spill entries: not ours
    other.write_bytes(b"\xffnot spill entries at all\n")

    p = run("ls", "--dir", str(tmp_path))
    assert p.returncode == 0 and f"mcptap: {orphan}: a spill file whose capture is gone".encode() in p.stderr, p.stderr
    assert str(kept).encode() + b".spill" not in p.stderr and b"notes.spill" not in p.stderr
    p = run("prune", "--dir", str(tmp_path), "--older-than", "9999d", "--dry-run")
    assert f"would remove {orphan} (a spill file whose capture is gone)".encode() in p.stdout.splitlines()
    assert os.path.exists(orphan)
    p = run("prune", "--dir", str(tmp_path), "--older-than", "9999d")
    assert p.returncode == 0, p.stderr
    assert f"removed {orphan} (a spill file whose capture is gone)".encode() in p.stdout.splitlines()
    assert sorted(os.listdir(tmp_path)) == sorted([kept.name, kept.name + ".spill", "notes.spill"])


def test_a_renamed_capture_keeps_the_spill_file_its_header_names(tmp_path: Path) -> None:
    cap = record(tmp_path, "--name", "moved", input=INIT)
    _spill(spill_path(str(cap)))
    cap.rename(tmp_path / "renamed.jsonl")              # `recover renamed.jsonl` reads the spill file its header names
    assert liveness.orphan_spills(tmp_path, ["unrelated.spill"]) == [os.path.abspath(spill_path(str(cap)))]
    assert run("prune", "--dir", str(tmp_path), "--older-than", "9999d").returncode == 0
    assert sorted(os.listdir(tmp_path)) == sorted(["renamed.jsonl", cap.name + ".spill"])


def test_a_spill_file_a_tap_still_uses_is_never_an_orphan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its capture deleted while it records: the relay's lock (and, where
    /proc tells, its open file) keeps prune off it until the tap is gone."""
    spill = str(tmp_path / "20260101T000000Z-live-1.jsonl.spill")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]))
    tap = subprocess.Popen([sys.executable, "-c", SPILLER, spill], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert tap.stdout is not None and tap.stdout.readline() == b"spilled\n"
        assert liveness.orphan_spills(tmp_path) == []
        monkeypatch.setattr(liveness, "_PROC", str(tmp_path / "no-proc"))     # the lock alone tells
        assert liveness.orphan_spills(tmp_path) == []
        p = run("prune", "--dir", str(tmp_path), "--older-than", "9999d")
        assert p.returncode == 0 and os.path.exists(spill) and b"spill" not in p.stdout + p.stderr
    finally:
        assert tap.stdin is not None
        tap.stdin.close()
        tap.wait(timeout=60)
    assert liveness.orphan_spills(tmp_path) == [spill]
    assert run("prune", "--dir", str(tmp_path), "--older-than", "9999d").returncode == 0
    assert os.listdir(tmp_path) == []
