"""`mcptap serve --latency recorded` keeps a request's recorded order: a tool asks the client
(elicitation), logs while it waits (recorded before the client's answer), then asks again
(sampling) once answered. A live client that answers at once must not get the second request
before the log: each request's messages wait for the earlier ones (serve/order.py) — over stdio
and over HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson
import trio
from test_serve_http import ACCEPT, INIT

from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, note, record, req, res, s2c

ASK = {"message": "colour?", "requestedSchema": {"type": "object", "properties": {}}}
EXPECTED = ["elicitation/create", "notifications/message", "sampling/createMessage", "response"]


def _cap(path: Path) -> Path:
    return record(path, [
        *handshake(),
        c2s(req(2, "tools/call", {"name": "ask", "arguments": {}})),
        s2c(req(11, "elicitation/create", ASK)),
        ("wait", 300_000),
        s2c(note("notifications/message", {"level": "info", "data": "waiting for the user"})),
        c2s(res(11, {"action": "accept", "content": {}})),
        s2c(req(12, "sampling/createMessage", {"messages": [], "maxTokens": 5})),
        c2s(res(12, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})),
        s2c(res(2, {"content": [{"type": "text", "text": "done"}]})),
    ])


def _answer(msg: dict[str, Any]) -> dict[str, Any] | None:
    result = {"elicitation/create": {"action": "accept", "content": {}},
              "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "y"}}.get(msg.get("method", ""))
    return None if result is None else {"jsonrpc": "2.0", "id": msg["id"], "result": result}


async def test_stdio_a_quick_answer_does_not_overtake_what_the_tool_sent_before_it(tmp_path: Path) -> None:
    cap = _cap(tmp_path / "c.jsonl")
    proc = await trio.lowlevel.open_process([sys.executable, "-m", "mcptap.cli.main", "serve", "--quiet", "--latency", "recorded", str(cap)],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[str] = []
    buf = b""
    with trio.fail_after(20):
        for m in (INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                  {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask", "arguments": {}}}):
            await proc.stdin.send_all(orjson.dumps(m) + b"\n")
        while "response" not in seen:
            while b"\n" not in buf:
                buf += await proc.stdout.receive_some(65536)
            line, buf = buf.split(b"\n", 1)
            msg = orjson.loads(line)
            if msg.get("id") == "i":
                continue
            seen.append(msg.get("method", "response"))
            ans = _answer(msg)
            if ans is not None:
                await proc.stdin.send_all(orjson.dumps(ans) + b"\n")
        await proc.stdin.aclose()
        await proc.wait()
    assert seen == EXPECTED


async def test_http_a_quick_answer_does_not_overtake_what_the_tool_sent_before_it(tmp_path: Path) -> None:
    cap = _cap(tmp_path / "c.jsonl")
    seen: list[str] = []
    server = HttpMock(ServeCore(script_from_path(str(cap)), latency=True))
    async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=10) as http:
        url = await nursery.start(server.serve)
        await http.post(url, json=INIT, headers=ACCEPT)
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=ACCEPT)
        with trio.fail_after(20):
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask", "arguments": {}}}
            async with http.stream("POST", url, json=call, headers=ACCEPT) as resp:
                async for line in resp.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    msg = orjson.loads(line[6:])
                    seen.append(msg.get("method", "response"))
                    ans = _answer(msg)
                    if ans is not None:
                        assert (await http.post(url, json=ans, headers=ACCEPT)).status_code == 202
        nursery.cancel_scope.cancel()
    assert seen == EXPECTED
