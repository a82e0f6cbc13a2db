"""`process.exited_but_stdout_open` is judged when the relay says stdout ended
(its status pipe, ahead of the copy stream), not on when the low-priority copy
reader gets round to the end of stdout in the copy stream.

Seen on a real peer: FastMCP 4.2.3 behind the TypeScript SDK 1.13 client (its
close() sends SIGTERM at once) on a loaded machine: the server's stdout ended
at 5.123 s and the server exited with it, but the copy stream delivered that
EOF after the tap's 1 s orphan wait, and the capture said a descendant held
stdout open. Here the copy reader thread is made slow on purpose (a sleep
before it reports the EOF), which is what a starved reader does."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
LAGGING_TAP = """
import sys, time
import mcptap.transport.stdio as s
from mcptap.cli.main import main
orig = s.read_copies
lag = float(sys.argv.pop(1))
def slow(copy_r, h, rec, stdout_done):
    return orig(copy_r, h, rec, lambda: (time.sleep(lag), stdout_done()))
s.read_copies = slow
sys.argv[0] = "mcptap"
main()
"""


def run(tmp_path: Path, lag: float, server: str) -> set[str]:
    cap = tmp_path / "cap.jsonl"
    r = subprocess.run([sys.executable, "-c", LAGGING_TAP, str(lag), "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    c = read_capture(str(cap))
    assert c.end is not None
    return {f["code"] for rec in c.records for f in rec.get("findings", ())}


def test_a_lagging_copy_stream_is_not_an_orphan(tmp_path: Path) -> None:
    # stdout ends with the process; the reader reports it 2 s later (beyond the 1 s orphan wait)
    assert "process.exited_but_stdout_open" not in run(tmp_path, 2.0, "print('hi')")


def test_an_orphan_is_still_flagged_when_the_stream_lags(tmp_path: Path) -> None:
    server = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1.8); print(1)']); print('early')"
    assert "process.exited_but_stdout_open" in run(tmp_path, 0.5, server)


def test_a_host_slow_to_read_is_not_an_orphan(tmp_path: Path) -> None:
    # the server writes more than the host's stdout pipe holds and exits; the relay
    # has its bytes and waits on its write to the host, which reads only 2.5 s later
    # (beyond the 1 s orphan wait): no descendant holds the server's stdout
    cap = tmp_path / "cap.jsonl"
    server = "import sys; sys.stdout.buffer.write((b'{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"d\":\"' + b'x' * 1000 + b'\"}}\\n') * 300)"
    p = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    time.sleep(2.5)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert len(out) == 300 * 1049
    c = read_capture(str(cap))
    assert c.end is not None
    codes = {f["code"] for rec in c.records for f in rec.get("findings", ())}
    assert "process.exited_but_stdout_open" not in codes
