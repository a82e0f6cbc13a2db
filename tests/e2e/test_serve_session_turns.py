"""Recorded GET answers follow the recorded session a live session plays, not one turn for all.

Two sessions recorded through the real HTTP tap from an upstream (h11 on trio) that assigns
``Mcp-Session-Id`` and answers each session's ``GET`` its own way: the first session's two GETs
``401`` (``no token``), the second session's ``405`` (``Method Not Allowed``). The mock serves
two clients at once: each ``initialize`` binds a live session to a recorded one, in order. The
mock used to give a kind's recorded answers in one turn across all live sessions, in recorded
order: the second client's first GET got the first session's 401, and the first client's GET the
first session's second 401 or the second session's 405 by the order they came in.
"""

from __future__ import annotations

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

pytestmark = pytest.mark.e2e
HANG = 30
ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
GETS = {"s1": (401, [("WWW-Authenticate", 'Bearer error="invalid_token"'), ("Content-Type", "text/plain")], b"no token"),
        "s2": (405, [("Allow", "POST"), ("Content-Type", "text/plain")], b"Method Not Allowed")}


def _upstream() -> Any:
    made = [0]

    async def serve(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            async for req, body in requests(stream, conn):
                sid = dict(req.headers).get(b"mcp-session-id", b"").decode()
                if req.method == b"GET":
                    status, headers, out = GETS[sid]
                    await stream.send_all(answer(conn, status, [("Content-Length", str(len(out))), *headers], out))
                    continue
                msg = orjson.loads(body)
                if "id" not in msg:
                    await stream.send_all(answer(conn, 202, [("Content-Length", "0"), ("Mcp-Session-Id", sid)]))
                    continue
                made[0] += 1
                sid = f"s{made[0]}"
                result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": sid, "version": "1"}}
                out = orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
                await stream.send_all(answer(conn, 200, [("Content-Type", "application/json"), ("Content-Length", str(len(out))),
                                                         ("Mcp-Session-Id", sid)], out))
        finally:
            await stream.aclose()
    return serve


async def _open(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    r = await http.post(url, json=INIT, headers=ACCEPT)
    sid = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    assert (await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**ACCEPT, **sid})).status_code == 202
    return sid


async def _get(http: httpx.AsyncClient, url: str, sid: dict[str, str]) -> tuple[int, bytes]:
    r = await http.get(url, headers={"Accept": "text/event-stream", **sid})
    return r.status_code, r.content


async def _recorded_sessions(url: str) -> list[Any]:
    """The first session's two GETs, then the second session's one."""
    async with httpx.AsyncClient(timeout=HANG) as http:
        first = await _open(http, url)
        got = [await _get(http, url, first), await _get(http, url, first)]
        second = await _open(http, url)
        return [got, [await _get(http, url, second)]]


async def _two_at_once(url: str) -> list[Any]:
    """Both sessions open (in the recorded order), then their GETs interleaved, the second's first."""
    async with httpx.AsyncClient(timeout=HANG) as http:
        first = await _open(http, url)
        second = await _open(http, url)
        b = await _get(http, url, second)
        a1 = await _get(http, url, first)
        a2 = await _get(http, url, first)
        return [[a1, a2], [b]]


async def test_each_live_session_gets_the_get_answers_of_its_recorded_session(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": "http://upstream/mcp"}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        await nursery.start(trio.serve_listeners, _upstream(), listeners)
        upstream = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream, keep_host=True), rec).serve)
        with trio.fail_after(HANG):
            live = await _recorded_sessions(url)
        nursery.cancel_scope.cancel()
    rec.close()
    assert live == [[(401, b"no token")] * 2, [(405, b"Method Not Allowed")]], live

    mock = HttpMock(ServeCore(script_from_path(str(cap))))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        with trio.fail_after(HANG):
            served = await _two_at_once(url)
        nursery.cancel_scope.cancel()
    assert served == live, served
