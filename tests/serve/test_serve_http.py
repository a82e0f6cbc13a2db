"""The HTTP mock in process (HttpMock on trio, httpx as the client), on a
scripted stateful Streamable HTTP capture: fresh session ids, 400/404 for a
missing/unknown session, the recorded JSON and SSE modes, a GET stream that
carries the server's list_changed notification, DELETE."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import trio

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.http_streams import MockSession
from mcptap.serve.live import Out
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, note, record, req, res, s2c

C2S, S2C = Direction.C2S, Direction.S2C
SID = "recorded-session"


def http_capture(path: Path) -> Path:
    """initialize (JSON), initialized (202), a GET stream, tools/call answered
    by SSE with a progress event, then list_changed on the GET stream."""
    t = {"now": 0}

    def clock() -> int:
        t["now"] += 1000
        return t["now"]

    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://upstream/mcp"}, clock=clock, started="2026-01-01T00:00:00.000000Z")

    def exchange(ex: int, method: str, status: int, ctype: str | None, c2s: Any = None, s2c: tuple[Any, ...] = (),
                 stream: str = "post") -> None:
        rec.http(event="request", exchange=ex, method=method, target="/mcp", headers=[["Mcp-Session-Id", SID]])
        if c2s is not None:
            rec.frame(C2S, orjson.dumps(c2s), session=SID, transport={"exchange": ex, "stream": stream})
        headers = [["Mcp-Session-Id", SID]] + ([["Content-Type", ctype]] if ctype else [])
        rec.http(event="response", exchange=ex, status=status, headers=headers)
        for m in s2c:
            rec.frame(S2C, orjson.dumps(m), session=SID, transport={"exchange": ex, "stream": stream})

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "s", "version": "1"}}
    exchange(1, "POST", 200, "application/json", init, ({"jsonrpc": "2.0", "id": 1, "result": result},))
    exchange(2, "POST", 202, None, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    exchange(3, "GET", 200, "text/event-stream", stream="get")
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {}, "_meta": {"progressToken": 7}}}
    exchange(4, "POST", 200, "text/event-stream", call, (
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7, "progress": 1}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}]}}))
    rec.frame(S2C, orjson.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}), session=SID,
              transport={"exchange": 3, "stream": "get"})
    rec.close()
    return path


@asynccontextmanager
async def mock(path: Path, **kw: Any) -> AsyncIterator[str]:
    server = HttpMock(ServeCore(script_from_path(str(path))), **kw)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        yield url
        nursery.cancel_scope.cancel()


def _sse(text: str) -> list[Any]:
    return [orjson.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


async def test_streamable_http_sessions_modes_and_the_get_stream(tmp_path: Path) -> None:
    cap = http_capture(tmp_path / "http.jsonl")
    accept = {"Accept": "application/json, text/event-stream"}
    async with mock(cap) as url, httpx.AsyncClient(timeout=10) as http:
        assert url.endswith("/mcp")
        r = await http.post(url, json={"jsonrpc": "2.0", "id": "x", "method": "tools/list"}, headers=accept)
        assert r.status_code == 400                                   # no session yet
        r = await http.post(url, json={"jsonrpc": "2.0", "id": "i", "method": "initialize",
                                       "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "other", "version": "2"}}},
                            headers=accept)
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert r.json()["id"] == "i" and r.json()["result"]["serverInfo"]["name"] == "s"
        sid = r.headers["mcp-session-id"]
        assert sid and sid != SID                                     # a fresh session id
        hs = {**accept, "Mcp-Session-Id": sid}
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hs)
        assert r.status_code == 202
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, headers={**accept, "Mcp-Session-Id": "nope"})
        assert r.status_code == 404
        got: list[Any] = []

        async def listen() -> None:
            async with http.stream("GET", url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid}) as resp:
                assert resp.status_code == 200
                async for line in resp.aiter_lines():
                    if line.startswith("data: "):
                        got.append(orjson.loads(line[6:]))
                        return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen)
            call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "t", "arguments": {}, "_meta": {"progressToken": "p"}}}
            r = await http.post(url, json=call, headers=hs)
            assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
            events = _sse(r.text)
            assert [e.get("method", "response") for e in events] == ["notifications/progress", "response"]
            assert events[0]["params"]["progressToken"] == "p" and events[1]["id"] == 9
        assert got == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
        r = await http.delete(url, headers={"Mcp-Session-Id": sid})
        assert r.status_code == 200
        r = await http.post(url, json=call, headers=hs)
        assert r.status_code == 404                                   # the session has ended


ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": "i", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "c", "version": "1"}}}


async def _said(lines: list[str], n: int) -> None:
    with trio.fail_after(5):
        while len(lines) < n:
            await trio.sleep(0.01)


async def test_a_server_message_no_stream_can_carry_is_said_not_silently_held(tmp_path: Path) -> None:
    """A stdio capture served over HTTP (the mock refuses GET, as the recorded server offered
    none): a server request sent on the server's own (roots/list after initialized) and a
    notification sent after the tool's result have no stream to go on: each is said at once,
    on stderr and as a ``serve`` note in the mock's capture, not held without a word."""
    cap = record(tmp_path / "c.jsonl", [
        *handshake(client_caps={"roots": {}}),
        s2c(req(10, "roots/list")),
        c2s(res(10, {"roots": []})),
        c2s(req(2, "tools/call", {"name": "t", "arguments": {}})),
        s2c(note("notifications/message", {"level": "info", "data": "working"})),
        s2c(res(2, {"content": [{"type": "text", "text": "ok"}]})),
        s2c(note("notifications/tools/list_changed")),
    ])
    own = tmp_path / "own.jsonl"
    rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
    lines: list[str] = []
    async with mock(cap, rec=rec, say=lines.append) as url, httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(url, json=INIT, headers=ACCEPT)).json()["id"] == "i"
        assert (await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=ACCEPT)).status_code == 202
        assert (await http.get(url, headers={"Accept": "text/event-stream"})).status_code == 405
        await _said(lines, 1)
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "arguments": {}}},
                            headers=ACCEPT)
        assert [e.get("method", "response") for e in _sse(r.text)] == ["notifications/message", "response"]
        await _said(lines, 2)
    rec.close()
    assert lines[0].startswith("server request roots/list (id 10) has no open client request it belongs to")
    assert lines[0].endswith("(the recorded server offered none, so the mock answers GET 405): the client never gets it")
    assert lines[1].startswith("notification notifications/tools/list_changed has no open client request")
    notes = [r for r in read_capture(str(own)).records if r.get("type") == "note"]
    assert [(n["source"], n["unsent"], n["message"]) for n in notes] == [
        ("serve", "roots/list", lines[0]), ("serve", "notifications/tools/list_changed", lines[1])]


