"""`mcptap scrub -o OUT` that cannot finish (a corrupt record half-way, Ctrl-C)
leaves no half-written OUT behind that reads like a scrubbed capture, and an
OUT that existed before stays as it was; a finished scrub replaces it whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]


def scrub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", "scrub", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60)


def test_corrupt_record_half_way_leaves_no_output(tmp_path: Path) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    lines = cap.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines[:3]) + b'{"type":"message","dir":"sideways"}\n' + b"".join(lines[3:]))
    out = tmp_path / "out.jsonl"
    proc = scrub(str(bad), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("mcptap: "), proc.stderr
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "cap.jsonl"]     # no temporary file left either

    out.write_text("older\n")
    proc = scrub(str(bad), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 2
    assert out.read_text() == "older\n"

    proc = scrub(str(cap), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b'{"type":"header"')
    assert (out.stat().st_mode & 0o777) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "cap.jsonl", "out.jsonl"]
