"""Every command's --help ends with examples; colour follows one rule in every
command (--color/--no-color, then NO_COLOR, then "is stdout a terminal"),
through cli/output.py's palette."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli.diff import command as diff_command
from mcptap.cli.main import mcptap
from mcptap.cli.output import PALETTE, paint, styler, use_color
from replay.capgen import Ex, text_result, write_capture


@pytest.mark.parametrize("name", sorted(mcptap.commands))
def test_every_command_help_has_examples(name: str) -> None:
    out = CliRunner().invoke(mcptap, [name, "--help"]).output
    assert "  Examples:\n    mcptap " in out, out


def test_colour_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(True) and not use_color(None) and not use_color(False)
    monkeypatch.delenv("NO_COLOR")
    assert use_color(True) and not use_color(None)       # pytest's stdout is not a terminal
    assert styler(False) is None and styler(True) is paint
    assert paint("x", "error") != "x" and paint("x", "no such role") == "x"
    assert {"error", "warn", "info", "added", "removed", "changed", "breaking", "MATCH", "CHANGED"} <= set(PALETTE)


def test_diff_colour_only_when_asked(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    write_capture(a, [Ex("tools/call", {"name": "add"}, text_result("1"))])
    write_capture(b, [Ex("tools/call", {"name": "add"}, text_result("2"))])
    runner = CliRunner()
    assert "\x1b[" in runner.invoke(diff_command, [a, b, "--color"]).output
    assert "\x1b[" in runner.invoke(diff_command, [a, b, "--color"], env={"NO_COLOR": "1"}).output   # the flag wins
    assert "\x1b[" not in runner.invoke(diff_command, [a, b]).output
    assert "\x1b[" not in runner.invoke(diff_command, [a, b, "--no-color"]).output


def test_python_dash_m_mcptap() -> None:
    p = subprocess.run([sys.executable, "-m", "mcptap", "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("mcptap")
