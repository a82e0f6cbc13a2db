"""record, replay and serve end in a server command line: their own options are
parsed strictly (a typo is a usage error, never run as the server), and
everything from ``--`` or from the command's first word is the server's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from mcptap.cli import record, replay, serve

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = str(ROOT / "captures" / "clean-2025-06-18.jsonl")


def params(command: click.Command, *args: str) -> dict[str, object]:
    with command.make_context(command.name, list(args)) as ctx:
        return ctx.params


@pytest.mark.parametrize(("command", "args", "typo", "meant"), [
    (record.command, ("-o", "typo.jsonl", "--gracee", "1", "--", "python", "server.py"), "--gracee", "--grace"),
    (record.command, ("--upstrem", "http://127.0.0.1:9/mcp"), "--upstrem", "--upstream"),
    (record.command, ("-q", "--gracee=1", "python", "server.py"), "--gracee", "--grace"),
    (replay.command, ("cap.jsonl", "--allow-side-efects", "--", "python", "server.py"), "--allow-side-efects",
     "--allow-side-effects"),
    (serve.command, ("cap.jsonl", "--extnd", "--", "python", "server.py"), "--extnd", "--extend"),
])
def test_mistyped_option_is_a_usage_error(command: click.Command, args: tuple[str, ...], typo: str, meant: str) -> None:
    with pytest.raises(click.NoSuchOption) as info:
        params(command, *args)
    assert info.value.option_name == typo
    assert meant in info.value.format_message()


@pytest.mark.parametrize(("command", "args", "cmd", "own"), [
    (record.command, ("-qo", "x.jsonl", "npx", "-y", "pkg", "--port", "3", "--grace", "1"),
     ("npx", "-y", "pkg", "--port", "3", "--grace", "1"), {"quiet": True, "output": "x.jsonl", "grace": 5.0}),
    (record.command, ("--grace", "1", "-o", "--odd-name", "--", "python", "--", "-h"),
     ("python", "--", "-h"), {"grace": 1.0, "output": "--odd-name"}),
    (record.command, ("--grace=2", "-ox.jsonl", "python", "-o", "y"), ("python", "-o", "y"),
     {"grace": 2.0, "output": "x.jsonl"}),
    (replay.command, ("cap.jsonl", "--timeout", "3", "python", "s.py", "--timeout", "9", "-y"),
     ("python", "s.py", "--timeout", "9", "-y"), {"capture": "cap.jsonl", "timeout": 3.0}),
    (replay.command, ("--timeout", "3", "cap.jsonl", "--", "python", "--url", "x"),
     ("python", "--url", "x"), {"capture": "cap.jsonl", "url": None}),
    (serve.command, ("cap.jsonl", "--extend", "python", "server.py", "--listen", "3"),
     ("python", "server.py", "--listen", "3"), {"extend": True, "listen": None}),
])
def test_the_server_command_keeps_its_options(command: click.Command, args: tuple[str, ...], cmd: tuple[str, ...],
                                              own: dict[str, object]) -> None:
    got = params(command, *args)
    assert got["cmd"] == cmd
    for name, value in own.items():
        assert got[name] == value


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCPTAP_DIR": str(tmp_path / "caps")}
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize(("args", "typo"), [
    (("record", "-o", "typo.jsonl", "--gracee", "1", "--", sys.executable, "-c", "pass"), "--gracee"),
    (("record", "--upstrem", "http://127.0.0.1:9/mcp"), "--upstrem"),
    (("replay", CAPTURE, "--allow-side-efects", "--", sys.executable, "-c", "pass"), "--allow-side-efects"),
])
def test_a_typo_writes_nothing(tmp_path: Path, args: tuple[str, ...], typo: str) -> None:
    proc = cli(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    assert f"No such option '{typo}'" in proc.stderr and "Did you mean" in proc.stderr
    assert "cannot run" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
