"""`mcptap serve --listen` of a stdio capture whose tool asks the client twice in a
row (the official-SDK server's `interview`: elicitation, then sampling): over
Streamable HTTP the official SDK client (which opens no GET stream when the
mock refuses one, as it does for a stdio capture) gets both server requests on
the tools/call's own SSE stream, in recorded order, answers each, and gets the
tool result there — as a real server sends related requests. Before the fix the
second request went to the (never opened) standalone stream and the call hung
until the client's timeout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CreateMessageResult, ElicitResult, TextContent

from mcptap.capture.reader import read_capture
from test_serve_http_sdk import serving

pytestmark = pytest.mark.e2e
SERVER = [sys.executable, str(Path(__file__).resolve().parents[1] / "replay" / "sdk_server.py"), "v1"]
MCPTAP = ["-m", "mcptap.cli.main"]


async def interview(target: Any) -> tuple[dict[str, Any], list[str]]:
    asked: list[str] = []

    async def sampling(ctx: Any, p: Any) -> CreateMessageResult:
        asked.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="banana"), model="fake")

    async def elicit(ctx: Any, p: Any) -> ElicitResult:
        asked.append("elicitation")
        return ElicitResult(action="accept", content={"colour": "blue"})

    async with Client(target, mode="legacy", sampling_callback=sampling, elicitation_callback=elicit, cache=None) as client:
        out = (await client.call_tool("interview", {})).model_dump(mode="json", exclude_none=True)
    return out, asked


async def test_chained_server_requests_travel_on_the_tool_calls_stream(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    with trio.fail_after(60):
        real, asked_real = await interview(StdioServerParameters(
            command=sys.executable, args=[*MCPTAP, "record", "-q", "-o", str(cap), "--", *SERVER]))
    assert asked_real == ["elicitation", "sampling"]
    assert real["content"][0]["text"] == "blue/banana"
    own = tmp_path / "own.jsonl"
    async with serving(cap, "-o", str(own)) as url:
        with trio.fail_after(20):
            served, asked = await interview(url)
    assert asked == asked_real
    assert served == real
    # in the mock's own capture: both server requests and the result on the tools/call POST's stream
    mine = read_capture(str(own))
    msgs = [r for r in mine.records if r.get("type") == "message"]
    call = next(r for r in msgs if r.get("method") == "tools/call")
    ex = call["transport"]["exchange"]
    result = next(r for r in msgs if r["dir"] == "s2c" and r.get("pair") == call["seq"])
    s2c = [(r.get("method") or r.get("kind"), r["transport"]) for r in msgs if r["dir"] == "s2c" and call["seq"] < r["seq"] <= result["seq"]]
    assert [m for m, _ in s2c] == ["elicitation/create", "sampling/createMessage", "response"], s2c
    assert all({k: v for k, v in t.items() if k != "conn"} == {"exchange": ex, "stream": "post"} for _, t in s2c)
