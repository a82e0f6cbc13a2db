"""Recorded causality of a cancel: an answer the real server sent only after the
client cancelled the request waits for the live client's cancel (the core, and
the official SDK client against ``mcptap serve`` over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from mcptap.serve.core import ServeCore
from mcptap.serve.script import script_from_path
from scripted import c2s, err, handshake, note, record, req, res, s2c

TOOLS = {"tools": [{"name": "sleepy", "inputSchema": {"type": "object"}}, {"name": "quick", "inputSchema": {"type": "object"}}]}


def _cap(path: Path) -> Path:
    return record(path, [
        *handshake(),
        c2s(req(2, "tools/list")),
        s2c(res(2, TOOLS)),
        c2s(req(3, "tools/call", {"name": "sleepy", "arguments": {}})),
        c2s(note("notifications/cancelled", {"requestId": 3, "reason": "timeout"})),
        s2c(err(3, -32800, "Request cancelled")),
        s2c(note("notifications/message", {"level": "info", "data": "after the cancel"})),
        c2s(req(4, "tools/call", {"name": "quick", "arguments": {}})),
        s2c(res(4, {"content": [{"type": "text", "text": "quick"}]})),
    ])


def test_an_answer_sent_after_the_clients_cancel_waits_for_the_live_cancel(tmp_path: Path) -> None:
    core = ServeCore(script_from_path(str(_cap(tmp_path / "c.jsonl"))))
    live = core.open()
    core.receive(live, {"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {}})
    assert core.receive(live, {"jsonrpc": "2.0", "id": 70, "method": "tools/call", "params": {"name": "sleepy", "arguments": {}}}) == []
    # an unrelated request is answered meanwhile; the sleepy one stays pending
    quick = core.receive(live, {"jsonrpc": "2.0", "id": 71, "method": "tools/call", "params": {"name": "quick", "arguments": {}}})
    assert [o.value["id"] for o in quick] == [71]
    # the live cancel (another reason, the live id) releases what followed the recorded one
    after = core.receive(live, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 70}})
    assert [o.value.get("id", o.value.get("method")) for o in after] == [70, "notifications/message"]
    assert after[0].value["error"]["code"] == -32800 and after[0].answers == 70 and after[0].request is None
    assert core.receive(live, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 70}}) == []


async def test_sdk_client_is_not_told_cancelled_before_it_cancels(tmp_path: Path) -> None:
    cap = _cap(tmp_path / "c.jsonl")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcptap.cli.main", "serve", str(cap)])
    async with Client(stdio_client(params)) as client:
        outcome = "pending"
        with trio.move_on_after(1.0):
            try:
                await client.call_tool("sleepy", {})
                outcome = "answered"
            except MCPError as exc:
                outcome = f"error: {exc}"
        assert outcome == "pending"          # as the real server: no answer until the client cancels
        assert (await client.call_tool("quick", {})).content[0].text == "quick"  # type: ignore[union-attr]
