"""End to end: a capture of an SDK client's concurrent tool calls (three ``slow`` calls
that log each step, two ``echo``; the SDK client lists the tools between them to learn
their output schemas), served to the official SDK client over stdio and over HTTP. Each
recorded log reaches the client exactly once: the logs belong to the tool calls that were
running when they were written, not to the ``tools/list`` the client sent last (a live
client sends more or fewer of those, and a repeated answer replays no log); over HTTP each
goes on its tool call's stream while it is open, none is said to be lost."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, note, record, req, res, s2c

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]

_STR = {"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"], "type": "object"}
TOOLS = {"tools": [
    {"name": "echo", "inputSchema": {"properties": {"text": {"type": "string"}}, "required": ["text"], "type": "object"},
     "outputSchema": _STR},
    {"name": "slow", "inputSchema": {"properties": {"steps": {"type": "integer"}}, "required": ["steps"], "type": "object"},
     "outputSchema": _STR},
]}
CALLS = [("slow", {"steps": 3}), ("slow", {"steps": 5}), ("slow", {"steps": 2}), ("echo", {"text": "one"}), ("echo", {"text": "two"})]


def _log(n: int) -> bytes:
    return note("notifications/message", {"level": "info", "data": f"log {n}"})


def _result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": {"result": text}}


def parallel_capture(path: Path) -> Path:
    """The order a real SDK server's stdio session had (mcptap record of client_parlog.py):
    logs interleaved with results and the client's automatic tools/list requests."""
    return record(path, [
        *handshake("2025-11-25", {"tools": {}, "logging": {}}),
        *[c2s(req(i + 2, "tools/call", {"name": n, "arguments": a})) for i, (n, a) in enumerate(CALLS)],
        *[s2c(_log(n)) for n in range(1, 7)],
        s2c(res(5, _result("one"))), c2s(req(7, "tools/list")), s2c(res(6, _result("two"))), c2s(req(8, "tools/list")),
        s2c(_log(7)), s2c(res(2, _result("counted to 3"))), c2s(req(9, "tools/list")),
        s2c(_log(8)), s2c(res(4, _result("counted to 2"))), c2s(req(10, "tools/list")),
        s2c(res(7, TOOLS)), s2c(res(8, TOOLS)), s2c(_log(9)), s2c(res(9, TOOLS)), s2c(res(10, TOOLS)),
        s2c(_log(10)), s2c(res(3, _result("counted to 5"))),
    ])


async def _session(client: Client, logs: list[str]) -> list[str]:
    results: list[str] = []

    async def call(name: str, args: dict[str, Any]) -> None:
        r = await client.call_tool(name, args)
        results.append(r.structured_content["result"])

    async with trio.open_nursery() as n:
        for name, args in CALLS:
            n.start_soon(call, name, args)
    with trio.move_on_after(0.5):                 # anything still on its way
        while len(logs) < 11:
            await trio.sleep(0.01)
    return sorted(results)


EXPECTED_RESULTS = sorted(["counted to 3", "counted to 5", "counted to 2", "one", "two"])
EXPECTED_LOGS = sorted(f"log {n}" for n in range(1, 11))


async def test_each_log_reaches_a_stdio_client_once(tmp_path: Path) -> None:
    cap = parallel_capture(tmp_path / "cap.jsonl")
    logs: list[str] = []

    async def on_log(p: Any) -> None:
        logs.append(p.data)

    params = StdioServerParameters(command=sys.executable, args=[*MCPTAP[1:], "serve", str(cap)])
    async with Client(params, mode="legacy", logging_callback=on_log) as client:
        assert await _session(client, logs) == EXPECTED_RESULTS
    assert sorted(logs) == EXPECTED_LOGS


async def test_each_log_reaches_an_http_client_once_on_an_open_stream(tmp_path: Path) -> None:
    cap = parallel_capture(tmp_path / "cap.jsonl")
    logs: list[str] = []
    said: list[str] = []

    async def on_log(p: Any) -> None:
        logs.append(p.data)

    mock = HttpMock(ServeCore(script_from_path(str(cap))), say=said.append)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        async with Client(url, mode="legacy", logging_callback=on_log) as client:
            assert await _session(client, logs) == EXPECTED_RESULTS
        nursery.cancel_scope.cancel()
    assert sorted(logs) == EXPECTED_LOGS
    assert said == []
