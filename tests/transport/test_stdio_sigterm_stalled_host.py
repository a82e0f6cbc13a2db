"""A host that stopped reading stdout, then signals mcptap as the SDKs do
(close stdin, SIGTERM, SIGKILL 2 s later): README promises "a host's SIGTERM
gets the capture finished at once".

Seen while breaking the stdio forward path: the server dies of the forwarded
SIGTERM at once, but the relay's s2c pump is blocked writing a chunk to the
host's full stdout pipe, so it never reads the server's stdout to EOF. The tap
then waits ORPHAN_WAIT, records ``process.exited_but_stdout_open`` ("a
descendant holds it": no descendant exists, the server's stdout is closed) and
waits for stdout to end for as long as the host does not read. The end record
is written only when the host finally reads or closes its end; a host that
SIGKILLs after its 2 s left a capture without an end record (and without the
server's exit record). Now, once signalled with the server's process group
gone, the tap stops the relay and ends the capture with a gap record for the
output the host never read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
FLOOD = ("import sys\nd = b'{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"' + b'x' * 1000 + b'\"}}\\n'\n"
         "while True:\n    sys.stdout.buffer.write(d)\n")
WINDOW = 4.0        # s after SIGTERM before the host's SIGKILL (the SDKs wait 2 s)


def test_sigterm_with_a_host_that_stopped_reading_still_ends_the_capture(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(cap), "--", sys.executable, "-c", FLOOD],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while (not cap.exists() or cap.stat().st_size < 30_000) and time.monotonic() < deadline:
            time.sleep(0.05)                # the flood has filled the host's stdout pipe: the host never reads it
        assert p.stdin is not None
        p.stdin.close()
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(WINDOW)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
        if p.stdout is not None:
            p.stdout.close()
    c = read_capture(str(cap))
    assert c.end is not None, "SIGTERM did not get the capture finished before the host's SIGKILL"
    assert any(r["type"] == "process" and r.get("event") == "exit" for r in c.records)
    # what the host never read is not in the capture, and the capture says so
    assert any(r["type"] == "gap" and "did not read its stdout" in r.get("reason", "") for r in c.records)
    assert p.returncode != -signal.SIGKILL, "the host had to SIGKILL mcptap"
    # the relay was stopped mid-stream: a line it cut is not the server's unterminated line
    assert "framing.unterminated_line" not in c.end.get("codes", {})
