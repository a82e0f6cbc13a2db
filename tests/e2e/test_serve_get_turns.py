"""Recorded GET and DELETE answers are served in turn, per kind of request, and a GET stream
the recorded server ended is ended so.

Recorded through the real HTTP tap, served by the mock to the same client:

* an upstream (h11) that refused ``GET /mcp`` 401, then 405, then opened an event stream that it
  ended after a priming event: the mock used to replay only the first refusal of a kind (or, with
  a GET stream recorded, open a stream at every GET /mcp), never the recorded sequence;
* the official SDK server, asked to ``DELETE`` (and ``GET``) without ``Mcp-Session-Id``
  (its ``400 Missing session ID``) and then with it: the key a refusal was replayed under did not
  say whether the header was sent, so a client that sent it got the header-less request's 400;
* the official SDK server ending its GET stream (``close_standalone_sse_stream``) after a
  resources list_changed, and again at the session's ``DELETE``: the mock kept both open;
* the official SDK server ending its GET stream, nothing sent on it, because of a later request
  (a ``tools/call``): the mock kept it open (it ended only a stream the server ended by itself).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import h11
import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import pytest
import trio

from h11_upstream import answer, requests
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
HANG = 30
ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PRIMING = b"event: message\nid: g1\nretry: 50\ndata: \n\n"


async def _tapped(cap: Path, upstream: str, client: Callable[[str], Awaitable[Any]]) -> Any:
    """What ``client`` (given the tap's URL) returns, through the real tap to ``upstream``, recorded into ``cap``."""
    rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as nursery:
        url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream, keep_host=True), rec).serve)
        with trio.fail_after(HANG):
            got = await client(url)
        nursery.cancel_scope.cancel()
    rec.close()
    return got


async def _served(cap: Path, client: Callable[[str], Awaitable[Any]]) -> Any:
    """What ``client`` returns against the mock of ``cap`` (a hang fails after HANG s)."""
    mock = HttpMock(ServeCore(script_from_path(str(cap))))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        with trio.fail_after(HANG):
            got = await client(url)
        nursery.cancel_scope.cancel()
    return got


