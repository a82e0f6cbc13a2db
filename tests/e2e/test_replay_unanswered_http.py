"""Replay over Streamable HTTP against the official SDK server: a request whose id is
not an integer or a string (``1.5``, ``true``: replay sends the recorded id) is taken
for a notification and answered ``202 Accepted`` with an empty body, in SSE and JSON
response mode alike. That POST is over and says no answer will come: replay says so
at once (MISSING, "HTTP 202 with an empty body, not the answer"). It waited out the
whole --timeout, and so did every later step that waited for that answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from peers import free_port, listening
from replay.capgen import C2S, S2C, Tape
from replay.test_plan import handshake, req, res

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
HANG = 120          # the replay's --timeout is an hour: a test that waits for it fails here


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["sse", "json"])
async def test_a_202_to_a_request_is_said_at_once(tmp_path: Path, mode: list[str]) -> None:
    cap = str(tmp_path / "cap.jsonl")
    t = Tape(cap)
    handshake(t)
    t.send(C2S, req(1.5, "ping"))
    t.send(S2C, res(1.5, {}))
    t.send(C2S, req(2, "ping"))           # sent once the first ping was answered: it waits for it
    t.send(S2C, res(2, {}))
    t.close()
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http", *mode], port):
        with trio.fail_after(HANG):
            p = await trio.run_process([*MCPTAP, "replay", cap, "--url", f"http://127.0.0.1:{port}/mcp", "-o", str(tmp_path / "new.jsonl"),
                                        "--timeout", "3600", "--format", "json"], capture_stdout=True, capture_stderr=True, check=False)
    report = json.loads(p.stdout)
    rows = {e["seq"]: e for e in report["exchanges"]}
    pings = [e for e in report["exchanges"] if e["label"] == "ping"]
    assert [e["status"] for e in pings] == ["MISSING", "MATCH"], (pings, p.stderr)
    assert pings[0]["note"] == "HTTP 202 with an empty body, not the answer", rows
