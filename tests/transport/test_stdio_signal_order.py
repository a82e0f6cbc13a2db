"""Records keep causal order when the tap signals the server: the ``signal``
record precedes the server's EOF and exit that the signal caused. The record
used to be stamped after ``killpg`` returned, so a server that died at once
had its stdout EOF (stamped by the relay) recorded first. A tap thread
descheduled right after the kill (a loaded machine) is made certain here: the
test's mcptap sleeps 0.2 s after every real ``killpg``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANG = 30
CAT = shutil.which("cat") or "/bin/cat"
SLOW_KILL = """
import os, sys, time
real = os.killpg
def killpg(pgid, sig):
    real(pgid, sig)
    if sig:
        time.sleep(0.2)         # the tap's thread is off the CPU just after the kill
os.killpg = killpg
from mcptap.cli.main import main
sys.argv = ["mcptap", *sys.argv[1:]]
main()
"""
DEAF_TO_EOF = "import time\nwhile True: time.sleep(0.05)\n"     # dies of SIGTERM, ignores stdin EOF


def _tap(tmp_path: Path, *cmd: str, opts: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", SLOW_KILL, "record", "-q", "-o", str(tmp_path / "cap.jsonl"), *opts, "--", *cmd],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _order(tmp_path: Path) -> list[tuple[str, str | None]]:
    recs = [json.loads(line) for line in (tmp_path / "cap.jsonl").read_bytes().splitlines()]
    assert [r["seq"] for r in recs[1:]] == list(range(1, len(recs)))
    return [(r["type"], r.get("event") or r.get("dir")) for r in recs]


@pytest.mark.parametrize("how", ["host_signal", "shutdown"])
def test_the_signal_record_precedes_the_eof_and_exit_it_caused(tmp_path: Path, how: str) -> None:
    if how == "host_signal":
        p = _tap(tmp_path, CAT)
        p.stdin.write(b"hi\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"hi\n"       # the server runs and relays
        p.terminate()
        p.wait(HANG)
        p.stdin.close()
        reason = "forwarded"
    else:
        p = _tap(tmp_path, sys.executable, "-c", DEAF_TO_EOF, opts=("--grace", "0.2"))
        p.communicate(b"", timeout=HANG)             # stdin EOF; SIGTERM after the grace
        reason = "shutdown"
    assert p.returncode == 128 + 15
    order = _order(tmp_path)
    sig = order.index(("process", "signal"))
    assert sig < order.index(("eof", "s2c")) < order.index(("process", "exit")), order
    recs = [json.loads(line) for line in (tmp_path / "cap.jsonl").read_bytes().splitlines()]
    assert (recs[sig]["reason"], recs[sig]["delivered"]) == (reason, True)
    assert recs[sig]["t_us"] <= recs[order.index(("eof", "s2c"))]["t_us"]
