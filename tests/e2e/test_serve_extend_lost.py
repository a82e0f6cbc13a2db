"""``serve --extend`` when the real server (official SDK, extend_server.py) dies with
forwarded requests unanswered: each gets the mock's error saying so, at once, and the
summary counts them; the SDK client does not hang (it used to wait forever for id 7 of
the breaker's reproducer) and goes on being served from the capture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcptap.capture.reader import read_capture
from test_serve_extend import SERVER, _copy, legacy_capture

pytestmark = pytest.mark.e2e
MCPTAP = ["-m", "mcptap.cli.main"]
__all__ = ["legacy_capture"]            # the fixture, shared with test_serve_extend
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


async def test_sdk_client_gets_an_error_when_the_real_server_dies_and_goes_on(legacy_capture: Path, tmp_path: Path) -> None:
    cap, own = _copy(legacy_capture, tmp_path), tmp_path / "own.jsonl"
    params = StdioServerParameters(command=sys.executable, args=[*MCPTAP, "serve", str(cap), "-o", str(own), "--extend", "--", *SERVER])
    async with Client(params, mode="legacy") as client:
        with trio.fail_after(60), pytest.raises(MCPError) as exc:       # a hang guard: without the fix, forever
            await client.call_tool("die", {})
        assert "the real server exited before answering" in exc.value.error.message
        assert (await client.call_tool("echo", {"text": "a"})).content[0].text == "a"      # the capture's answer
        with pytest.raises(MCPError) as exc:                                             # not asked again: it is gone
            await client.call_tool("echo", {"text": "new"})
        assert "could not be asked" not in exc.value.error.message and exc.value.error.code == -32602
    flagged = [f["message"] for r in read_capture(str(own)).records for f in r.get("findings", ()) if f["code"] == "serve.no_recorded_answer"]
    assert len(flagged) == 2 and "the real server exited before answering" in flagged[0]


def test_every_pending_forwarded_request_is_answered_and_counted(legacy_capture: Path, tmp_path: Path) -> None:
    cap = _copy(legacy_capture, tmp_path)
    msgs = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sleepy", "arguments": {"seconds": 600}}},
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "die", "arguments": {}}}]
    done = subprocess.run([sys.executable, *MCPTAP, "serve", str(cap), "--extend", "--", *SERVER],
                          input=b"".join(json.dumps(m).encode() + b"\n" for m in msgs), capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines()) if "id" in m}
    assert answers[1]["result"]["serverInfo"]["name"] == "extend-server"
    for i in (3, 4):
        assert "the real server exited before answering" in answers[i]["error"]["message"]
    err = done.stderr.decode()
    assert "2 request(s) forwarded to the real server, 0 answered, 2 never (it exited first" in err
    assert "tools/call die: the real server exited before answering" in err
