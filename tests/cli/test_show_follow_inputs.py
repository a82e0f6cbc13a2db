"""`mcptap show --follow` on inputs that are not a plain growing file: standard
input (it streams until EOF), a gzip capture (read as it is), and a capture
that does not exist yet (a line on stderr says what it waits for), instead of
waiting forever in silence or reading gzip bytes as JSON."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]
CMD = [sys.executable, "-m", "mcptap.cli.main", "show", "--no-color", "--poll", "0.02"]


def capture(tmp_path: Path) -> Path:
    return record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])


def plain_show(path: Path) -> str:
    return subprocess.run([*CMD, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60, check=True).stdout


def test_follow_stdin_reads_until_eof(tmp_path: Path) -> None:
    cap = capture(tmp_path)
    proc = subprocess.run([*CMD, "--follow", "-"], input=cap.read_text(), capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "ping id=2" in proc.stdout and "Summary" in proc.stdout


def test_follow_gzip_capture_shows_it(tmp_path: Path) -> None:
    cap = capture(tmp_path)
    gz = tmp_path / "cap.jsonl.gz"
    gz.write_bytes(gzip.compress(cap.read_bytes()))
    proc = subprocess.run([*CMD, "--follow", str(gz)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.replace(str(gz), "X") == plain_show(cap).replace(str(cap), "X")


def test_follow_missing_file_says_it_waits(tmp_path: Path) -> None:
    later = tmp_path / "later.jsonl"
    proc = subprocess.Popen([*CMD, "--follow", str(later)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("mcptap: waiting for ") and str(later) in line and "Ctrl-C" in line
        later.write_bytes(capture(tmp_path).read_bytes())
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "ping id=2" in out
