"""Legacy HTTP+SSE (2024-11-05): a POST the recorded server refused is refused so again.

The mock used to answer every legacy POST ``202 Accepted`` and wait for an answer on the SSE
stream that the recording does not have (the recorded server refused the POST with a 401 and
its text): the client waited for ever. No real legacy server refuses on demand: the capture
holds the records a tap writes for such a session (``http`` records, the ``endpoint`` event).
"""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import trio

from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from tests.serve._endings_helpers import call

C2S, S2C = Direction.C2S, Direction.S2C
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}


def _legacy(path: Path) -> Path:
    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://upstream/sse"}, clock=iter(range(1000, 10**9, 1000)).__next__,
                   started="2026-01-01T00:00:00.000000Z")
    rec.http(event="request", exchange=1, conn=1, method="GET", target="/sse", headers=[])
    rec.http(event="response", exchange=1, conn=1, status=200, headers=[["Content-Type", "text/event-stream"]])
    rec.http(event="sse", exchange=1, conn=1, endpoint={"data": "/messages/?session_id=abc"}, sse={"event": "endpoint"})
    result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    for ex, (msg, status, headers, text) in enumerate([(INIT, 202, [], b"Accepted"),
                                                      (call(2, "auth"), 401, [["WWW-Authenticate", "Bearer"], ["Content-Type", "text/plain"]],
                                                       b"unauthorized")], start=2):
        rec.http(event="request", exchange=ex, conn=2, method="POST", target="/messages/?session_id=abc", headers=[])
        rec.frame(C2S, orjson.dumps(msg), session="abc", transport={"exchange": ex, "stream": "post"})
        rec.http(event="response", exchange=ex, conn=2, status=status, headers=headers)
        if status != 202:
            rec.http(event="response_body", exchange=ex, conn=2, body=text.decode())
        rec.http(event="end", exchange=ex, conn=2, how="complete")
        if msg is INIT:
            rec.frame(S2C, orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result}), session="abc",
                      transport={"exchange": 1, "stream": "get"})
    rec.close()
    return path


async def test_a_legacy_post_the_server_refused_is_refused_again(tmp_path: Path) -> None:
    mock = HttpMock(ServeCore(script_from_path(str(_legacy(tmp_path / "cap.jsonl")))))
    got: list[httpx.Response] = []
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        base = url.removesuffix("/sse")
        async with httpx.AsyncClient(timeout=30) as http, http.stream("GET", url) as stream:
            lines = stream.aiter_lines()
            endpoint = None
            async for line in lines:
                if line.startswith("data: "):
                    endpoint = line[len("data: "):]
                    break
            assert endpoint is not None
            got.append(await http.post(base + endpoint, json=INIT))
            async for line in lines:
                if line.startswith("data: "):
                    assert orjson.loads(line[len("data: "):])["id"] == 1       # the initialize answer, on the stream
                    break
            with trio.fail_after(60):                  # bounds the hang this guards against
                got.append(await http.post(base + endpoint, json=call(5, "auth")))
        nursery.cancel_scope.cancel()
    assert got[0].status_code == 202
    assert (got[1].status_code, got[1].headers.get("www-authenticate"), got[1].content) == (401, "Bearer", b"unauthorized")
