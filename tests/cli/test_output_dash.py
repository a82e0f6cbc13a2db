"""``-o -`` of every command: standard output where the command's stdout is free (export,
scrub, report, check), a usage error where stdout carries something else (record, replay,
serve, demo). It once wrote a file named ``-`` without a word (``replay -o -`` then read
``-`` back as stdin: "cannot read the new capture back for its findings: -: empty file")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = str(ROOT / "captures" / "clean-2025-06-18.jsonl")
FAULTY = str(ROOT / "captures" / "faulty-server.jsonl")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, "MCPTAP_DIR": str(cwd / "captures")})


@pytest.mark.parametrize(("args", "why"), [
    (["replay", CAPTURE, "-o", "-", "--", sys.executable, "-c", "pass"], "verdict"),
    (["record", "-q", "-o", "-", "--", sys.executable, "-c", "pass"], "server's messages"),
    (["record", "-q", "--output=-", "--upstream", "http://127.0.0.1:9/mcp"], "server's messages"),
    (["serve", CAPTURE, "-o", "-"], "served messages"),
    (["demo", "-o", "-"], "timeline"),
], ids=["replay", "record", "record-http", "serve", "demo"])
def test_dash_is_refused_where_stdout_is_taken(tmp_path: Path, args: list[str], why: str) -> None:
    proc = _run(args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"mcptap: {args[0]}: Invalid value for '-o' / '--output': - (standard output) cannot be used here"), line
    assert why in line
    assert list(tmp_path.iterdir()) == []           # no file named -, no capture directory


def test_check_dash_is_stdout(tmp_path: Path) -> None:
    plain = _run(["check", FAULTY, "--format", "json"], tmp_path)
    dash = _run(["check", FAULTY, "--format", "json", "-o", "-"], tmp_path)
    assert dash.returncode == plain.returncode == 1, dash.stderr
    assert dash.stdout == plain.stdout and '"captures"' in dash.stdout
    assert list(tmp_path.iterdir()) == []


def test_every_output_option_decides_what_dash_means() -> None:
    """A new ``-o`` must say whether ``-`` is stdout or why not (else: a file named -)."""
    import click

    from mcptap.cli.main import mcptap
    from mcptap.cli.options import NonEmptyPath

    seen = []
    for name, cmd in sorted(mcptap.commands.items()):
        for p in cmd.params:
            if isinstance(p, click.Option) and "--output" in p.opts:
                assert isinstance(p.type, NonEmptyPath), name
                assert p.type.allow_dash or p.type.no_dash, name
                seen.append(name)
    assert {"check", "export", "record", "replay", "report", "scrub", "serve", "demo"} <= set(seen), seen
