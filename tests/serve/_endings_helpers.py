"""Helpers shared by the tests of how the HTTP mock ends a recorded POST that carried no JSON-RPC
answer (test_serve_http_endings.py, test_serve_http_ending_headers.py, test_serve_own_findings.py):
a capture with the records a real tap writes for refusals, closes, a 202 and a primed event stream
(``capture``), a ``tools/call`` by tool name (``call``), and the mock serving a capture to a client
body after an ``initialize`` (``serve``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import trio

from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path

C2S, S2C = Direction.C2S, Direction.S2C
SID = "recorded-session"
ACCEPT = {"Accept": "application/json, text/event-stream"}
CHALLENGE = 'Bearer error="insufficient_scope", scope="files:write", resource_metadata="http://upstream/.well-known/oauth-protected-resource"'


def capture(path: Path, get_refused: bool = False) -> Path:
    """The refusals below; ``get_refused``: the server offered no GET stream (405 with ``Allow``)."""
    t = {"now": 0}

    def clock() -> int:
        t["now"] += 1000
        return t["now"]

    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://upstream/mcp"}, clock=clock, started="2026-01-01T00:00:00.000000Z")
    n = {"ex": 0}

    def exchange(c2s: Any, status: int | None, headers: list[list[str]], s2c: tuple[bytes, ...] = (), how: str = "complete",
                 method: str = "POST", stream: str = "post", text: bytes = b"", **end: Any) -> int:
        n["ex"] += 1
        ex = n["ex"]
        rec.http(event="request", exchange=ex, conn=1, method=method, target="/mcp", headers=[["Mcp-Session-Id", SID]])
        if c2s is not None:
            rec.frame(C2S, orjson.dumps(c2s), session=SID, transport={"exchange": ex, "stream": stream})
        if status is not None:
            rec.http(event="response", exchange=ex, conn=1, status=status,
                     headers=[["Date", "Mon, 07 Dec 2026 12:38:40 GMT"], ["Mcp-Session-Id", SID], *headers])
        for body in s2c:     # as the tap frames a response body: its status in the transport facts
            rec.frame(S2C, body, session=SID, transport={"exchange": ex, "conn": 1, "method": method, "path": "/mcp", "stream": stream,
                                                          "status": status})
        if text:             # a body that is no message, as the tap keeps it (observe_state.py)
            rec.http(event="response_body", exchange=ex, conn=1, body=text.decode())
        rec.http(event="end", exchange=ex, conn=1, how=how, **end)
        return ex

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    json_ct = [["Content-Type", "application/json"]]
    exchange(init, 200, json_ct, (orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result}),))
    exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, 202, [["Content-Length", "0"]])
    if get_refused:
        get = exchange(None, 405, [["Allow", "POST, DELETE"], ["Content-Length", "18"]], method="GET", stream="get",
                       text=b"Method Not Allowed")
    else:
        get = exchange(None, 200, [["Content-Type", "text/event-stream"]], method="GET", stream="get", how="tap_stopped")
    # refused at HTTP level: the 401's text body is kept as a response_body record, the 403's JSON one is framed
    exchange(call(10, "auth"), 401, [["WWW-Authenticate", CHALLENGE], ["Content-Type", "text/plain"], ["Content-Length", "12"]],
             text=b"unauthorized")
    exchange(call(11, "forbid"), 403, [*json_ct, ["Content-Length", "22"]], (b'{"error": "forbidden"}',))
    exchange(call(12, "gone"), 404, [["Content-Length", "0"]])
    exchange(call(13, "verb"), 405, [["Allow", "GET"], ["Content-Length", "0"]])
    # the upstream closed the connection with no response; then one the tap answered 502 for
    exchange(call(14, "close"), None, [], how="upstream_closed")
    exchange(call(15, "broke"), None, [], how="upstream_failed", sent_502=True)
    # 202 to a request: its answer came on the GET stream
    exchange(call(16, "later"), 202, [["Content-Length", "0"]])
    if not get_refused:
        rec.frame(S2C, orjson.dumps({"jsonrpc": "2.0", "id": 16, "result": {"content": []}}), session=SID,
                  transport={"exchange": get, "stream": "get"})
    # a notification the server refused (its session expired)
    exchange({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, 404, [["Content-Length", "0"]])
    # an event stream the server ended with only its priming event: ended so again
    primed = exchange(call(18, "primed"), 200, [["Content-Type", "text/event-stream"]])
    rec.http(event="sse", exchange=primed, sse={"id": "e1", "offset": 0, "bytes": 12, "terminated": True})
    # cut by the recording, not by the server: stays unanswered, as recorded
    exchange(call(17, "cut"), None, [], how="tap_stopped")
    rec.close()
    return path


def call(i: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}}}


async def serve(cap: Path, own: Path, body: Any) -> None:
    """Serve ``cap`` (recording to ``own``) to ``body(http, url, headers)``, after an initialize."""
    rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
    server = HttpMock(ServeCore(script_from_path(str(cap))), rec)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                           "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                      "clientInfo": {"name": "c", "version": "1"}}}, headers=ACCEPT)
            hs = {**ACCEPT, "Mcp-Session-Id": r.headers["mcp-session-id"]}
            await body(http, url, hs)
        nursery.cancel_scope.cancel()
    rec.close()


def _call(i: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}}}
