"""A host's signals to ``mcptap serve`` (stdio, stdio ``--extend``) and ``mcptap replay``
(stdio, HTTP), with the official-SDK server of signal_server.py.

SIGUSR1, SIGUSR2 and SIGALRM ended both by their default action, with the ``-o`` or new
capture unfinished and the report unwritten (and the server killed through PDEATHSIG):
now they go on to the server process of ours where there is one (``--extend``'s real
server, replay's stdio server) and are ignored where there is none, and the session ends
as without them. SIGHUP and SIGQUIT ended them likewise (and SIGTERM ended replay): now
every stop signal stops them as SIGTERM stops serve, with the capture finished and exit
128+N; replay forwards it to its stdio server first, as ``record`` does
(transport/stdio_signals.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture

pytestmark = pytest.mark.e2e

SERVER = [sys.executable, str(Path(__file__).with_name("signal_server.py"))]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
PASSED_ON = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
GATE = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gate", "arguments": {}}}


def _echo(i: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}


def _line(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":")).encode() + b"\n"


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "SIGNAL_MARK": str(tmp / "mark"), "SIGNAL_GATE": str(tmp / "gate")}


def _wait_for(mark: Path, line: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Until the server wrote ``line`` to ``mark`` (a hang guard only: a condition, not a delay)."""
    deadline = time.monotonic() + 60
    while not (mark.exists() and line in mark.read_text().splitlines()):
        assert time.monotonic() < deadline, (line, mark.read_text() if mark.exists() else None)
        assert proc is None or proc.poll() is None, (line, proc.returncode)
        time.sleep(0.01)


def _send(proc: subprocess.Popen[bytes], *msgs: Any) -> None:
    assert proc.stdin is not None
    for m in msgs:
        proc.stdin.write(_line(m))
    proc.stdin.flush()


def _read(proc: subprocess.Popen[bytes], n: int) -> list[bytes]:
    assert proc.stdout is not None
    return [proc.stdout.readline() for _ in range(n)]


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``record`` of a raw client and the server: initialize, gate (open), echo 'x'."""
    d = tmp_path_factory.mktemp("signals")
    (d / "gate").touch()
    cap = d / "cap.jsonl"
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(cap), "--", *SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(d))
    _send(proc, INIT, INITIALIZED, GATE, _echo(3, "x"))
    got = _read(proc, 3)
    assert b'"open"' in got[1] and b'"x"' in got[2], got
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return cap


def _signals(path: Path) -> list[tuple[Any, Any]]:
    """(signal, reason) of the process signal records in a capture."""
    return [(r.get("signal"), r.get("reason")) for r in read_capture(str(path)).records
            if r.get("type") == "process" and r.get("event") == "signal"]


# -- serve -------------------------------------------------------------------------------


@pytest.mark.parametrize("extend", [False, True], ids=["mock", "extend"])
def test_serve_passes_on_or_ignores_usr1_usr2_alrm(capture: Path, tmp_path: Path, extend: bool) -> None:
    cap = tmp_path / "cap.jsonl"
    cap.write_bytes(capture.read_bytes())
    own = tmp_path / "own.jsonl"
    proc = subprocess.Popen([*MCPTAP, "serve", str(cap), "-o", str(own), *(["--extend", "--", *SERVER] if extend else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp_path))
    _send(proc, INIT, INITIALIZED)
    assert b'"signal-server"' in _read(proc, 1)[0]
    if not extend:                      # (--extend: one received late would reach the server it starts, as under record)
        for s in PASSED_ON:
            proc.send_signal(s)         # ignored: gone once sent (SIG_IGN), nothing to wait for
    _send(proc, _echo(3, "x"))          # answered from the capture
    assert b'"x"' in _read(proc, 1)[0]
    if extend:
        _send(proc, _echo(4, "fresh"))  # forwarded: the real server runs from now on
        assert b'"fresh"' in _read(proc, 1)[0]
        for s in PASSED_ON:
            proc.send_signal(s)
            _wait_for(tmp_path / "mark", f"got {signal.Signals(s).name}", proc)
        _send(proc, _echo(5, "after"))  # the real server lives on, and answers
        assert b'"after"' in _read(proc, 1)[0]
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, (proc.returncode, err)
    end = read_capture(str(own)).end
    assert end is not None and end["exit_code"] == 0
    if extend:
        assert _signals(own) == [(signal.Signals(s).name, "forwarded") for s in PASSED_ON]
        assert b"after" in cap.read_bytes() and b"3 request(s) forwarded" not in err     # merged; 2 forwarded
        assert b"2 request(s) forwarded to the real server, 2 answered" in err, err


@pytest.mark.parametrize("extend", [False, True], ids=["mock", "extend"])
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT], ids=["HUP", "QUIT"])
def test_serve_stops_on_sighup_and_sigquit_as_on_sigterm(capture: Path, tmp_path: Path, extend: bool, sig: int) -> None:
    cap = tmp_path / "cap.jsonl"
    cap.write_bytes(capture.read_bytes())
    own = tmp_path / "own.jsonl"
    proc = subprocess.Popen([*MCPTAP, "serve", str(cap), "-o", str(own), *(["--extend", "--", *SERVER] if extend else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp_path))
    _send(proc, INIT, INITIALIZED, _echo(3, "fresh" if extend else "x"))
    assert b'"fresh"' in _read(proc, 2)[1] if extend else b'"x"' in _read(proc, 2)[1]
    proc.send_signal(sig)               # stdin still open
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert b"Traceback" not in err
    end = read_capture(str(own)).end
    assert end is not None and end["exit_code"] == 128 + sig
    if extend:
        # the mock is the host's server: the real one is shut down as at stdin EOF, not signalled
        assert _signals(own) == []
        assert b"fresh" in cap.read_bytes()                                    # the session was merged


# -- replay ------------------------------------------------------------------------------


def _replay(capture: Path, tmp: Path, out: str, *target: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*MCPTAP, "replay", str(capture), "-o", str(tmp / out), "--allow-side-effects", "--format", "json", *target],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp))


def _summary(stdout: bytes) -> list[tuple[str, str]]:
    """The JSON report's exchanges: (label, status)."""
    return [(r["label"], r["status"]) for r in json.loads(stdout)["exchanges"]]


