"""Ctrl-C during `mcptap replay` (a server that never answers): one
'mcptap: interrupted' line, exit status 130, the new capture finished with its
end record, never a trio exception-group traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]

SILENT = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18",
              "capabilities": {}, "serverInfo": {"name": "silent", "version": "1"}}}), flush=True)
"""


def test_sigint_mid_replay(tmp_path: Path) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    server = tmp_path / "silent.py"
    server.write_text(SILENT)
    new = tmp_path / "new.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "replay", str(cap), "--timeout", "120", "-o", str(new),
                             "--", sys.executable, str(server)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:      # wait until the ping is sent (the server answers initialize only)
            if new.exists() and b'"method":"ping"' in new.read_bytes():
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "Traceback" not in err, err
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("mcptap: interrupted")
    last = json.loads(new.read_bytes().splitlines()[-1])
    assert last["type"] == "end"


def test_sigint_mid_serve_stdio(tmp_path: Path) -> None:
    """The same for `mcptap serve` over stdio while the client keeps stdin open."""
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    out_cap = tmp_path / "mock.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "serve", str(cap), "-o", str(out_cap)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        proc.stdin.write(req(9, "ping"))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 9      # serving: the session is live
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert "Traceback" not in err, err
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "mcptap: interrupted"
    assert json.loads(out_cap.read_bytes().splitlines()[-1])["type"] == "end"


def test_replay_says_when_the_server_died(tmp_path: Path) -> None:
    """A server that exits at once (missing key, bad flag): the report says
    its exit status, not only MISSING verdicts."""
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", str(cap), "-o", str(tmp_path / "new.jsonl"), "--",
                           sys.executable, "-c", "import sys; sys.exit(4)"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "server exited with status 4" in proc.stdout
