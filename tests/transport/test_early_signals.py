"""A host's SIGTERM/SIGINT/SIGHUP at any moment after the capture file exists
(``mcptap record`` has just started) is handled as it is later: forwarded to
the server, recorded, and the capture ends with its end record. It used to
kill mcptap before its signal receiver existed, leaving a 0-byte (or
header-only) capture. mcptap runs as a subprocess; the signal is sent at
several moments after the capture file appeared, and the outcome must be the
same at each: no timing assertion, only hang guards."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
HANG = 30
CAT = shutil.which("cat") or "/bin/cat"      # reads the host's stdin (kept open); dies of all three signals
DELAYS = (0.0, 0.002, 0.01, 0.03, 0.08, 0.2, 0.4)


def _record_and_signal(tmp_path: Path, sig: signal.Signals, delay: float) -> tuple[int, Path]:
    out = tmp_path / f"cap-{sig.name}-{delay}.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--", CAT],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + HANG
        while not out.exists():                 # the capture exists: from now on it must end complete
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "no capture file"
            time.sleep(0.0002)
        time.sleep(delay)
        p.send_signal(sig)
        p.wait(HANG)                            # the host's stdin stays open: only the signal ends it
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdin.close()
        p.stdout.close()
        p.stderr.close()
    return p.returncode, out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_right_after_the_capture_appeared_is_forwarded_and_recorded(tmp_path: Path, sig: signal.Signals) -> None:
    for delay in DELAYS:
        rc, out = _record_and_signal(tmp_path, sig, delay)
        assert out.stat().st_size > 0, f"{sig.name} {delay}s after the capture appeared left it empty"
        cap = read_capture(str(out))
        assert cap.header is not None and cap.end is not None, (sig.name, delay, out.read_text())
        assert not cap.truncated, (sig.name, delay)
        procs = [r for r in cap.records if r["type"] == "process"]
        assert [r["event"] for r in procs] == ["spawn", "signal", "exit"], (sig.name, delay, procs)
        assert (procs[1]["signal"], procs[1]["reason"], procs[1]["delivered"]) == (sig.name, "forwarded", True)
        assert procs[2]["signal"] == sig, (sig.name, delay, procs[2])
        assert rc == 128 + sig == cap.end["exit_code"], (sig.name, delay, rc)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_http_tap_stopped_right_after_the_capture_appeared_ends_it(tmp_path: Path, sig: signal.Signals) -> None:
    """The HTTP tap (`record --upstream`): a SIGTERM/SIGINT in its first
    moments killed it (exit 143, a header-only capture); it now stops as it
    does later: exit 0, the end record written."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for delay in DELAYS:
        out = tmp_path / f"http-{sig.name}-{delay}.jsonl"
        p = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--upstream",
                              "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:0"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        try:
            deadline = time.monotonic() + HANG
            while not out.exists():
                assert p.poll() is None, p.communicate()
                assert time.monotonic() < deadline, "no capture file"
                time.sleep(0.0002)
            time.sleep(delay)
            p.send_signal(sig)
            _, err = p.communicate(timeout=HANG)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, (sig.name, delay, p.returncode, err)
        cap = read_capture(str(out))
        assert cap.header is not None and cap.end is not None and not cap.truncated, (sig.name, delay, out.read_text())
