"""Every long command shows the shared progress line (cli/progress.py) when
stderr is a terminal, and nothing when it is not. Run as real processes with
stderr on a pseudo-terminal; ``MCPTAP_PROGRESS_DELAY=0`` writes the first
line before the work starts, so nothing depends on how long the work takes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pty_run import run_on_pty
from scripted import c2s, handshake, record, req, res, s2c

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]

# answers every request with an empty result (initialize with a real one)
SERVER = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        r = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}} if m["method"] == "initialize" else {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
        sys.stdout.flush()
"""


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "c.jsonl", handshake(server_caps={}) + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])


def _argv(name: str, cap: Path, tmp: Path) -> list[str]:
    return {
        "scrub": ["scrub", str(cap), "-o", str(tmp / "s.jsonl")],
        "report": ["report", str(cap), "-o", str(tmp / "r.html")],
        "export": ["export", str(cap), "-f", "messages", "-o", str(tmp / "m.jsonl")],
        "replay": ["replay", str(cap), "-o", str(tmp / "new.jsonl"), "--", sys.executable, "-c", SERVER],
        "check": ["check", str(cap)],
        "show": ["show", str(cap)],
    }[name]


def _on_pty(argv: list[str]) -> tuple[int, str]:
    """Run mcptap with stderr on a pseudo-terminal; (exit status, what the terminal got)."""
    code, got = run_on_pty([*MCPTAP, *argv], {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"})
    return code, got.decode("utf-8", "replace")


COMMANDS = ["scrub", "report", "export", "replay", "check", "show"]


@pytest.mark.parametrize("name", COMMANDS)
def test_long_commands_show_progress_on_a_terminal_and_clear_it(name: str, cap: Path, tmp_path: Path) -> None:
    code, tty = _on_pty(_argv(name, cap, tmp_path))
    assert code in (0, 1), tty
    assert f"mcptap: {name}: " in tty
    line = tty.split(f"mcptap: {name}: ", 1)[1]
    assert " s" in line.split("\r", 1)[0]             # the elapsed time ends the line
    assert "\r\x1b[K" in tty.split(f"mcptap: {name}: ", 1)[1]   # cleared afterwards


@pytest.mark.parametrize("name", COMMANDS)
def test_no_progress_when_stderr_is_not_a_terminal(name: str, cap: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"}
    proc = subprocess.run([*MCPTAP, *_argv(name, cap, tmp_path)], capture_output=True, env=env, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    assert b"\r" not in proc.stderr and b"\x1b[" not in proc.stderr
    assert f"mcptap: {name}: ".encode() not in proc.stderr


def test_replay_progress_counts_requests(cap: Path, tmp_path: Path) -> None:
    _, tty = _on_pty(_argv("replay", cap, tmp_path))
    assert "of 2 requests sent" in tty                 # initialize and ping


STREAMING = {                       # commands that write their output while they read
    "export": lambda cap, tmp: ["export", str(cap), "-f", "messages"],
    "scrub": lambda cap, tmp: ["scrub", str(cap), "-o", "-"],
    "report": lambda cap, tmp: ["report", str(cap), "-o", "-"],
    "show": lambda cap, tmp: ["show", str(cap)],
}


@pytest.mark.parametrize("name", sorted(STREAMING))
def test_no_progress_glued_into_output_on_the_same_terminal(name: str, cap: Path, tmp_path: Path) -> None:
    """stdout and stderr on one terminal: a progress line rewritten in place
    would be glued into the output (``… 1 s{"seq":22833,…``): none is shown."""
    code, got = run_on_pty([*MCPTAP, *STREAMING[name](cap, tmp_path)], {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"}, stdout=True)
    tty = got.decode("utf-8", "replace")
    assert code in (0, 1), tty
    assert tty.strip(), "the output reached the terminal"
    assert f"mcptap: {name}: " not in tty and "\r\x1b[K" not in tty


@pytest.mark.parametrize("name", ["check", "replay"])
def test_commands_that_write_after_the_work_still_show_progress_on_the_same_terminal(name: str, cap: Path, tmp_path: Path) -> None:
    code, got = run_on_pty([*MCPTAP, *_argv(name, cap, tmp_path)], {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"}, stdout=True)
    tty = got.decode("utf-8", "replace")
    assert code in (0, 1), tty
    before, _, after = tty.partition(f"mcptap: {name}: ")
    assert after and "\r\x1b[K" in after            # shown, then cleared before the output


@pytest.mark.parametrize("value", ["inf", "Infinity", "1e10", "1e300"])
@pytest.mark.parametrize("name", ["check", "show"])
def test_an_endless_progress_delay_shows_none(name: str, value: str, cap: Path, tmp_path: Path) -> None:
    """Once an uncaught OverflowError in the progress thread ("timestamp out of range")."""
    code, got = run_on_pty([*MCPTAP, *_argv(name, cap, tmp_path)], {**os.environ, "MCPTAP_PROGRESS_DELAY": value})
    tty = got.decode("utf-8", "replace")
    assert code in (0, 1) and "Traceback" not in tty and "Error" not in tty, tty
    assert f"mcptap: {name}: " not in tty


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_a_progress_delay_that_is_no_number_of_seconds_is_named_and_ignored(value: str, cap: Path, tmp_path: Path) -> None:
    code, got = run_on_pty([*MCPTAP, *_argv("check", cap, tmp_path)], {**os.environ, "MCPTAP_PROGRESS_DELAY": value})
    tty = got.decode("utf-8", "replace")
    assert code in (0, 1) and "Traceback" not in tty, tty
    assert f"MCPTAP_PROGRESS_DELAY={value!r}: not a number of seconds" in tty


@pytest.mark.parametrize("name", ["export", "scrub", "report"])
def test_commands_writing_to_a_file_show_progress_on_the_same_terminal(name: str, cap: Path, tmp_path: Path) -> None:
    """stdout and stderr on one terminal, the output going to ``-o FILE``: nothing can be glued
    into output there, and these commands run longest (export, scrub, report of a large capture:
    tens of seconds without a word)."""
    code, got = run_on_pty([*MCPTAP, *_argv(name, cap, tmp_path)], {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"}, stdout=True)
    tty = got.decode("utf-8", "replace")
    assert code in (0, 1), tty
    after = tty.partition(f"mcptap: {name}: ")[2]
    assert after and "\r\x1b[K" in after            # shown, then cleared


def test_no_progress_when_the_output_file_is_the_terminal(cap: Path, tmp_path: Path) -> None:
    """``-o /dev/stdout`` with standard output on the terminal: the output is there after all."""
    argv = [*MCPTAP, "export", str(cap), "-f", "messages", "-o", "/dev/stdout"]
    code, got = run_on_pty(argv, {**os.environ, "MCPTAP_PROGRESS_DELAY": "0"}, stdout=True)
    tty = got.decode("utf-8", "replace")
    assert code in (0, 1), tty
    assert '"method"' in tty and "mcptap: export: " not in tty
