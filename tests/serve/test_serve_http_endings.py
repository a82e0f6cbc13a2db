"""A recorded POST that carried no JSON-RPC answer ends the live POST the same way.

The mock used to treat such an exchange as "no answer yet": the live client waited for
ever on a request the recorded upstream had refused with a plain HTTP status (401 with
``WWW-Authenticate``, 403 with a JSON error body, 404, 405), answered ``202`` (its answer
came on the GET stream), or whose connection it closed. The capture here has the records
a real tap writes for those (``mcptap record --upstream`` in front of a server answering
so: the ``http`` request/response/end records, a JSON error body framed as an ``invalid``
message); ``serve/script_http.py`` says what is replayed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import pytest
import trio

from mcptap.capture.reader import read_capture
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


def _capture(path: Path, get_refused: bool = False) -> Path:
    """The refusals below; ``get_refused``: the server offered no GET stream (405 with ``Allow``)."""
    t = {"now": 0}

    def clock() -> int:
        t["now"] += 1000
        return t["now"]

    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://upstream/mcp"}, clock=clock, started="2026-01-01T00:00:00.000000Z")
    n = {"ex": 0}

    def exchange(c2s: Any, status: int | None, headers: list[list[str]], s2c: tuple[bytes, ...] = (), how: str = "complete",
                 method: str = "POST", stream: str = "post", **end: Any) -> int:
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
        rec.http(event="end", exchange=ex, conn=1, how=how, **end)
        return ex

    call = _call_of
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    json_ct = [["Content-Type", "application/json"]]
    exchange(init, 200, json_ct, (orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result}),))
    exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, 202, [["Content-Length", "0"]])
    if get_refused:
        get = exchange(None, 405, [["Allow", "POST, DELETE"], ["Content-Length", "0"]], method="GET", stream="get")
    else:
        get = exchange(None, 200, [["Content-Type", "text/event-stream"]], method="GET", stream="get", how="tap_stopped")
    # refused at HTTP level: the 401's text body is not framed (not in the capture), the 403's JSON one is
    exchange(call(10, "auth"), 401, [["WWW-Authenticate", CHALLENGE], ["Content-Type", "text/plain"], ["Content-Length", "12"]])
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
    primed = exchange(_call_of(18, "primed"), 200, [["Content-Type", "text/event-stream"]])
    rec.http(event="sse", exchange=primed, sse={"id": "e1", "offset": 0, "bytes": 12, "terminated": True})
    # cut by the recording, not by the server: stays unanswered, as recorded
    exchange(call(17, "cut"), None, [], how="tap_stopped")
    rec.close()
    return path


def _call_of(i: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}}}


async def _serve(cap: Path, own: Path, body: Any) -> None:
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


async def test_http_refusals_are_replayed_with_their_status_headers_and_body(tmp_path: Path) -> None:
    got: dict[str, httpx.Response] = {}

    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        for i, name in enumerate(["auth", "forbid", "gone", "verb", "broke"]):
            got[name] = await http.post(url, json=_call(100 + i, name), headers=hs)

    own = tmp_path / "own.jsonl"
    await _serve(_capture(tmp_path / "cap.jsonl"), own, body)
    assert got["auth"].status_code == 401
    assert got["auth"].headers["www-authenticate"] == CHALLENGE            # the client can step up its scopes
    assert got["forbid"].status_code == 403 and got["forbid"].json() == {"error": "forbidden"}
    assert got["forbid"].headers["content-type"] == "application/json"
    assert got["gone"].status_code == 404
    assert got["verb"].status_code == 405 and got["verb"].headers["allow"] == "GET"
    assert got["broke"].status_code == 502
    assert all(r.headers.get("mcp-session-id") != SID for r in got.values())   # the mock's session, never the recorded one
    statuses = [r["status"] for r in read_capture(str(own)).records if r.get("type") == "http" and r.get("event") == "response"]
    assert statuses == [200, 401, 403, 404, 405, 502]


async def test_a_connection_the_server_closed_is_closed_again(tmp_path: Path) -> None:
    err: list[BaseException] = []

    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        try:
            await http.post(url, json=_call(7, "close"), headers=hs)
        except httpx.RemoteProtocolError as exc:        # "Server disconnected without sending a response."
            err.append(exc)
        r = await http.post(url, json=_call(8, "forbid"), headers=hs)       # the mock goes on serving
        assert r.status_code == 403

    own = tmp_path / "own.jsonl"
    await _serve(_capture(tmp_path / "cap.jsonl"), own, body)
    assert err
    assert any(r.get("type") == "note" and "closed with no response" in r.get("message", "") for r in read_capture(str(own)).records)


async def test_a_request_answered_202_gets_202_and_its_answer_on_the_get_stream(tmp_path: Path) -> None:
    events: list[Any] = []

    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        async with trio.open_nursery() as n:
            ready = trio.Event()

            async def listen() -> None:
                async with http.stream("GET", url, headers={**hs, "Accept": "text/event-stream"}) as resp:
                    assert resp.status_code == 200
                    ready.set()
                    async for line in resp.aiter_lines():
                        if line.startswith("data: "):
                            events.append(orjson.loads(line[6:]))
                            n.cancel_scope.cancel()

            n.start_soon(listen)
            await ready.wait()
            r = await http.post(url, json=_call(9, "later"), headers=hs)
            assert r.status_code == 202 and r.content == b""

    await _serve(_capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)
    assert events == [{"jsonrpc": "2.0", "id": 9, "result": {"content": []}}]


async def test_a_notification_the_server_refused_is_refused_again(tmp_path: Path) -> None:
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, headers=hs)
        assert r.status_code == 404
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hs)
        assert r.status_code == 202                      # as recorded
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/unknown"}, headers=hs)
        assert r.status_code == 202                      # not in the capture: accepted, as before

    await _serve(_capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)


@pytest.mark.parametrize("name", ["cut"])
async def test_near_miss_an_exchange_the_recording_cut_stays_unanswered(tmp_path: Path, name: str) -> None:
    """The tap stopped with the request open: the server never ended it, so the live one stays
    pending (as a recorded request with no answer does) until the client gives up."""
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        with trio.move_on_after(0.5) as scope:       # no answer is expected: the bound only ends the wait
            await http.post(url, json=_call(5, name), headers=hs)
        assert scope.cancelled_caught

    await _serve(_capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)


async def test_a_get_refused_with_its_allow_header_is_refused_so_again(tmp_path: Path) -> None:
    """GET (and DELETE) already got their recorded status: now with its recorded headers too."""
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        r = await http.get(url, headers={**hs, "Accept": "text/event-stream"})
        assert r.status_code == 405 and r.headers["allow"] == "POST, DELETE"

    await _serve(_capture(tmp_path / "cap.jsonl", get_refused=True), tmp_path / "own.jsonl", body)


async def test_an_event_stream_the_server_ended_without_a_message_is_ended_so_again(tmp_path: Path) -> None:
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        r = await http.post(url, json=_call(6, "primed"), headers=hs)
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream" and r.content == b""

    await _serve(_capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)
