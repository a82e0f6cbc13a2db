"""The pytest plugin (entry point pytest11): `mcptap_mock` with the official SDK
client — record on the first run (record mode once), serve from the capture
after (the real server is then not even runnable), over stdio and HTTP; record
mode none without a capture fails the test with a one-line reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
pytest_plugins = ["pytester"]
SERVER = Path(__file__).parent / "sdk_server.py"

TEST_FILE = '''
import sys
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SERVER = {server!r}
CAPTURE = {capture!r}


async def test_stdio_mock(mcptap_mock):
    argv = mcptap_mock(CAPTURE, server=SERVER)
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy") as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        result = await client.call_tool("add", {{"a": 2, "b": 40}})
    assert tools == ["add", "boom", "echo", "slow"]
    assert result.content[0].text == "42"
'''

HTTP_TEST = '''
import pytest
from mcp import Client

@pytest.mark.mcptap(record_mode="none")
async def test_http_mock(mcptap_mock):
    url = mcptap_mock({capture!r}, transport="http")
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("add", {{"a": 2, "b": 40}})
    assert result.content[0].text == "42"
'''


def _setup(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")


def test_record_once_then_serve_over_stdio_and_http(pytester: pytest.Pytester, tmp_path: Path) -> None:
    _setup(pytester)
    cap = tmp_path / "captures" / "sdk.jsonl"
    pytester.makepyfile(test_first=TEST_FILE.format(server=[sys.executable, str(SERVER)], capture=str(cap)))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert cap.is_file() and b'"tools/call"' in cap.read_bytes()          # recorded through the tap
    # second run: the server cannot run any more, the capture answers
    pytester.makepyfile(test_first=TEST_FILE.format(server=["/nonexistent/server"], capture=str(cap)))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(test_first=HTTP_TEST.format(capture=str(cap)))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_record_mode_none_without_a_capture_fails_clearly(pytester: pytest.Pytester, tmp_path: Path) -> None:
    _setup(pytester)
    cap = tmp_path / "missing.jsonl"
    pytester.makepyfile(test_none=TEST_FILE.format(server=[sys.executable, str(SERVER)], capture=str(cap)))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mcptap-record-mode", "none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*mcptap_mock: capture {cap} does not exist (record mode none)*"])
    assert not cap.exists()
