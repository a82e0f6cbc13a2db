"""The demo peers (mcptap.demo) and `mcptap demo`.

* the demo client and server talk correctly directly (no tap), in every
  revision the server accepts, and the server's error paths, cancellation and
  shutdown follow the spec;
* the official SDK client accepts the demo server;
* through `mcptap record` the capture pairs every request, has no error or warn
  finding, and its end record's SHA-256 digests match the recorded bytes;
* `mcptap demo` runs end to end and exits 0.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.format import message_from_record
from mcptap.capture.reader import Capture, read_capture
from mcptap.demo import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from mcptap.demo.client import run_script
from mcptap.demo.connection import Connection, RpcError

SERVER = [sys.executable, "-m", "mcptap.demo.server"]
RECORD = Path(__file__).resolve().parents[1] / "mcptap" / "cli" / "record.py"
INIT = {"capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}


def initialized(offer: str = PROTOCOL_VERSION) -> tuple[Connection, dict]:
    conn = Connection(SERVER)
    result = conn.call("initialize", {"protocolVersion": offer, **INIT})
    conn.notify("notifications/initialized")
    return conn, result


# -- directly, no tap ---------------------------------------------------------------------

@pytest.mark.parametrize("offer", SUPPORTED_VERSIONS)
def test_scripted_session_direct(offer: str) -> None:
    conn = Connection(SERVER)
    said: list[str] = []
    problems = run_script(conn, said.append, offer)
    code = conn.close()
    assert problems == [] and conn.problems == [], (problems, conn.problems)
    assert code == 0
    assert f"protocol {offer}" in said[0]
    assert any("3 progress notifications" in line for line in said)


def test_version_negotiation_and_revision_fields() -> None:
    conn, result = initialized("2099-01-01")
    assert result["protocolVersion"] == PROTOCOL_VERSION          # counter-offer, not an error
    assert "title" in result["serverInfo"] and "instructions" in result
    assert conn.close() == 0
    conn, result = initialized("2024-11-05")
    assert result["protocolVersion"] == "2024-11-05"
    assert "title" not in result["serverInfo"] and "instructions" not in result
    tools = conn.call("tools/list")["tools"]
    assert all("title" not in t and "outputSchema" not in t for t in tools)
    add = conn.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert "structuredContent" not in add and add["content"][0]["text"] == '{"sum": 3}'
    assert conn.close() == 0 and conn.problems == []


def test_error_paths() -> None:
    conn = Connection(SERVER)

    def error(method: str, params: dict | None = None) -> RpcError:
        with pytest.raises(RpcError) as info:
            conn.call(method, params)
        return info.value

    assert error("tools/list").code == -32600                      # before initialize
    assert conn.call("ping") == {}                                  # ping is always allowed
    conn.call("initialize", {"protocolVersion": PROTOCOL_VERSION, **INIT})
    conn.notify("notifications/initialized")
    assert error("initialize", {"protocolVersion": PROTOCOL_VERSION, **INIT}).code == -32600
    assert error("completion/complete", {}).code == -32601         # capability not declared
    assert error("no/such/method").code == -32601
    assert error("tools/call", {"name": "nope", "arguments": {}}).code == -32602
    missing = error("resources/read", {"uri": "demo://missing"})
    assert (missing.code, missing.data) == (-32002, {"uri": "demo://missing"})
    assert error("prompts/get", {"name": "greet", "arguments": {}}).code == -32602
    assert error("logging/setLevel", {"level": "loud"}).code == -32602
    assert error("tools/list", {"cursor": "made-up"}).code == -32602
    # Bad tool arguments are a tool execution error, not a protocol error (2025-11-25).
    bad = conn.call("tools/call", {"name": "add", "arguments": {"a": "1", "b": 2}})
    assert bad["isError"] is True
    assert conn.call("resources/read", {"uri": "demo://echo/hi%20there"})["contents"][0]["text"] == "hi there"
    # Unreadable input is answered without an id; notifications never are.
    conn.notify("notifications/unknown")
    conn.proc.stdin.write(b'not json\n[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n'
                          b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n\n')
    assert conn.call("ping") == {}
    assert conn.close() == 0
    assert [p.split(":")[0] for p in conn.problems] == ["response with unknown id None"] * 3, conn.problems
    assert ['"code": -32700', '"code": -32600', '"code": -32600'] == [p.split("{", 2)[2].split(",")[0] for p in conn.problems]


def test_progress_then_cancellation_stops_everything() -> None:
    conn, _ = initialized()
    conn.call("logging/setLevel", {"level": "debug"})
    call = conn.request("tools/call", {"name": "slow_count", "arguments": {"count": 100, "interval_ms": 10}}, progress=True)
    while len(call.progress) < 3:
        assert not call.done.wait(0.01)
    conn.cancel(call)
    assert conn.call("ping") == {}   # the server has read the cancel before this answer
    seen = len(call.progress)
    assert conn.close() == 0
    assert len(call.progress) == seen and not call.done.is_set() and conn.late_responses == []
    assert [p["progress"] for p in call.progress] == list(range(1, seen + 1))
    assert call.progress[0]["total"] == 100 and "message" in call.progress[0]
    logs = [n for n in conn.notifications if n["method"] == "notifications/message"]
    assert logs and logs[0]["params"]["level"] == "info"
    assert conn.problems == []


def test_stdin_eof_ends_the_server_with_work_in_flight() -> None:
    conn, _ = initialized()
    call = conn.request("tools/call", {"name": "slow_count", "arguments": {"count": 100, "interval_ms": 100}})
    assert conn.close() == 0                 # no SIGTERM needed: close() reports one as a problem
    assert conn.problems == []
    with pytest.raises(Exception, match="closed its stdout without answering"):
        call.result(0)


# -- the official SDK client ----------------------------------------------------------------

async def test_official_sdk_client_accepts_the_demo_server() -> None:
    from mcp import Client
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed is True
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == ["echo", "add", "slow_count", "fail"]
        echoed = await session.call_tool("echo", {"text": "through the SDK"})
        assert echoed.content[0].text == "through the SDK" and not echoed.is_error
        added = await session.call_tool("add", {"a": 2, "b": 0.5})   # the SDK checks it against outputSchema
        assert added.structured_content == {"sum": 2.5}
        steps: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            steps.append(value)

        counted = await session.call_tool("slow_count", {"count": 2, "interval_ms": 0}, progress_callback=progress)
        assert counted.content[0].text == "counted to 2" and steps == [1, 2]
        failed = await session.call_tool("fail", {})
        assert failed.is_error
    # The high-level client probes server/discover (2026-07-28) first; the demo
    # server answers -32601 and the client falls back to initialize.
    async with Client(params) as client:
        assert (await client.call_tool("echo", {"text": "auto"})).content[0].text == "auto"


# -- through the tap ------------------------------------------------------------------------

def severities(cap: Capture) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"error": [], "warn": [], "info": []}
    for rec in cap.records:
        for key in ("findings", "unanswered"):
            if isinstance(rec.get(key), list):
                for f in rec[key]:
                    out[f["severity"]].append(f"#{rec.get('seq')} {f['code']}: {f['message']}")
    return out


def test_session_through_mcptap_record(tmp_path: Path) -> None:
    if not RECORD.exists():
        pytest.skip("mcptap/cli/record.py does not exist yet")
    path = tmp_path / "demo.jsonl"
    conn = Connection([sys.executable, "-m", "mcptap.cli.main", "record", "--quiet", "-o", str(path), "--", *SERVER])
    problems = run_script(conn, lambda line: None)
    assert conn.close() == 0 and problems == [] and conn.problems == []
    cap = read_capture(str(path))
    found = severities(cap)
    assert found["error"] == [] and found["warn"] == [], found
    msgs = [r for r in cap.records if r["type"] == "message"]
    requests = {r["seq"]: r for r in msgs if r["kind"] == "request"}
    responses = [r for r in msgs if r["kind"] in ("response", "error")]
    assert sorted(r["pair"] for r in responses) == sorted(requests), "every request answered exactly once"
    assert all(requests[r["pair"]]["id"] == r["id"] for r in responses)
    assert {r.get("rev") for r in msgs if r["seq"] > min(requests)} == {PROTOCOL_VERSION}
    assert [r["method"] for r in msgs if r["kind"] == "notification"] == [
        "notifications/initialized", "notifications/message"] + ["notifications/progress"] * 3
    end = cap.end
    assert end is not None and end["exit_code"] == 0 and end["pending"] == []
    for d in ("c2s", "s2c"):
        raw = b"".join(message_from_record(r).raw for r in msgs if r["dir"] == d)
        assert end[d]["bytes"] == len(raw) and end[d]["sha256"] == hashlib.sha256(raw).hexdigest()
        assert end[d]["messages"] == sum(1 for r in msgs if r["dir"] == d)


def test_mcptap_demo_end_to_end(tmp_path: Path) -> None:
    if not RECORD.exists():
        pytest.skip("mcptap/cli/record.py does not exist yet")
    env = {**os.environ, "MCPTAP_DIR": str(tmp_path)}     # default capture path goes here
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "demo"], capture_output=True, env=env,
                          timeout=60)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, (out, err)
    captures = list(tmp_path.glob("*.jsonl"))
    assert len(captures) == 1 and f"capture: {captures[0]}" in out
    assert "findings: 0 error, 0 warn" in out
    assert "tools/call" in out and "session OK" in err
    assert severities(read_capture(str(captures[0])))["warn"] == []
