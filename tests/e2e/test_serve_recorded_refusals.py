"""End to end through the real HTTP tap: what an upstream refused at HTTP level (or cut
off) is recorded by ``HttpTap`` and served by the mock as the live client first saw it.

The upstream (h11 on trio) answers ``tools/call`` by tool name: ``auth`` 401 with a
``WWW-Authenticate`` challenge and a text body, ``forbid`` 403 with a JSON error object, ``html``
403 with an HTML page, ``close`` by closing the connection with no response; a notification it
refuses 400 with a JSON body holding a token; GET 405 with a text body; everything else as a
server would. The mock used to leave the refusals unanswered (the client waited for ever), then
sent them with an empty body where it was not JSON-RPC (the tap did not keep it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import h11
import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import trio

from h11_upstream import answer, requests
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from mcptap.transport.http import HttpTap, HttpTapConfig

CHALLENGE = 'Bearer error="insufficient_scope", scope="files:write"'
ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}


def _answer(msg: Any) -> tuple[int, list[tuple[str, str]], bytes] | None:
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
        return 200, [("Content-Type", "application/json")], orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    if "id" not in msg:
        if msg.get("method") == "notifications/roots/list_changed":
            return 400, [("Content-Type", "application/json")], b'{"error": "no roots", "access_token": "tok-SECRET-123"}'
        return 202, [], b""
    name = msg.get("params", {}).get("name")
    if name == "auth":
        return 401, [("WWW-Authenticate", CHALLENGE), ("Content-Type", "text/plain")], b"unauthorized"
    if name == "expired":
        return 401, [("Content-Type", "application/json")], b'{"error": "invalid_token", "refresh_token": "rt-SECRET-456"}'
    if name == "forbid":
        return 403, [("Content-Type", "application/json")], b'{"error": "forbidden"}'
    if name == "html":
        return 403, [("Content-Type", "text/html; charset=utf-8")], "<html><body><h1>Forbidden ☕</h1></body></html>".encode()
    if name == "close":
        return None
    return 200, [("Content-Type", "application/json")], orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": []}})


async def _upstream(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        async for req, body in requests(stream, conn):
            got = _answer(orjson.loads(body)) if req.method == b"POST" else (
                405, [("Allow", "POST"), ("Content-Type", "text/plain")], b"Method Not Allowed")
            if got is None:
                return                              # closed with no response (finally)
            status, headers, out = got
            await stream.send_all(answer(conn, status, [("Content-Length", str(len(out))), *headers], out))
    finally:
        await stream.aclose()


def _call(i: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}}}


async def _client(url: str) -> list[Any]:
    """What a client sees: (status, WWW-Authenticate, body) per request, or "closed"."""
    seen: list[Any] = []
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(url, json=INIT, headers=ACCEPT)
        seen.append((r.status_code, r.json()["result"]["serverInfo"]))
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=ACCEPT)
        seen.append(r.status_code)
        for i, name in enumerate(["auth", "forbid", "html", "close", "ok"]):
            try:
                r = await http.post(url, json=_call(10 + i, name), headers=ACCEPT)
            except httpx.RemoteProtocolError:
                seen.append("closed")
                continue
            seen.append((r.status_code, r.headers.get("www-authenticate"), r.headers.get("content-type"), r.content))
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, headers=ACCEPT)
        seen.append((r.status_code, r.content))
        r = await http.get(url, headers={"Accept": "text/event-stream"})
        seen.append((r.status_code, r.headers.get("allow"), r.content))
    return seen


async def _tapped(cap: Path, client: Callable[[str], Awaitable[Any]]) -> Any:
    """What ``client`` (given the tap's URL) returns, run against ``_upstream`` through the real
    tap recording into ``cap``."""
    rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": "http://upstream/mcp"}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        await nursery.start(trio.serve_listeners, _upstream, listeners)
        url = await nursery.start(HttpTap(HttpTapConfig(upstream=f"http://127.0.0.1:{port}/mcp", keep_host=True), rec).serve)
        got = await client(url)
        nursery.cancel_scope.cancel()
    rec.close()
    return got


async def test_refusals_recorded_through_the_tap_are_served_as_the_client_saw_them(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    live = await _tapped(cap, _client)
    assert live[2] == (401, CHALLENGE, "text/plain", b"unauthorized") and live[3][0] == 403 and live[5] == "closed", live
    assert live[4][3].startswith(b"<html>") and live[-1] == (405, "POST", b"Method Not Allowed"), live
    text = cap.read_text()
    assert "unauthorized" in text and "Forbidden ☕" in text and "Method Not Allowed" in text     # the bodies are kept
    assert "tok-SECRET-123" not in text and "«redacted:hmac:" in text                          # with their credentials redacted

    mock = HttpMock(ServeCore(script_from_path(str(cap))))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        served = await _client(url)
        nursery.cancel_scope.cancel()
    assert served[:-2] == live[:-2] and served[-1] == live[-1]
    # the notification's refusal: its JSON body as the capture holds it, the token a placeholder
    status, body = served[-2]
    doc = orjson.loads(body)
    assert status == 400 and doc["error"] == "no roots" and doc["access_token"].startswith("«redacted:hmac:"), served[-2]


def _codes(path: Path) -> list[tuple[str, str]]:
    """(code, message) of every finding in the capture at ``path``."""
    return [(f["code"], f.get("message", "")) for r in read_capture(str(path)).records for f in r.get("findings", ())]


async def test_the_mocks_own_capture_judges_its_replayed_refusals_as_the_tap_did(tmp_path: Path) -> None:
    """The mock's -o capture used to leave the requests it refused as recorded pending:
    ``jsonrpc.unanswered_request`` errors (``check`` exit 1) where the tap's capture of the
    same exchanges says ``http.request_refused`` (info)."""
    cap, own = tmp_path / "cap.jsonl", tmp_path / "own.jsonl"
    await _tapped(cap, _client)
    rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
    mock = HttpMock(ServeCore(script_from_path(str(cap))), rec)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        await _client(url)
        nursery.cancel_scope.cancel()
    rec.close()

    def refused(path: Path) -> list[str]:
        return sorted(m.split(": request(s) ")[1] for c, m in _codes(path) if c == "http.request_refused")

    def unanswered(path: Path) -> list[str]:
        return [m for c, m in _codes(path) if c == "jsonrpc.unanswered_request"]

    assert refused(cap) == ["tools/call id=10 refused at HTTP level", "tools/call id=11 refused at HTTP level",
                            "tools/call id=12 refused at HTTP level"], _codes(cap)
    assert refused(own) == refused(cap), _codes(own)
    assert unanswered(own) == unanswered(cap), _codes(own)
    # and all else as the tap judged it (a notification's JSON refusal is no JSON-RPC message), but the
    # closed connection: the tap saw its kept-alive upstream connection closed as the request arrived (its own
    # observation), the mock's capture (with its end record) a connection closed before a response
    lost = {"http.request_lost_on_closed_connection", "sse.connection_closed_mid_stream"}
    assert sorted(f for f in _codes(own) if f[0] not in lost) == sorted(f for f in _codes(cap) if f[0] not in lost)
    assert [c for c, _ in _codes(own) if c in lost] == ["sse.connection_closed_mid_stream"], _codes(own)


async def test_an_error_body_on_a_requests_post_is_scrubbed_as_on_a_notifications(tmp_path: Path) -> None:
    """A 401 JSON error body holding a ``refresh_token``: redacted in the ``response_body`` record of a
    notification's POST, it used to be kept in clear in the ``message`` record (``http.error_body``)
    of a request's POST, so the mock sent it raw and its own capture stored it again."""
    cap = tmp_path / "cap.jsonl"

    async def expired(url: str) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            assert (await http.post(url, json=INIT, headers=ACCEPT)).status_code == 200
            return await http.post(url, json=_call(20, "expired"), headers=ACCEPT)

    live = await _tapped(cap, expired)
    assert live.status_code == 401 and b"rt-SECRET-456" in live.content        # the client gets what the server sent
    text = cap.read_text()
    assert "rt-SECRET-456" not in text and "invalid_token" in text, text
    body = next(r for r in read_capture(str(cap)).records if r.get("type") == "message" and r.get("dir") == "s2c"
                and r.get("transport", {}).get("status") == 401)
    assert body["json"]["refresh_token"].startswith("«redacted:hmac:"), body
