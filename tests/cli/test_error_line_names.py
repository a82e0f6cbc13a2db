"""A file name in mcptap's error and status lines (``say``, ``Fail``, usage errors) has the
form ``ls``, ``prune``, ``report`` and ``check`` give it (``escape.escape_name``): a backslash
before what would read as an escape is doubled, so a name written ``a\\x41`` literally is not
shown as the name holding the byte 0x41 escaped, nor ``a\\`` + LF as ``a\\n``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.escape import escape_name
from scripted import c2s, handshake, record, req, res, s2c

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a backslash is a separator there")

ODD = "a\\x41\\n"          # backslash x 4 1, backslash n: literally


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], capture_output=True, cwd=cwd, env=env, timeout=60)


def _shown(proc: subprocess.CompletedProcess[bytes], name: str) -> None:
    text = (proc.stderr + proc.stdout).decode()
    assert escape_name(name) in text, text
    assert escape_name(name) != name


def test_a_missing_directory(tmp_path: Path) -> None:
    proc = cli("ls", "--dir", ODD, cwd=tmp_path)
    assert proc.returncode == 2
    _shown(proc, ODD)


def test_a_report_written_and_a_capture_without_spill(tmp_path: Path) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    os.rename(cap, tmp_path / ODD)
    proc = cli("report", ODD, "-o", ODD + ".html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _shown(proc, ODD + ".html")
    proc = cli("recover", ODD, cwd=tmp_path)
    _shown(proc, ODD)
    proc = cli("scrub", ODD, "-o", "no-such-dir/" + ODD, cwd=tmp_path)
    assert proc.returncode != 0
    _shown(proc, "no-such-dir/" + ODD)


def test_a_capture_that_cannot_be_read_and_a_rules_file(tmp_path: Path) -> None:
    (tmp_path / ODD).write_text("not json\n")
    _shown(cli("show", ODD, cwd=tmp_path), ODD)
    rules = ODD + ".toml"
    (tmp_path / rules).write_text("keys = 3\n")
    cap = record(tmp_path / "cap.jsonl", handshake() + [("exit", 0)])
    _shown(cli("scrub", str(cap), "-o", "-", "--redact-rules", rules, cwd=tmp_path), rules)
