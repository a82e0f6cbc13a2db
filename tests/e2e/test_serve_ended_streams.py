"""A POST's event stream the recorded server ended without the answer is ended so by the mock.

2025-11-25 polling with the official SDK server (``sdk_server.py --poll``): the tool ends its
response stream (after a priming event with an id and a retry, and for ``poll_logged`` a log
message), the official SDK client resumes with ``Last-Event-ID`` on a GET stream and gets the
answer there. Recorded through the real HTTP tap, served by the mock to the same client:

* ``poll_logged`` (messages but not the answer): the mock used to keep the stream open waiting
  for an answer that travelled elsewhere; the client waited for ever;
* ``poll`` (the priming event only): the mock ended the stream but without the priming event,
  so the client, with no event id to resume from, failed ("SSE stream ended without a response");
* a GET with ``Last-Event-ID`` resuming a request's stream: the mock took it for one more standalone
  GET stream, so the answer of a later request went on it, which the SDK client takes for the answer
  of the request it resumes (the later request then waited for ever: about one run in two of the
  resumption test below hung), and a resumption of a request answered meanwhile on the GET stream
  never ended.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import pytest
import trio
from mcp import Client

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"
#: bounds a hang only (the failure this guards against): a passing run takes well under a second
HANG = 60


async def _recorded(cap: Path, client: Callable[[str], Awaitable[Any]]) -> Any:
    """What ``client`` (given the tap's URL) returns, run against the SDK polling server through the
    real tap recording into ``cap``."""
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http", "--poll"], port):
        upstream = f"http://127.0.0.1:{port}/mcp"
        rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec).serve)
            got = await client(url)
            nursery.cancel_scope.cancel()
        rec.close()
    return got


async def _session(url: str, tool: str) -> dict[str, Any]:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async with Client(url, mode="legacy", logging_callback=on_log) as client:
        result = await client.call_tool(tool, {})
    return {"text": result.content[0].text, "logs": logs}      # type: ignore[union-attr]


@pytest.mark.parametrize("tool", ["poll_logged", "poll"])
async def test_a_stream_the_server_ended_without_the_answer_ends_so_and_the_client_resumes(tmp_path: Path, tool: str) -> None:
    cap, own = tmp_path / "cap.jsonl", tmp_path / "own.jsonl"
    live = await _recorded(cap, lambda url: _session(url, tool))
    records = read_capture(str(cap)).records
    call = next(r for r in records if r.get("method") == "tools/call")
    on_post = [r for r in records if r.get("type") == "message" and r.get("dir") == "s2c"
               and r.get("transport", {}).get("exchange") == call["transport"]["exchange"]]
    # the scenario: the POST stream carried a log (poll_logged) or nothing (poll), and not the answer
    assert [r.get("method") for r in on_post] == (["notifications/message"] if tool == "poll_logged" else []), on_post

    rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
    mock = HttpMock(ServeCore(script_from_path(str(cap))), rec)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        with trio.fail_after(HANG):
            served = await _session(url, tool)
        nursery.cancel_scope.cancel()
    rec.close()
    assert served == live
    sse = [r for r in read_capture(str(own)).records if r.get("type") == "http" and r.get("event") == "sse"]
    assert sse and all(r["sse"].get("id") and r["sse"].get("retry") == 100 for r in sse)     # the priming events, sent again


_CLIENT = """
import json, sys, anyio
from mcp import Client
async def main(url, tools):
    async with Client(url, mode="legacy") as client:
        print(json.dumps([(await client.call_tool(t, {})).content[0].text for t in tools]))
anyio.run(main, sys.argv[1], sys.argv[2:])
"""


async def _calls(url: str, tools: list[str]) -> list[str]:
    async with Client(url, mode="legacy") as client:
        return [(await client.call_tool(t, {})).content[0].text for t in tools]     # type: ignore[union-attr]


async def test_a_get_stream_replaced_by_a_resumption_ends_cleanly_and_the_client_resumes(tmp_path: Path) -> None:
    """Several resumptions in one session: each new GET with ``Last-Event-ID`` replaces the
    previous GET stream, which used to fail on its closed channel (an internal error, the
    client's call "SSE stream ended and reconnection attempts were exhausted"), with ``-o``."""
    cap = tmp_path / "cap.jsonl"
    tools = ["poll_logged", "poll", "poll_logged"]
    live = await _recorded(cap, lambda url: _calls(url, tools))
    for run in range(3):
        own = tmp_path / f"own{run}.jsonl"
        rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
        said: list[str] = []
        mock = HttpMock(ServeCore(script_from_path(str(cap))), rec, say=said.append)
        async with trio.open_nursery() as nursery:
            url = await nursery.start(mock.serve)
            with trio.fail_after(HANG):
                # the client in its own process, as a real one is (in this one, it never raced the mock)
                done = await trio.run_process([sys.executable, "-c", _CLIENT, url, *tools], capture_stdout=True, check=False)
            nursery.cancel_scope.cancel()
        rec.close()
        assert done.returncode == 0 and json.loads(done.stdout) == live, done
        assert not [s for s in said if "internal error" in s], said


def _events(body: bytes) -> list[tuple[str | None, Any]]:
    """(id, message id or method) of each event carrying a message, and the last event id as (id, None)."""
    out: list[tuple[str | None, Any]] = []
    eid = None
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = block.split(b"\n")
        eid = next((ln[3:].strip().decode() for ln in lines if ln.startswith(b"id:")), eid)
        data = b"".join(ln[5:].strip() for ln in lines if ln.startswith(b"data:"))
        if data:
            msg = orjson.loads(data)
            out.append((eid, msg.get("id", msg.get("method"))))
    return [*out, (eid, None)]


async def test_a_resumption_carries_its_own_requests_answer_only(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    await _recorded(cap, lambda url: _calls(url, ["poll_logged", "poll", "poll_logged"]))
    accept = {"Accept": "application/json, text/event-stream"}
    seen: dict[str, Any] = {}

    async def read(http: httpx.AsyncClient, url: str, headers: dict[str, str], key: str, opened: trio.Event) -> None:
        with trio.move_on_after(5):                  # a stream that never ends: what it carried by then
            async with http.stream("GET", url, headers={"Accept": "text/event-stream", **headers}) as r:
                opened.set()
                seen[key] = b""
                async for chunk in r.aiter_bytes():
                    seen[key] += chunk
            seen[key + " ended"] = True

    def call(i: int, name: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}}}

    mock = HttpMock(ServeCore(script_from_path(str(cap))))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        async with httpx.AsyncClient(timeout=HANG) as http:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
            r = await http.post(url, json=init, headers=accept)
            sid = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**accept, **sid})
            async with trio.open_nursery() as n:
                opened = trio.Event()
                n.start_soon(read, http, url, sid, "get", opened)
                await opened.wait()
                # its stream ends after a log, without the answer: that goes on the GET stream (none else is open)
                first = _events((await http.post(url, json=call(2, "poll_logged"), headers={**accept, **sid})).content)
                await trio.sleep(0.5)
                opened = trio.Event()
                n.start_soon(read, http, url, {**sid, "Last-Event-ID": first[-1][0]}, "resumed", opened)
                await opened.wait()
                # ended without the answer, which goes on the GET stream, not on the resumption of request 2's stream
                await http.post(url, json=call(3, "poll"), headers={**accept, **sid})
                await trio.sleep(0.5)
                n.cancel_scope.cancel()
        nursery.cancel_scope.cancel()
    assert [m for _, m in first] == ["notifications/message", None], first
    assert [m for _, m in _events(seen["get"]) if m is not None] == [2, 3], seen
    # the resumption of request 2's stream: its answer again (as a server replays the stream's events), then its end
    assert [m for _, m in _events(seen["resumed"]) if m is not None] == [2] and seen.get("resumed ended"), seen