def _refusing_get() -> Callable[[trio.SocketStream], Awaitable[None]]:
    """An upstream answering initialize, and GET: 401, 405, then an event stream it ends after a priming event."""
    gets = [0]

    async def serve(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            async for req, body in requests(stream, conn):
                if req.method == b"POST":
                    msg = orjson.loads(body)
                    if "id" not in msg:
                        await stream.send_all(answer(conn, 202, [("Content-Length", "0")]))
                        continue
                    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
                    out = orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
                    await stream.send_all(answer(conn, 200, [("Content-Type", "application/json"), ("Content-Length", str(len(out)))], out))
                    continue
                gets[0] += 1
                if gets[0] == 1:
                    got = (401, [("WWW-Authenticate", 'Bearer error="invalid_token"'), ("Content-Type", "text/plain")], b"no token")
                elif gets[0] == 2:
                    got = (405, [("Allow", "POST"), ("Content-Type", "text/plain")], b"Method Not Allowed")
                else:
                    got = (200, [("Content-Type", "text/event-stream")], PRIMING)
                await stream.send_all(answer(conn, got[0], [("Content-Length", str(len(got[2]))), *got[1]], got[2]))
        finally:
            await stream.aclose()
    return serve


async def _gets(url: str) -> list[Any]:
    """(status, WWW-Authenticate, Allow, body) of four GETs after the handshake, each read to its end."""
    seen: list[Any] = []
    async with httpx.AsyncClient(timeout=HANG) as http:
        assert (await http.post(url, json=INIT, headers=ACCEPT)).status_code == 200
        assert (await http.post(url, json=INITIALIZED, headers=ACCEPT)).status_code == 202
        for _ in range(4):
            r = await http.get(url, headers={"Accept": "text/event-stream"})
            seen.append((r.status_code, r.headers.get("www-authenticate"), r.headers.get("allow"), r.content))
    return seen


async def test_successive_get_answers_are_served_in_recorded_order_then_the_last_again(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        await nursery.start(trio.serve_listeners, _refusing_get(), listeners)
        live = await _tapped(cap, f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp", _gets)
        nursery.cancel_scope.cancel()
    assert [s[0] for s in live] == [401, 405, 200, 200] and live[2][3] == PRIMING, live
    served = await _served(cap, _gets)
    assert served == live, (served, live)


async def _sdk(cap: Path, client: Callable[[str], Awaitable[Any]], *flags: str) -> Any:
    """``client`` through the real tap to the official SDK server (``flags``: sdk_server.py's), recorded into ``cap``."""
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http", *flags], port):
        return await _tapped(cap, f"http://127.0.0.1:{port}/mcp", client)


async def _handshake(http: httpx.AsyncClient, url: str, version: str = "2025-06-18") -> dict[str, str]:
    """The session's headers (its id; the protocol version header after a 2025-11-25 handshake, which the
    SDK server's stream closing needs)."""
    r = await http.post(url, json={**INIT, "params": {**INIT["params"], "protocolVersion": version}}, headers=ACCEPT)
    sid = {"Mcp-Session-Id": r.headers["mcp-session-id"], **({"MCP-Protocol-Version": version} if version != "2025-06-18" else {})}
    assert (await http.post(url, json=INITIALIZED, headers={**ACCEPT, **sid})).status_code == 202
    return sid


async def _without_then_with(url: str) -> list[Any]:
    """GET and DELETE without the session header, then DELETE with it: (status, JSON body or None) each."""
    seen = []
    async with httpx.AsyncClient(timeout=HANG) as http:
        sid = await _handshake(http, url)
        for r in [await http.get(url, headers={"Accept": "text/event-stream"}), await http.delete(url), await http.delete(url, headers=sid)]:
            seen.append((r.status_code, r.json() if r.content else None))
    return seen


async def _with_only(url: str) -> int:
    async with httpx.AsyncClient(timeout=HANG) as http:
        sid = await _handshake(http, url)
        return (await http.delete(url, headers=sid)).status_code


async def test_answers_with_and_without_the_session_header_are_kept_apart(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    live = await _sdk(cap, _without_then_with)
    assert [s[0] for s in live] == [400, 400, 200] and "session" in str(live[0][1]).lower(), live
    # the SDK server's own 400s (their JSON-RPC error bodies), not the mock's
    assert await _served(cap, _without_then_with) == live
    # a client that sends the header gets the answer recorded with it, not the header-less request's 400
    assert await _served(cap, _with_only) == 200


async def _get_ended(url: str) -> dict[str, Any]:
    """The GET stream's events until it ends (the server ended it after close_get's list_changed), then a
    second GET stream's, which the session's DELETE ends: each as the list of its messages' methods."""
    seen: dict[str, Any] = {}

    async def read(http: httpx.AsyncClient, sid: dict[str, str], key: str, opened: trio.Event) -> None:
        async with http.stream("GET", url, headers={"Accept": "text/event-stream", **sid}) as r:
            opened.set()
            body = b"".join([chunk async for chunk in r.aiter_bytes()])
        seen[key] = [orjson.loads(line[5:])["method"] for line in body.splitlines() if line.startswith(b"data:") and line[5:].strip()]

    async with httpx.AsyncClient(timeout=HANG) as http:
        sid = await _handshake(http, url, "2025-11-25")
        async with trio.open_nursery() as n:
            opened = trio.Event()
            n.start_soon(read, http, sid, "first", opened)
            await opened.wait()
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "close_get", "arguments": {}}}
            r = await http.post(url, json=call, headers={**ACCEPT, **sid})
            seen["call"] = [line for line in r.content.splitlines() if b'"closed"' in line] != []
        async with trio.open_nursery() as n:
            opened = trio.Event()
            n.start_soon(read, http, sid, "second", opened)
            await opened.wait()
            seen["delete"] = (await http.delete(url, headers=sid)).status_code
    return seen


async def test_a_get_stream_the_server_ended_is_ended_so(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    live = await _sdk(cap, _get_ended, "--poll")
    assert live == {"first": ["notifications/resources/list_changed"], "call": True, "second": [], "delete": 200}, live
    assert await _served(cap, _get_ended) == live


async def _get_ended_by_a_call(url: str) -> dict[str, Any]:
    """A GET stream that a later tools/call (close_get_quiet) ends with nothing sent on it: its end
    (its messages' methods) and the call's answer, then a second call of it with no GET stream open."""
    seen: dict[str, Any] = {}

    async def read(http: httpx.AsyncClient, sid: dict[str, str], opened: trio.Event) -> None:
        async with http.stream("GET", url, headers={"Accept": "text/event-stream", **sid}) as r:
            opened.set()
            body = b"".join([chunk async for chunk in r.aiter_bytes()])
        seen["get"] = [line for line in body.splitlines() if line.startswith(b"data:") and line[5:].strip()]

    def text(r: httpx.Response) -> Any:
        data = next(line[5:] for line in r.content.splitlines() if line.startswith(b"data:") and line[5:].strip()) \
            if r.headers.get("content-type", "").startswith("text/event-stream") else r.content
        return orjson.loads(data)["result"]["content"][0]["text"]

    async with httpx.AsyncClient(timeout=HANG) as http:
        sid = await _handshake(http, url, "2025-11-25")
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "close_get_quiet", "arguments": {}}}
        async with trio.open_nursery() as n:
            opened = trio.Event()
            n.start_soon(read, http, sid, opened)
            await opened.wait()
            seen["call"] = text(await http.post(url, json=call, headers={**ACCEPT, **sid}))
        seen["again"] = text(await http.post(url, json={**call, "id": 3}, headers={**ACCEPT, **sid}))
    return seen


async def test_a_get_stream_a_later_request_ended_is_ended_by_that_request(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    live = await _sdk(cap, _get_ended_by_a_call, "--poll")
    assert live == {"get": [], "call": "closed quietly", "again": "closed quietly"}, live
    assert await _served(cap, _get_ended_by_a_call) == live
