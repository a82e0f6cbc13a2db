"""A server that fails at startup (issue 9 item 9) must not pass
``check --fail-on warn``: a non-zero exit is a warn; exiting while requests
wait and before answering any (before ``initialize``'s answer) is an error
(``lifecycle.eof_with_pending_requests``), the exit itself info as cases/B03 says.
Signals the tap itself sent at shutdown are not held against the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        b'"clientInfo":{"name":"c","version":"1"}}}\n')
ANSWER = ("import sys\nline = sys.stdin.readline()\n"
          "sys.stdout.write('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
          "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\\n'); sys.stdout.flush()\nsys.stdin.read()\n")


def _record(tmp_path: Path, code: str, stdin: bytes, *extra: str) -> Path:
    out = tmp_path / "c.jsonl"
    subprocess.run([*MCPTAP, "record", "-q", *extra, "-o", str(out), "--", sys.executable, "-c", code],
                   input=stdin, capture_output=True, timeout=60)
    return out


def _exit_finding(path: Path) -> dict:
    recs = read_capture(str(path)).records
    ex = next(r for r in recs if r["type"] == "process" and r.get("event") == "exit")
    return next(f for f in ex["findings"] if f["code"] == "process.exit")


def _check(path: Path, fail_on: str, *extra: str) -> int:
    return subprocess.run([*MCPTAP, "check", "--fail-on", fail_on, *extra, str(path)], capture_output=True, timeout=60).returncode


@pytest.mark.parametrize(("code", "stdin", "severity", "warn_rc", "error_rc"), [
    # died before answering initialize: the waiting request is lifecycle.eof_with_pending_requests (error)
    ("import sys; sys.exit(3)", INIT, "warn", 1, 1),
    ("import sys; sys.stdin.read()", INIT, "info", 1, 1),            # read it, exited 0, never answered (cases/B03)
    ("import sys; sys.exit(3)", b"", "warn", 1, 0),                  # failed at startup, nothing asked yet
    (ANSWER, INIT, "info", 0, 0),                                    # answered, clean exit
    (ANSWER.replace("sys.stdin.read()", "sys.stdin.read(); sys.exit(1)"), INIT, "warn", 1, 0),
])
def test_server_exit_severity(tmp_path: Path, code: str, stdin: bytes, severity: str, warn_rc: int, error_rc: int) -> None:
    path = _record(tmp_path, code, stdin)
    assert _exit_finding(path)["severity"] == severity
    # cached annotations and a full re-annotation agree (check re-derives process.exit)
    for extra in ((), ("--full",)):
        assert _check(path, "warn", *extra) == warn_rc
        assert _check(path, "error", *extra) == error_rc


def test_a_signal_the_tap_sent_at_shutdown_is_not_a_warning(tmp_path: Path) -> None:
    # answers, then ignores stdin EOF: the tap sends SIGTERM after --grace
    stubborn = ANSWER.replace("sys.stdin.read()\n", "sys.stdin.read()\nimport time\nwhile True: time.sleep(1)\n")
    path = _record(tmp_path, stubborn, INIT, "--grace", "0.3")
    f = _exit_finding(path)
    assert f["data"]["signal"] == 15 and f["severity"] == "info", f
