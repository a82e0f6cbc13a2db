"""replay reports protocol errors new in the live session (a server that
answers every tools/call twice) and fails on them, as diff does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from replay.capgen import C2S, S2C, Tape
from replay.test_plan import handshake, req, res

ROOT = Path(__file__).resolve().parents[2]

DOUBLING_SERVER = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    m = msg["method"]
    if m == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    elif m == "tools/list":
        result = {"tools": []}
    else:
        result = {"content": [{"type": "text", "text": "2"}]}
    out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n"
    sys.stdout.write(out * (2 if m == "tools/call" else 1))
    sys.stdout.flush()
'''


def test_replay_fails_on_error_findings_new_in_the_live_session(tmp_path: Path) -> None:
    cap = str(tmp_path / "c.jsonl")
    t = Tape(cap)
    handshake(t, tools=[])
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}))
    t.send(S2C, res(2, {"content": [{"type": "text", "text": "2"}]}))
    t.close()
    server = tmp_path / "doubling.py"
    server.write_text(DOUBLING_SERVER)
    base = [sys.executable, "-m", "mcptap.cli.main", "replay", cap, "--allow-side-effects", "--timeout", "5", "--grace", "0.5"]
    out = subprocess.run([*base, "-o", str(tmp_path / "n.jsonl"), "--", sys.executable, str(server)],
                         cwd=ROOT, capture_output=True, timeout=60)
    text = out.stdout.decode()
    assert out.returncode == 1, (text, out.stderr.decode())
    assert "tools/call add" in text and "MATCH" in text                    # the answer itself is the same
    assert "findings new in the live session:" in text and "jsonrpc.response_for_completed_id: 1 (error" in text, text
    js = subprocess.run([*base, "-o", str(tmp_path / "m.jsonl"), "--format", "json", "--", sys.executable, str(server)],
                        cwd=ROOT, capture_output=True, timeout=60)
    doc = orjson.loads(js.stdout)
    assert js.returncode == 1 and doc["new_errors"] == [{"code": "jsonrpc.response_for_completed_id", "count": 1}]
    # the same server against a capture of itself: the error is not new, so no failure on its account
    again = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", str(tmp_path / "n.jsonl"), "--allow-side-effects",
                            "--format", "json", "-o", str(tmp_path / "o.jsonl"), "--", sys.executable, str(server)],
                           cwd=ROOT, capture_output=True, timeout=60)
    assert orjson.loads(again.stdout)["new_errors"] == [], again.stdout.decode()
