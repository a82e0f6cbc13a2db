"""End to end: `mcptap serve` of captures recorded from the official SDK server
(sdk_server.py through `mcptap record`), driven by the official SDK client over
stdio in both eras: every step of the scenario (tools/list, tools/call with
progress, an isError tool, an unknown tool, resources, prompts) gives exactly
the result the real server gave, and the mock's own capture is clean."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcptap.capture.reader import read_capture
from sdk_scenario import EXPECTED
from serve_scenario import steps

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
ERAS = {"legacy": {"mode": "legacy"}, "modern": {}}


def recorded_server(capture: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[*MCPTAP[1:], "record", "--quiet", "-o", str(capture), "--",
                                                               sys.executable, str(HERE / "sdk_server.py")])


def mock(capture: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[*MCPTAP[1:], "serve", str(capture), *extra])


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    import trio

    out = {}
    d = tmp_path_factory.mktemp("serve-sdk")

    async def rec(era: str) -> None:
        cap = d / f"{era}.jsonl"
        async with Client(recorded_server(cap), **ERAS[era]) as client:
            out[era] = (cap, await steps(client))

    for era in ERAS:
        trio.run(rec, era)
    return out


@pytest.mark.parametrize("era", ERAS)
async def test_sdk_client_gets_every_recorded_answer_over_stdio(recordings: dict[str, Any], tmp_path: Path, era: str) -> None:
    cap, real = recordings[era]
    assert real["answers"] == EXPECTED and real["progress"] == [1.0, 2.0, 3.0]
    own = tmp_path / "mock-session.jsonl"
    async with Client(mock(cap, "-o", str(own)), **ERAS[era]) as client:
        if era == "modern":
            assert client.protocol_version == "2026-07-28"
        served = await steps(client)
    assert served == real
    # the mock's own session is a normal capture: everything answered, nothing flagged
    mine = read_capture(str(own))
    assert mine.end is not None and mine.end["pending"] == []
    codes = {f["code"] for r in mine.records for f in r.get("findings", ())}
    assert "serve.no_recorded_answer" not in codes
    assert not [f for r in mine.records for f in r.get("findings", ()) if f["severity"] == "error"]


async def test_a_request_the_capture_cannot_answer_is_an_error_and_a_finding(recordings: dict[str, Any], tmp_path: Path) -> None:
    cap, _ = recordings["legacy"]
    own = tmp_path / "mock-session.jsonl"
    async with Client(mock(cap, "-o", str(own), "--quiet"), mode="legacy") as client:
        with pytest.raises(MCPError) as exc:
            await client.call_tool("echo", {"text": "never recorded"})
        assert exc.value.error.code == -32602 and "tools/call" in exc.value.error.message
        with pytest.raises(MCPError) as exc:
            await client.list_resource_templates()
        assert exc.value.error.code == -32601
    flagged = [r for r in read_capture(str(own)).records for f in r.get("findings", ()) if f["code"] == "serve.no_recorded_answer"]
    assert [r["json"]["error"]["code"] for r in flagged] == [-32602, -32601]
    assert all(r["dir"] == "s2c" and r["kind"] == "error" for r in flagged)
