"""``--listen`` mistakes of ``serve`` and ``record --upstream``: one line on
stderr naming the real cause, exit status 2, nothing served (a host name
that does not resolve is not blamed on loopback, a busy port says so)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scripted import handshake, record

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _run(tmp: Path, command: str, listen: str, *extra: str) -> str:
    if command == "serve":
        cap = record(tmp / "c.jsonl", handshake())
        args = ["serve", str(cap), "--listen", listen, "-o", str(tmp / "own.jsonl"), *extra]
    else:
        args = ["record", "--upstream", "http://127.0.0.1:9/mcp", "--listen", listen, "-o", str(tmp / "rec.jsonl"), *extra]
    p = subprocess.run([*MCPTAP, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stdout == "" and p.stderr.count("\n") == 1 and p.stderr.startswith("mcptap: "), p.stderr
    return p.stderr


COMMANDS = ["serve", "record"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("extra", [(), ("--allow-remote",)])
def test_a_host_that_does_not_resolve_is_named_as_the_cause(tmp_path: Path, command: str, extra: tuple[str, ...]) -> None:
    err = _run(tmp_path, command, "bogus.invalid:1", *extra)        # .invalid never resolves (RFC 6761)
    assert "'bogus.invalid'" in err and "does not resolve" in err and "loopback" not in err, err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_non_loopback_address_needs_allow_remote(tmp_path: Path, command: str) -> None:
    err = _run(tmp_path, command, "192.0.2.1:0")        # refused before any bind (TEST-NET-1)
    assert "non-loopback address 192.0.2.1" in err and "--allow-remote" in err, err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("listen, words", [("127.0.0.1:99999", "the port 99999 is out of range (0-65535"),
                                           ("127.0.0.1:http", "the port 'http' is not a number"),
                                           ("127.0.0.1:-1", "the port '-1' is not a number")])
def test_a_bad_port_says_what_is_wrong_with_it(tmp_path: Path, command: str, listen: str, words: str) -> None:
    err = _run(tmp_path, command, listen)
    assert words in err and "--listen" in err, err
    # worded as every other usage error: the command named, its help pointed at
    assert err.startswith(f"mcptap: {command}: Invalid value for --listen") and f"(see 'mcptap {command} --help')" in err, err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_port_in_use_says_so(tmp_path: Path, command: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        err = _run(tmp_path, command, f"127.0.0.1:{port}")
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use: another process listens on that port" in err, err
