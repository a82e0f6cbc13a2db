"""Each recorded refusal of a GET, DELETE or legacy POST is replayed for the request of its own kind
(method, path, a session named or not), not the first one recorded for every request.

The mock used to answer ``GET /mcp`` with the ``304`` a ``GET /mcp/304`` got (the recorded
``GET /mcp`` got 405), and a legacy POST with no ``session_id`` with its own ``404 Could not find
session`` (the recorded one got ``400 session_id is required``). No real server refuses these on
demand in one session: the captures hold the records a tap writes (``http`` records).
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

C2S, S2C = Direction.C2S, Direction.S2C


def _recorder(path: Path, url: str) -> Recorder:
    return Recorder(CaptureWriter.open(str(path)), "http", {"url": url}, clock=iter(range(1000, 10**9, 1000)).__next__,
                    started="2026-01-01T00:00:00.000000Z")


def _refusal(rec: Recorder, ex: int, method: str, target: str, status: int, body: bytes, headers: list[list[str]]) -> None:
    rec.http(event="request", exchange=ex, conn=ex, method=method, target=target, headers=[])
    rec.http(event="response", exchange=ex, conn=ex, status=status, headers=headers)
    if body:
        rec.http(event="response_body", exchange=ex, conn=ex, body=body.decode())
    rec.http(event="end", exchange=ex, conn=ex, how="complete")


def _streamable(path: Path) -> Path:
    rec = _recorder(path, "http://upstream/mcp")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    rec.http(event="request", exchange=1, conn=1, method="POST", target="/mcp", headers=[])
    rec.frame(C2S, orjson.dumps(init), transport={"exchange": 1, "stream": "post"})
    rec.http(event="response", exchange=1, conn=1, status=200, headers=[["Content-Type", "application/json"]])
    rec.frame(S2C, orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result}), transport={"exchange": 1, "stream": "post"})
    rec.http(event="end", exchange=1, conn=1, how="complete")
    _refusal(rec, 2, "GET", "/mcp/304", 304, b"", [])
    _refusal(rec, 3, "GET", "/mcp", 405, b"Method Not Allowed", [["Allow", "POST"], ["Content-Type", "text/plain"]])
    rec.close()
    return path


def _legacy(path: Path) -> Path:
    rec = _recorder(path, "http://upstream/sse")
    rec.http(event="request", exchange=1, conn=1, method="GET", target="/sse", headers=[])
    rec.http(event="response", exchange=1, conn=1, status=200, headers=[["Content-Type", "text/event-stream"]])
    rec.http(event="sse", exchange=1, conn=1, endpoint={"data": "/messages/?session_id=abc"}, sse={"event": "endpoint"})
    plain = [["Content-Type", "text/plain"]]
    _refusal(rec, 2, "POST", "/messages/?session_id=gone", 404, b"Could not find session", plain)
    _refusal(rec, 3, "POST", "/messages/", 400, b"session_id is required", plain)
    rec.close()
    return path


async def test_each_get_gets_the_refusal_recorded_for_its_path(tmp_path: Path) -> None:
    mock = HttpMock(ServeCore(script_from_path(str(_streamable(tmp_path / "cap.jsonl")))))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        async with httpx.AsyncClient(timeout=30) as http:
            plain = await http.get(url, headers={"Accept": "text/event-stream"})
            other = await http.get(url + "/304", headers={"Accept": "text/event-stream"})
        nursery.cancel_scope.cancel()
    assert (plain.status_code, plain.headers.get("allow"), plain.content) == (405, "POST", b"Method Not Allowed")
    assert other.status_code == 304


async def test_a_legacy_post_gets_the_refusal_recorded_for_its_kind(tmp_path: Path) -> None:
    mock = HttpMock(ServeCore(script_from_path(str(_legacy(tmp_path / "cap.jsonl")))))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        base = url.removesuffix("/sse")
        msg = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        async with httpx.AsyncClient(timeout=30) as http:
            none = await http.post(base + "/messages/", json=msg)
            gone = await http.post(base + "/messages/?session_id=gone", json=msg)
        nursery.cancel_scope.cancel()
    assert (none.status_code, none.content) == (400, b"session_id is required")
    assert (gone.status_code, gone.content) == (404, b"Could not find session")