class _HttpServer:
    """signal_server.py over Streamable HTTP, ready once its port accepts connections."""

    def __init__(self, tmp: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc = subprocess.Popen([*SERVER, "--http", str(port)], env=_env(tmp), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                return
            except OSError:
                assert self.proc.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_replay_passes_on_or_ignores_usr1_usr2_alrm(capture: Path, tmp_path: Path, http: bool) -> None:
    server = _HttpServer(tmp_path) if http else None
    target = ["--url", server.url] if server is not None else ["--", *SERVER]
    try:
        (tmp_path / "gate").touch()
        base = _replay(capture, tmp_path, "base.jsonl", *target)
        base_out, base_err = base.communicate(timeout=120)
        assert base.returncode in (0, 1), base_err
        (tmp_path / "gate").unlink()
        (tmp_path / "mark").unlink()
        proc = _replay(capture, tmp_path, "new.jsonl", *target)
        _wait_for(tmp_path / "mark", "waiting", proc)           # mid-session: the server holds gate
        for s in PASSED_ON:
            proc.send_signal(s)
            if not http:
                _wait_for(tmp_path / "mark", f"got {signal.Signals(s).name}", proc)
        (tmp_path / "gate").touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if server is not None:
            server.close()
    assert proc.returncode == base.returncode, (proc.returncode, err)
    assert _summary(out) == _summary(base_out) and ("tools/call gate", "MATCH") in _summary(out)
    new = read_capture(str(tmp_path / "new.jsonl"))
    assert new.end is not None and "replay_error" not in new.end
    if http:
        assert (tmp_path / "mark").read_text().splitlines() == ["waiting"]          # nothing reached the server
    else:
        assert _signals(tmp_path / "new.jsonl") == [(int(s), "forwarded") for s in PASSED_ON]


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT], ids=["HUP", "TERM", "QUIT"])
def test_replay_stops_on_a_stop_signal_with_its_capture_finished(capture: Path, tmp_path: Path, http: bool, sig: int) -> None:
    server = _HttpServer(tmp_path) if http else None
    target = ["--url", server.url] if server is not None else ["--", *SERVER]
    try:
        proc = _replay(capture, tmp_path, "new.jsonl", *target)
        _wait_for(tmp_path / "mark", "waiting", proc)           # the gate stays shut: only the signal ends it
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if server is not None:
            server.close()
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert f"interrupted ({signal.Signals(sig).name})".encode() in err and b"Traceback" not in err, err
    new = read_capture(str(tmp_path / "new.jsonl"))
    assert new.end is not None and new.end.get("replay_error") == f"interrupted ({signal.Signals(sig).name})"
    if not http:
        assert _signals(tmp_path / "new.jsonl")[0] == (int(sig), "forwarded")
        if sig != signal.SIGTERM:       # the SDK server dies of SIGTERM without a word; it writes these down
            _wait_for(tmp_path / "mark", f"got {signal.Signals(sig).name}")


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT], ids=["HUP", "QUIT"])
def test_serve_listen_stops_on_sighup_and_sigquit_as_on_sigterm(capture: Path, tmp_path: Path, sig: int) -> None:
    """(A closed terminal's SIGHUP ended it by the default action, ``-o`` without its end.)"""
    own = tmp_path / "own.jsonl"
    proc = subprocess.Popen([*MCPTAP, "serve", str(capture), "--listen", "127.0.0.1:0", "-o", str(own)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    assert b" on http://127.0.0.1:" in proc.stderr.readline()        # serving, its receiver in place or the latch
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, (proc.returncode, err)
    end = read_capture(str(own)).end
    assert end is not None and end["exit_code"] == 0
