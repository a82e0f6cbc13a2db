"""End to end: a real SDK server that prints a banner on stdout before MCP, recorded
through ``mcptap record``; ``mcptap serve`` of that capture gives the official SDK client
the banner again (byte for byte, as the real server did) and every answer, over stdio
and through the pytest plugin's second run. The mock used to die at the banner
(exit 2, the client's ``Connection closed``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcptap.capture.reader import read_capture

pytestmark = pytest.mark.e2e
pytest_plugins = ["pytester"]
SERVER = Path(__file__).parent / "banner_server.py"
MCPTAP = ["-m", "mcptap.cli.main"]


async def _use(params: StdioServerParameters) -> tuple[list[str], str]:
    async with Client(params, mode="legacy") as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        result = await client.call_tool("add", {"a": 2, "b": 40})
    return tools, result.content[0].text


async def test_sdk_client_gets_the_banner_and_every_answer_from_the_mock(tmp_path: Path) -> None:
    cap, own = tmp_path / "banner.jsonl", tmp_path / "own.jsonl"
    real = await _use(StdioServerParameters(command=sys.executable, args=[*MCPTAP, "record", "-q", "-o", str(cap), "--",
                                                                          sys.executable, str(SERVER)]))
    assert real == (["add", "boom", "echo", "slow"], "42")
    served = await _use(StdioServerParameters(command=sys.executable, args=[*MCPTAP, "serve", str(cap), "-o", str(own)]))
    assert served == real
    banner = [r for r in read_capture(str(own)).records if r.get("kind") == "non_json"]
    assert [(r["dir"], r["raw"]) for r in banner] == [("s2c", "Server running on stdio\n")]


PLUGIN_TEST = '''
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def test_banner_server(mcptap_mock):
    argv = mcptap_mock({capture!r}, server={server!r})
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy") as client:
        result = await client.call_tool("add", {{"a": 2, "b": 40}})
    assert result.content[0].text == "42"
'''


def test_the_plugins_second_run_serves_a_capture_with_a_banner(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    cap = tmp_path / "banner.jsonl"
    pytester.makepyfile(test_banner=PLUGIN_TEST.format(capture=str(cap), server=[sys.executable, str(SERVER)]))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)       # records
    assert b"Server running on stdio" in cap.read_bytes()
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)       # serves
