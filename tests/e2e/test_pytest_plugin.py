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


EPISODES_TEST = '''
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

@pytest.mark.mcptap(record_mode={mode!r})
async def test_more_calls(mcptap_mock):
    argv = mcptap_mock({capture!r}, server={server!r})
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy") as client:
        added = await client.call_tool("add", {{"a": 2, "b": 40}})
        echoed = await client.call_tool("echo", {{"text": "a new episode"}})
    assert added.content[0].text == "42"
    assert echoed.content[0].text == "a new episode"
'''


def test_new_episodes_adds_what_the_capture_could_not_answer(pytester: pytest.Pytester, tmp_path: Path) -> None:
    _setup(pytester)
    cap = tmp_path / "sdk.jsonl"
    real = [sys.executable, str(SERVER)]
    pytester.makepyfile(test_first=TEST_FILE.format(server=real, capture=str(cap)))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)    # records add only
    assert b"a new episode" not in cap.read_bytes()
    # none: the echo call has no recorded answer
    pytester.makepyfile(test_first=EPISODES_TEST.format(mode="none", capture=str(cap), server=None))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(failed=1)
    # new_episodes: served from the capture, echo asked of the real server and added
    pytester.makepyfile(test_first=EPISODES_TEST.format(mode="new_episodes", capture=str(cap), server=real))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert b"a new episode" in cap.read_bytes()
    # and now the capture alone answers both
    pytester.makepyfile(test_first=EPISODES_TEST.format(mode="none", capture=str(cap), server=["/nonexistent"]))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    from mcptap.capture.reader import read_capture

    merged = read_capture(str(cap))
    assert merged.end is not None and merged.header["episodes"] == 1
    codes = {f["code"] for r in merged.records for f in r.get("findings", ())}
    assert "lifecycle.reinitialize" not in codes and "serve.no_recorded_answer" not in codes


HTTP_RECORD_TEST = '''
import pytest
from mcp import Client

async def test_http(mcptap_mock):
    url = mcptap_mock({capture!r}, transport="http", server={server!r})
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("add", {{"a": 2, "b": 40}})
    assert result.content[0].text == "42"
'''


async def test_http_record_once_through_the_tap_then_serve(pytester: pytest.Pytester, tmp_path: Path) -> None:
    import trio

    from peers import free_port, listening

    _setup(pytester)
    cap = tmp_path / "http.jsonl"
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http"], port):
        pytester.makepyfile(test_http=HTTP_RECORD_TEST.format(capture=str(cap), server=f"http://127.0.0.1:{port}/mcp"))
        result = await trio.to_thread.run_sync(pytester.runpytest_subprocess, "-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
    from mcptap.capture.reader import read_capture

    recorded = read_capture(str(cap))
    assert recorded.header["transport"] == "http" and recorded.end is not None    # the tap was stopped cleanly
    # the real server is gone: the capture answers
    result = await trio.to_thread.run_sync(pytester.runpytest_subprocess, "-p", "no:cacheprovider", "--mcptap-record-mode", "none")
    result.assert_outcomes(passed=1)


REPLAY_TEST = '''
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

@pytest.mark.mcptap(record_mode="new_episodes")
async def test_replayed(mcptap_mock):
    target = mcptap_mock({capture!r}, transport={transport!r}, server={server!r})
    params = target if {transport!r} == "http" else StdioServerParameters(command=target[0], args=target[1:])
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool({tool!r}, {args!r})
    assert result.content[0].text
'''


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_new_episodes_replays_a_capture_that_answers_everything_without_a_server(pytester: pytest.Pytester, tmp_path: Path,
                                                                                 transport: str) -> None:
    """VCR semantics: replay what exists, record only what is new. A capture
    that answers every request needs no server (it failed: "is to be extended
    … and no server= to record from"), over stdio and HTTP alike."""
    _setup(pytester)
    cap = tmp_path / "sdk.jsonl"
    pytester.makepyfile(test_first=TEST_FILE.format(server=[sys.executable, str(SERVER)], capture=str(cap)))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    before = cap.read_bytes()
    pytester.makepyfile(test_first=REPLAY_TEST.format(capture=str(cap), transport=transport, server=None, tool="add", args={"a": 2, "b": 40}))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert cap.read_bytes() == before                                   # nothing new: the capture is unchanged


@pytest.mark.parametrize(("transport", "server", "why"), [
    ("stdio", None, "and no server= to record from"),
    ("http", None, "and no server= to record from"),
    ("http", "http://127.0.0.1:9/mcp", "and an HTTP capture cannot be extended request by request: re-record it*"),
])
def test_new_episodes_fails_when_something_new_is_asked_and_nothing_can_record_it(pytester: pytest.Pytester, tmp_path: Path,
                                                                                  transport: str, server: str | None, why: str) -> None:
    _setup(pytester)
    cap = tmp_path / "sdk.jsonl"
    pytester.makepyfile(test_first=TEST_FILE.format(server=[sys.executable, str(SERVER)], capture=str(cap)))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(test_first=REPLAY_TEST.format(capture=str(cap), transport=transport, server=server, tool="echo",
                                                      args={"text": "never recorded"}))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("error", 0) + outcomes.get("failed", 0) >= 1, result.stdout.str()
    result.stdout.fnmatch_lines([f"*mcptap_mock: capture {cap} has no answer for tools/call (record mode new_episodes), {why}*"])


EARLY_HTTP_TEST = '''
import os
from mcp import Client

async def test_http(mcptap_mock):
    url = mcptap_mock({capture!r}, transport="http", server={server!r})
    assert os.environ.get("MCPTAP_TEST_GO"), "failed before any request"
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("add", {{"a": 2, "b": 40}})
    assert result.content[0].text == "42"
'''


async def test_a_recording_that_failed_before_any_traffic_is_not_kept(pytester: pytest.Pytester, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP record mode: a test failing before any request left a capture of a header and an
    end record, and every later ``once`` run failed "no recorded server messages to serve"
    until it was deleted by hand. Now it is removed at teardown, and the next run records."""
    import trio

    from peers import free_port, listening

    _setup(pytester)
    cap = tmp_path / "early.jsonl"
    port = free_port()
    monkeypatch.delenv("MCPTAP_TEST_GO", raising=False)
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http"], port):
        pytester.makepyfile(test_http=EARLY_HTTP_TEST.format(capture=str(cap), server=f"http://127.0.0.1:{port}/mcp"))
        result = await trio.to_thread.run_sync(pytester.runpytest_subprocess, "-p", "no:cacheprovider")
        result.assert_outcomes(failed=1)
        assert not cap.exists()
        monkeypatch.setenv("MCPTAP_TEST_GO", "1")
        result = await trio.to_thread.run_sync(pytester.runpytest_subprocess, "-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
    assert b'"tools/call"' in cap.read_bytes()


def test_a_capture_without_server_messages_counts_as_missing(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """One left by an earlier version (or a stdio recording whose client quit at once):
    ``once`` records it again rather than fail to serve it; ``none`` says what is wrong with it."""
    from scripted import record

    _setup(pytester)
    cap = record(tmp_path / "silent.jsonl", [])
    pytester.makepyfile(test_none=TEST_FILE.format(server=[sys.executable, str(SERVER)], capture=str(cap)))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mcptap-record-mode", "none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*mcptap_mock: capture {cap} holds no server messages*(record mode none)*"])
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert b'"tools/call"' in cap.read_bytes()
