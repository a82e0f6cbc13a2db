"""A signal mcptap was started with ignored stays ignored, in every long-running
command, from the first instant to the end (POSIX: ``cmd &`` in a
non-interactive shell ignores SIGINT; shells never trap a signal ignored on
entry). The HTTP tap used to take SIGINT over once its latch was installed
(~1 s in): a ``kill -INT`` before that was lost, one after it stopped the tap.

Each command runs as a real subprocess started with SIGINT ignored; SIGINT is
sent at once (before mcptap's code runs) and again once the command is up (its
start marker seen). The process's SIGINT disposition is read from
/proc/PID/status while it is up: ignored, never caught. SIGTERM then ends it as
usual; where the outcome tells which signal came (the stdio tap records what
it forwards, serve's exit status), SIGINT must have had no part in it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

import orjson
import pytest

from mcptap.capture.reader import read_capture
from scripted import handshake, record

ROOT = Path(__file__).resolve().parents[2]
HANG = 60
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status")


def _start(args: list[str], stdin: int | IO[bytes] = subprocess.DEVNULL, ignored: int = signal.SIGINT) -> subprocess.Popen[bytes]:
    """``ignored``: SIGINT as `cmd &` in a script starts it, SIGHUP as `nohup` does."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([*MCPTAP, *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         preexec_fn=lambda: signal.signal(ignored, signal.SIG_IGN) and None)
    p.send_signal(ignored)                  # before mcptap's first line: ignored by the interpreter already
    return p


def _disposition(pid: int, sig: int) -> str:
    fields = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)
    bit = 1 << (sig - 1)
    if int(fields["SigCgt"], 16) & bit:
        return "caught"
    return "ignored" if int(fields["SigIgn"], 16) & bit else "default"


def _wait_line(p: subprocess.Popen[bytes], stream: IO[bytes], marker: bytes) -> bytes:
    seen = b""
    while True:
        line = stream.readline()
        assert line, (p.wait(HANG), seen, p.stderr.read() if p.stderr else b"")
        seen += line
        if marker in line:
            return line


def _up_then_term(p: subprocess.Popen[bytes], probe: Callable[[], None] | None = None, ignored: int = signal.SIGINT) -> tuple[int, bytes]:
    """The command is up: the ``ignored`` signal is not caught; one sent now
    changes nothing (``probe`` shows it still works), SIGTERM ends it."""
    try:
        assert _disposition(p.pid, ignored) == "ignored"
        p.send_signal(ignored)
        if probe is not None:
            probe()
        assert p.poll() is None and _disposition(p.pid, ignored) == "ignored"
        p.send_signal(signal.SIGTERM)
        p.wait(HANG)            # stdin left open: an EOF would end a stdio session before the signal does
        err = p.stderr.read() if p.stderr is not None else b""
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err


def test_the_http_tap_keeps_an_ignored_sigint_ignored(tmp_path: Path) -> None:
    out = tmp_path / "http.jsonl"
    p = _start(["record", "-q", "-o", str(out), "--upstream", "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:0"])
    assert p.stderr is not None
    line = _wait_line(p, p.stderr, b"listening on ")
    url = line.split(b"listening on ", 1)[1].split(b" ", 1)[0].decode()

    def probe() -> None:            # the tap still relays: the closed upstream port gives a 502
        req = urllib.request.Request(url, data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                     headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, timeout=HANG)
        assert exc.value.code == 502

    rc, err = _up_then_term(p, probe)
    assert rc == 0, err
    cap = read_capture(str(out))
    assert cap.end is not None and not cap.truncated


@pytest.mark.parametrize("ignored", [signal.SIGINT, signal.SIGHUP])
def test_the_stdio_tap_neither_catches_nor_forwards_an_ignored_signal(tmp_path: Path, ignored: int) -> None:
    out = tmp_path / "stdio.jsonl"
    cat = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()\n"
    p = _start(["record", "-q", "-o", str(out), "--", sys.executable, "-c", cat], stdin=subprocess.PIPE, ignored=ignored)
    assert p.stdin is not None and p.stdout is not None

    def echo() -> None:
        p.stdin.write(b"x\n")       # type: ignore[union-attr]
        p.stdin.flush()             # type: ignore[union-attr]
        assert p.stdout.readline() == b"x\n"    # type: ignore[union-attr]

    echo()                                      # relaying: the tap's receiver is in place
    rc, err = _up_then_term(p, echo, ignored)
    cap = read_capture(str(out))
    sent = [r["signal"] for r in cap.records if r["type"] == "process" and r["event"] == "signal"]
    assert sent == ["SIGTERM"], (sent, err)     # the server (which inherits the ignored signal) got only SIGTERM
    assert rc == 128 + signal.SIGTERM == cap.end["exit_code"], err


def _capture(tmp_path: Path) -> Path:
    return record(tmp_path / "c.jsonl", [*handshake()])


def test_serve_over_http_keeps_an_ignored_sigint_ignored(tmp_path: Path) -> None:
    p = _start(["serve", "-q", str(_capture(tmp_path)), "--listen", "127.0.0.1:0"])
    assert p.stderr is not None
    _wait_line(p, p.stderr, b"serving ")
    rc, err = _up_then_term(p)
    assert rc == 0, err


def test_serve_over_stdio_ends_on_sigterm_not_on_an_ignored_sigint(tmp_path: Path) -> None:
    p = _start(["serve", "-q", str(_capture(tmp_path))], stdin=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}
    p.stdin.write(orjson.dumps(init) + b"\n")
    p.stdin.flush()
    assert orjson.loads(p.stdout.readline())["id"] == 1      # serving: the receiver is in place before stdin is read
    rc, err = _up_then_term(p)
    assert rc == 128 + signal.SIGTERM, err                   # a caught SIGINT ended the session first: 130


def test_show_follow_keeps_an_ignored_sigint_ignored(tmp_path: Path) -> None:
    p = _start(["show", "--follow", str(tmp_path / "later.jsonl")])
    assert p.stderr is not None
    _wait_line(p, p.stderr, b"waiting for ")
    rc, _ = _up_then_term(p)
    assert rc in (-signal.SIGTERM, 128 + signal.SIGTERM)


def test_serve_over_http_is_not_ended_by_a_server_s_own_signals(tmp_path: Path) -> None:
    # SIGUSR1/SIGUSR2/SIGALRM have no server to go to in the HTTP mock: ignored while it serves
    # (their default action ended it with its -o capture unfinished)
    p = subprocess.Popen([*MCPTAP, "serve", "-q", str(_capture(tmp_path)), "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.stderr is not None
    _wait_line(p, p.stderr, b"serving ")
    for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
        assert _disposition(p.pid, sig) == "ignored"
    rc, err = _up_then_term(p, ignored=signal.SIGUSR1)
    assert rc == 0, err
