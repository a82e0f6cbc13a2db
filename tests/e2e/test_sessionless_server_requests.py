"""HTTP without Mcp-Session-Id: the server asks the client back (sampling,
elicitation) on the response stream of a tools/call POST, and the client
answers in a POST of its own. The official SDK client, through the HTTP tap,
in front of `mcptap serve` (sessionless) serving a stdio capture of the SDK
server tests/e2e/sampling_server.py: the tap pairs each answer with the
server's request, `check` passes, and the live annotations are check --full's."""

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
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from test_serve_http_sdk import serving

pytestmark = pytest.mark.e2e
SERVER = [sys.executable, str(Path(__file__).parent / "sampling_server.py")]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def sampling(ctx: Any, p: Any) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="banana"), model="fake")


async def elicit(ctx: Any, p: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"colour": "blue"})


async def calls(client: Client) -> list[Any]:
    return [(await client.call_tool("ask", {"question": "fruit?"})).structured_content,
            (await client.call_tool("pick", {})).structured_content]


async def test_client_answers_in_own_posts_pair_with_sessionless_server_requests(tmp_path: Path) -> None:
    stdio_cap, served_cap, tapped = tmp_path / "stdio.jsonl", tmp_path / "served.jsonl", tmp_path / "tapped.jsonl"
    async with Client(StdioServerParameters(command=sys.executable, args=["-m", "mcptap.cli.main", "record", "-q", "-o", str(stdio_cap),
                                                                            "--", *SERVER]),
                      mode="legacy", sampling_callback=sampling, elicitation_callback=elicit) as client:
        real = await calls(client)
    assert real == [{"result": "banana"}, {"result": "blue"}]
    async with serving(stdio_cap, "-o", str(served_cap)) as url:
        rec = Recorder(CaptureWriter.open(str(tapped)), "http", {"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            tap_url = await nursery.start(HttpTap(HttpTapConfig(upstream=url), rec).serve)
            with trio.fail_after(30):
                async with Client(tap_url, mode="legacy", sampling_callback=sampling, elicitation_callback=elicit) as client:
                    assert await calls(client) == real
            nursery.cancel_scope.cancel()
        rec.close()
    for cap in (tapped, served_cap):
        msgs = [r for r in read_capture(str(cap)).records if r.get("type") == "message"]
        assert all(r.get("session") is None for r in msgs)           # sessionless: no Mcp-Session-Id
        asked = {r["seq"]: r for r in msgs if r["dir"] == "s2c" and r["kind"] == "request"}
        answers = [r for r in msgs if r["dir"] == "c2s" and r["kind"] == "response"]
        assert sorted(asked[r["pair"]]["method"] for r in answers) == ["elicitation/create", "sampling/createMessage"]
        assert {r["transport"]["exchange"] for r in answers}.isdisjoint(r["transport"]["exchange"] for r in asked.values())
        codes = [f["code"] for r in read_capture(str(cap)).records for f in r.get("findings", ())]
        assert "jsonrpc.unmatched_response" not in codes and "jsonrpc.unanswered_request" not in codes, codes
        for full in ((), ("--full",)):
            proc = await trio.run_process([*MCPTAP, "check", *full, str(cap)], capture_stdout=True, capture_stderr=True, check=False)
            assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
        diff = await trio.run_process([*MCPTAP, "check", "--full", "--format", "json", str(cap)], capture_stdout=True, check=False)
        live = await trio.run_process([*MCPTAP, "check", "--format", "json", str(cap)], capture_stdout=True, check=False)
        assert diff.stdout == live.stdout
