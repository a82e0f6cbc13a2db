"""A capture whose file name is not UTF-8 (bytes from an old archive, another
locale): every command that puts the path into JSON, SARIF or HTML writes it
with U+FFFD for the undecodable bytes (SARIF: the bytes percent-encoded), never
a UnicodeEncodeError traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names are bytes")


@pytest.fixture
def odd(tmp_path: Path) -> bytes:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    name = os.fsencode(tmp_path) + b"/n\xff\xfe.jsonl"
    os.rename(cap, name)
    return name


def cli(*args: bytes | str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], capture_output=True, cwd=cwd, env=env, timeout=60)


def test_check_json(odd: bytes, tmp_path: Path) -> None:
    proc = cli("check", "--format", "json", odd, cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["captures"][0]["path"].endswith("n\ufffd\ufffd.jsonl")


def test_check_sarif(odd: bytes, tmp_path: Path) -> None:
    proc = cli("check", "--format", "sarif", odd, cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    uri = json.loads(proc.stdout)["runs"][0]["artifacts"][0]["location"]["uri"]
    assert uri == "n%FF%FE.jsonl"


def test_report_html(odd: bytes, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = cli("report", odd, "-o", str(out), cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert "n\ufffd\ufffd.jsonl" in out.read_text(encoding="utf-8")


def test_ls_json(odd: bytes, tmp_path: Path) -> None:
    proc = cli("ls", "--dir", str(tmp_path), "--format", "json", cwd=tmp_path)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    paths = [json.loads(line)["path"] for line in proc.stdout.splitlines()]
    assert any(p.endswith("n\ufffd\ufffd.jsonl") for p in paths)


def test_ls_text_has_no_raw_undecodable_bytes(odd: bytes, tmp_path: Path) -> None:
    proc = cli("ls", "--dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc.stdout.decode("utf-8")          # valid UTF-8 on the terminal
    assert "n\ufffd\ufffd.jsonl" in proc.stdout.decode()
