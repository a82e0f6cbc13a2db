"""End to end: a client walks away from its answer, through the real HTTP tap,
with the official SDK (mcp 2.x) server tests/e2e/cut_server.py. On
2026-07-28 Streamable HTTP closing the response stream IS the cancellation (no
notifications/cancelled); a client that stops reading mid-event cut the event
itself, not the server. Live findings and `check --full` agree."""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio
from mcp import Client

from mcptap.capture.reader import read_capture
from peers import free_port, listening
from test_http_sdk import tapped
from test_http_tap_faults import findings_live_and_full

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "cut_server.py"


@asynccontextmanager
async def cut_server(*args: str):
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), *args], port):
        yield f"http://127.0.0.1:{port}"


def records(path: Path) -> list[dict[str, Any]]:
    return read_capture(str(path)).records


@pytest.mark.parametrize("flags", [("--json", "--stateless"), ("--stateless",), ("--json",), ()])
async def test_a_modern_client_that_gives_up_on_a_call_cancels_it(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """The SDK client in auto mode (2026-07-28) gives up on a slow tools/call
    (anyio.move_on_after): its connection closes before the answer. That is
    the cancellation: cancel.request by transport, never an unanswered request."""
    cap = tmp_path / "cap.jsonl"
    async with cut_server("streamable-http", *flags) as base, tapped(base + "/mcp", cap) as (url, _tap):
        with trio.fail_after(30):
            async with Client(url, mode="auto") as client:
                with anyio.move_on_after(0.5):
                    await client.call_tool("sleepy", {"seconds": 3})
                assert (await client.call_tool("sleepy", {"seconds": 0})).content[0].text == "woke up"
            await trio.sleep(0.3)
    recs = records(cap)
    call = next(r for r in recs if r["type"] == "message" and r.get("method") == "tools/call")
    assert call["rev"] == "2026-07-28"
    live, full = findings_live_and_full(cap)
    assert live == full
    codes = [(f[3], f[4]) for f in live]
    assert ("jsonrpc.unanswered_request", "error") not in codes, live
    assert not any(sev in ("error", "warn") for _, sev in codes), live
    cancels = [f for f in live if f[3] == "cancel.request"]
    assert len(cancels) == 1 and '"by": "transport"' in cancels[0][6] and str(call["seq"]) in cancels[0][6], live
    assert recs[-1]["type"] == "end" and recs[-1]["pending"] == []
