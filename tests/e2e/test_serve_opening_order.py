"""What the recorded server wrote before any client message, and the recorded order across
client messages under ``--latency recorded``, with the official SDK client.

The HTTP mock never sent what the server wrote before the client's first message (a stdio
server's start-up log): now it comes first when the session's first request arrives, on the
GET stream when the recorded server offered one, else on that request's stream before its
answer. With ``--latency recorded`` the outputs of different client messages were released
each at its own recorded delay from when its message came, so a client quicker than the
recorded one got them in another order than the capture shows: the second start-up log
after the ``initialize`` answer, or the answer to a request sent after an earlier answer
before that answer. Now what the recorded server sent before a client message comes before
anything sent because of it (serve/order.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client

from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, note, record, req, res, s2c

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
_STR = {"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"], "type": "object"}
TOOLS = {"tools": [{"name": n, "inputSchema": {"type": "object"}, "outputSchema": _STR} for n in ("slow", "quick")]}


def _log(text: str) -> bytes:
    return note("notifications/message", {"level": "info", "data": text})


def _result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": {"result": text}}


def _capture(path: Path) -> Path:
    """Two logs at start (300 ms apart), the handshake, tools/list; ``slow`` answered after
    200 ms, and only then ``quick`` asked and answered at once."""
    return record(path, [
        s2c(_log("start 1")), ("wait", 300_000), s2c(_log("start 2")),
        *handshake("2025-11-25", {"tools": {}, "logging": {}}),
        c2s(req(2, "tools/list")), s2c(res(2, TOOLS)),
        c2s(req(3, "tools/call", {"name": "slow", "arguments": {}})), ("wait", 200_000), s2c(res(3, _result("slow"))),
        c2s(req(4, "tools/call", {"name": "quick", "arguments": {}})), s2c(res(4, _result("quick"))),
    ])


async def _session(client: Client, events: list[str], received: Any) -> None:
    """``slow`` then, once the mock has it, ``quick`` (a client quicker than the recorded one,
    which asked only after slow's answer): the answers' order."""
    events.append("initialized")
    await client.list_tools()

    async def call(name: str) -> None:
        r = await client.call_tool(name, {})
        events.append(r.structured_content["result"])

    async with trio.open_nursery() as n:
        n.start_soon(call, "slow")
        with trio.fail_after(30):               # a hang guard: wait for a condition, not a time
            while not received():
                await trio.sleep(0.001)
        n.start_soon(call, "quick")


@pytest.mark.parametrize("latency", [False, True], ids=["at-once", "recorded"])
async def test_http_client_gets_the_start_logs_first(tmp_path: Path, latency: bool) -> None:
    cap = _capture(tmp_path / "cap.jsonl")
    events: list[str] = []
    said: list[str] = []

    async def on_log(p: Any) -> None:
        events.append(p.data)

    mock = HttpMock(ServeCore(script_from_path(str(cap)), latency=latency), say=said.append)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        async with Client(url, mode="legacy", logging_callback=on_log) as client:
            await _session(client, events, lambda: len(mock.stateless.live.live_ids) == 3)   # initialize, tools/list, slow
        nursery.cancel_scope.cancel()
    # a stdio capture offers no GET stream: the start logs go on initialize's stream, before its answer
    assert events == ["start 1", "start 2", "initialized", "slow", "quick"]
    assert said == []


def test_stdio_gives_the_recorded_order_with_recorded_latency(tmp_path: Path) -> None:
    """All the client's lines at once (read in that order): a client far quicker than the recorded one."""
    cap = _capture(tmp_path / "cap.jsonl")
    lines = [handshake("2025-11-25")[0][1], note("notifications/initialized"), req(2, "tools/list"),
             req(3, "tools/call", {"name": "slow", "arguments": {}}), req(4, "tools/call", {"name": "quick", "arguments": {}})]
    p = subprocess.run([*MCPTAP, "serve", str(cap), "--latency", "recorded"], input=b"".join(lines), capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got = [json.loads(x) for x in p.stdout.splitlines()]
    assert [m.get("params", {}).get("data") if "method" in m else m["id"] for m in got] == ["start 1", "start 2", 1, 2, 3, 4]


async def test_http_client_gets_the_start_logs_on_the_get_stream_when_one_is_offered(tmp_path: Path) -> None:
    """(As from a capture whose recorded server gave a session id and answered GET with an event stream.)"""
    script = script_from_path(str(_capture(tmp_path / "cap.jsonl")))
    script.get_stream = script.stateful = True
    logs: list[str] = []
    said: list[str] = []

    async def on_log(p: Any) -> None:
        logs.append(p.data)

    mock = HttpMock(ServeCore(script), say=said.append)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        async with Client(url, mode="legacy", logging_callback=on_log) as client:
            await client.list_tools()
            with trio.fail_after(30):               # the SDK client opens its GET stream after initialize
                while len(logs) < 2:
                    await trio.sleep(0.001)
            assert [ms.standalone is not None for ms in mock.sessions.values()] == [True]
        nursery.cancel_scope.cancel()
    assert logs == ["start 1", "start 2"]
    assert said == []
