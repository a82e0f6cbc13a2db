"""`mcptap serve` replays server-initiated traffic at its recorded place: the
official-SDK server's `interview` tool (tests/replay/sdk_server.py) asks the
client for elicitation and then sampling before it answers. Served from its
capture, the SDK client is asked the same questions in the same order (the
mock waits for each answer) and gets the recorded result — handshake era
(server requests) and 2026-07-28 (input_required rounds) — also with the
recorded latencies (--latency recorded --speed 4)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CreateMessageResult, ElicitResult, TextContent

pytestmark = pytest.mark.e2e
SERVER = [sys.executable, str(Path(__file__).resolve().parents[1] / "replay" / "sdk_server.py"), "v1"]
MCPTAP = ["-m", "mcptap.cli.main"]
ERAS = {"legacy": {"mode": "legacy"}, "modern": {}}


async def session(params: StdioServerParameters, era: str) -> tuple[dict[str, Any], list[str]]:
    asked: list[str] = []

    async def sampling(ctx: Any, p: Any) -> CreateMessageResult:
        asked.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="banana"), model="fake")

    async def elicit(ctx: Any, p: Any) -> ElicitResult:
        asked.append("elicitation")
        return ElicitResult(action="accept", content={"colour": "blue"})

    async with Client(params, sampling_callback=sampling, elicitation_callback=elicit, cache=None, **ERAS[era]) as client:
        out = {
            "greet": (await client.call_tool("greet", {"name": "Ann"})).model_dump(mode="json", exclude_none=True),
            "interview": (await client.call_tool("interview", {})).model_dump(mode="json", exclude_none=True),
        }
    return out, asked


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_and_elicitation_come_at_their_place_and_wait_for_the_answer(tmp_path: Path, era: str) -> None:
    cap = tmp_path / "cap.jsonl"
    real, asked_real = await session(StdioServerParameters(
        command=sys.executable, args=[*MCPTAP, "record", "-q", "-o", str(cap), "--", *SERVER]), era)
    assert sorted(asked_real) == ["elicitation", "sampling"]  # 2026-07-28: asked together in one input round
    for extra in ((), ("--latency", "recorded", "--speed", "4")):
        served, asked = await session(StdioServerParameters(
            command=sys.executable, args=[*MCPTAP, "serve", "--quiet", str(cap), *extra]), era)
        assert served == real
        # handshake era: one server request after the other, each waiting for its answer;
        # 2026-07-28: both in one input_required round, answered concurrently by the client
        assert asked == asked_real if era == "legacy" else sorted(asked) == sorted(asked_real)