async def test_a_server_message_waiting_for_the_get_stream_is_said_then_delivered(tmp_path: Path, monkeypatch: Any) -> None:
    """The recorded server offered a GET stream but the client has not opened one: after a
    grace the mock says the message waits for it; a GET stream opened later gets it."""
    monkeypatch.setattr("mcptap.serve.http.UNSENT_AFTER_S", 0.05)
    cap = http_capture(tmp_path / "http.jsonl")
    lines: list[str] = []
    async with mock(cap, say=lines.append) as url, httpx.AsyncClient(timeout=10) as http:
        r = await http.post(url, json={**INIT, "params": {**INIT["params"], "capabilities": {}}}, headers=ACCEPT)
        hs = {**ACCEPT, "Mcp-Session-Id": r.headers["mcp-session-id"]}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hs)
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
        assert _sse((await http.post(url, json=call, headers=hs)).text)[-1]["id"] == 9
        await _said(lines, 1)
        assert lines == [f"session {hs['Mcp-Session-Id']}: notification notifications/tools/list_changed has no open client "
                         "request it belongs to, and no GET stream after 0.05 s: it waits for one"]
        async with http.stream("GET", url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": hs["Mcp-Session-Id"]}) as resp:
            async for line in resp.aiter_lines():
                if line.startswith("data: "):
                    assert orjson.loads(line[6:])["method"] == "notifications/tools/list_changed"
                    break


def test_what_a_response_stream_still_holds_when_it_ends_goes_to_the_standalone_stream() -> None:
    """Sent for a request after its response, or not an answer on a JSON-mode POST: such an
    output is routed again when the POST's stream ends (to the GET stream, else kept for it), never dropped."""
    from mcptap.serve.live import LiveSession

    held: list[Out] = []
    ms = MockSession(LiveSession(), on_backlog=lambda m, o: held.append(o))
    st = ms.open_post([7])
    answer = Out({"jsonrpc": "2.0", "id": 7, "result": {}}, via=7, answers=7, request=7)
    late = Out({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, via=7)
    ms.route(answer)
    ms.route(late)
    ms.close_post(st)
    assert ms.backlog == [answer, late] and held == [answer, late]    # neither was received from the stream
    get = ms.open_standalone()
    ms.close_standalone(get)
    assert ms.backlog == [answer, late] and held == [answer, late]    # kept for the next GET stream


async def test_a_cross_site_or_non_json_post_is_refused_as_a_real_server_refuses(tmp_path: Path) -> None:
    # A web page can send a form POST (text/plain, no CORS preflight) to a mock on the developer's
    # machine; the SDK server it stands in for answers such a POST 400/415, and a foreign Origin 403.
    cap = http_capture(tmp_path / "http.jsonl")
    body = orjson.dumps(INIT)
    async with mock(cap) as url, httpx.AsyncClient(timeout=10) as http:
        r = await http.post(url, content=body, headers={**ACCEPT, "Content-Type": "text/plain", "Origin": "http://evil.example"})
        assert r.status_code == 403
        r = await http.post(url, content=body, headers={**ACCEPT, "Content-Type": "text/plain"})
        assert r.status_code == 415 and r.json()["error"]["code"] == -32600
        r = await http.post(url, content=body, headers=ACCEPT)                 # no Content-Type at all
        assert r.status_code == 415
        r = await http.post(url, content=body, headers={**ACCEPT, "Content-Type": "Application/JSON; charset=utf-8",
                                                         "Origin": url.rsplit("/", 1)[0]})
        assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "s"
        r = await http.post(url, content=body, headers={**ACCEPT, "Content-Type": "application/json", "Origin": "null"})
        assert r.status_code == 403


def test_origin_and_media_type_rules() -> None:
    from mcptap.serve.http_guard import json_media_type, origin_allowed
    hosts = {"127.0.0.1", "localhost", "[::1]"}
    assert origin_allowed(None, hosts) and origin_allowed("http://localhost:3000", hosts)
    assert origin_allowed("http://[::1]:8080", hosts) and origin_allowed("https://127.0.0.1", hosts)
    assert not origin_allowed("http://127.0.0.1.evil.example", hosts) and not origin_allowed("file://", hosts)
    assert not origin_allowed("http://[::1", hosts) and not origin_allowed("http://localhost:99999", hosts)
    assert json_media_type("application/json") and not json_media_type("application/jsonl")
    assert not json_media_type("text/plain; x=application/json")


async def _raw(url: str) -> trio.SocketStream:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return await trio.open_tcp_stream(host, int(port))


async def _read_all(s: trio.SocketStream) -> bytes:
    got = b""
    with trio.fail_after(10):
        while chunk := await s.receive_some(65536):
            got += chunk
    return got


async def test_slow_idle_and_surplus_clients_cannot_hold_the_mock(tmp_path: Path) -> None:
    # A mock left listening must not be held by clients that dribble a request head (slowloris),
    # sit idle, or open more connections than it can serve (as the tap's own protections).
    cap = http_capture(tmp_path / "http.jsonl")
    said: list[str] = []
    async with mock(cap, request_timeout=0.3, idle_timeout=0.3, max_connections=2, say=said.append) as url:
        slow = await _raw(url)
        await slow.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        assert (await _read_all(slow)).startswith(b"HTTP/1.1 408 ")
        idle = await _raw(url)
        assert await _read_all(idle) == b""                          # closed quietly
        held = [await _raw(url), await _raw(url)]
        await held[0].send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")   # in progress, not idle yet
        extra = await _raw(url)
        assert (await _read_all(extra)).startswith(b"HTTP/1.1 503 ")
        for s in held:
            await _read_all(s)                                       # both time out, freeing their places
        async with httpx.AsyncClient(timeout=10) as http:
            r = await http.post(url, json=INIT, headers=ACCEPT)
            assert r.status_code == 200
    assert any("408" in line for line in said) and any("503" in line for line in said)


async def test_out_of_file_descriptors_is_one_line_and_a_retry_not_a_traceback() -> None:
    import errno

    from mcptap.serve.http_conn import Limit, accept_loop

    class Listener:
        calls = 0

        async def accept(self) -> Any:
            Listener.calls += 1
            if Listener.calls <= 3:
                raise OSError(errno.EMFILE, "Too many open files")
            await trio.sleep_forever()

    said: list[str] = []
    limit = Limit.saying(said.append, 4)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(accept_loop, Listener(), None, nursery, limit)
        with trio.fail_after(10):
            while Listener.calls < 4:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert limit.notices.counts() == {"accept": 3} and len(said) == 1 and "Too many open files" in said[0]


def test_a_request_the_recording_tap_refused_is_no_part_of_the_script(tmp_path: Path) -> None:
    # The tap answered it 403 itself (DNS rebinding) and never forwarded it: matched with a live
    # request, the mock served its "no answer" and the client hung (a ping, a tools/list).
    data = Path(__file__).parents[1] / "data" / "http-host-rejected.jsonl"
    old = tmp_path / "old.jsonl"              # as an mcptap before the refused marker wrote it
    lines = []
    for line in data.read_bytes().splitlines():
        r = orjson.loads(line)
        r.pop("refused", None)
        if isinstance(r.get("transport"), dict):
            r["transport"].pop("refused", None)
        if r.get("type") == "header":
            r["rules"] = "an-older-mcptap"
        lines.append(orjson.dumps(r))
    old.write_bytes(b"\n".join(lines) + b"\n")
    for cap in (data, old):
        script = script_from_path(str(cap))
        items = [r for s in script.sessions for r in s.items]
        assert [(r.seq, r.method) for r in items] == [(5, "initialize")], cap
        assert items[0].emits and items[0].emits[0].kind == "response"
