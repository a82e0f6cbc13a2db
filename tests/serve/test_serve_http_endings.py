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
from mcptap.model import Direction
from mcptap.recorder import Recorder
from tests.serve._endings_helpers import CHALLENGE, SID, call, capture, serve

C2S, S2C = Direction.C2S, Direction.S2C


async def test_http_refusals_are_replayed_with_their_status_headers_and_body(tmp_path: Path) -> None:
    got: dict[str, httpx.Response] = {}
    mock: list[str] = []

    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        mock.append(url.removesuffix("/mcp"))
        for i, name in enumerate(["auth", "forbid", "gone", "verb", "broke"]):
            got[name] = await http.post(url, json=call(100 + i, name), headers=hs)

    own = tmp_path / "own.jsonl"
    await serve(capture(tmp_path / "cap.jsonl"), own, body)
    assert got["auth"].status_code == 401 and got["auth"].content == b"unauthorized"     # the body the tap kept
    assert got["auth"].headers["content-type"] == "text/plain"
    # the client can step up its scopes, and finds the metadata on the mock, not on the recorded upstream
    assert got["auth"].headers["www-authenticate"] == CHALLENGE.replace("http://upstream", mock[0])
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
            await http.post(url, json=call(7, "close"), headers=hs)
        except httpx.RemoteProtocolError as exc:        # "Server disconnected without sending a response."
            err.append(exc)
        r = await http.post(url, json=call(8, "forbid"), headers=hs)       # the mock goes on serving
        assert r.status_code == 403

    own = tmp_path / "own.jsonl"
    await serve(capture(tmp_path / "cap.jsonl"), own, body)
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
            r = await http.post(url, json=call(9, "later"), headers=hs)
            assert r.status_code == 202 and r.content == b""

    await serve(capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)
    assert events == [{"jsonrpc": "2.0", "id": 9, "result": {"content": []}}]


async def test_a_notification_the_server_refused_is_refused_again(tmp_path: Path) -> None:
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, headers=hs)
        assert r.status_code == 404
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hs)
        assert r.status_code == 202                      # as recorded
        r = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/unknown"}, headers=hs)
        assert r.status_code == 202                      # not in the capture: accepted, as before

    await serve(capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)


@pytest.mark.parametrize("name", ["cut"])
async def test_near_miss_an_exchange_the_recording_cut_stays_unanswered(tmp_path: Path, name: str) -> None:
    """The tap stopped with the request open: the server never ended it, so the live one stays
    pending (as a recorded request with no answer does) until the client gives up."""
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        with trio.move_on_after(0.5) as scope:       # no answer is expected: the bound only ends the wait
            await http.post(url, json=call(5, name), headers=hs)
        assert scope.cancelled_caught

    await serve(capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)


async def test_a_get_refused_with_its_allow_header_is_refused_so_again(tmp_path: Path) -> None:
    """GET (and DELETE) already got their recorded status: now with its recorded headers too."""
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        r = await http.get(url, headers={**hs, "Accept": "text/event-stream"})
        assert r.status_code == 405 and r.headers["allow"] == "POST, DELETE" and r.content == b"Method Not Allowed"

    await serve(capture(tmp_path / "cap.jsonl", get_refused=True), tmp_path / "own.jsonl", body)


async def test_an_event_stream_the_server_ended_without_a_message_is_ended_so_again(tmp_path: Path) -> None:
    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        r = await http.post(url, json=call(6, "primed"), headers=hs)
        # ended as it was, after its priming event (its id lets a client resume the stream)
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream" and r.content == b"id: e1\ndata: \n\n"

    await serve(capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl", body)


def _broken_stream(path: Path, how: str) -> Path:
    """A tools/call whose event stream carried a log, then ended (``how``) without the answer."""
    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://upstream/mcp"}, clock=iter(range(1000, 10**9, 1000)).__next__,
                   started="2026-01-01T00:00:00.000000Z")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "s", "version": "1"}}
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}}
    for ex, (c2s, ctype, s2c, end) in enumerate([(init, "application/json", {"jsonrpc": "2.0", "id": 1, "result": result}, "complete"),
                                                 (call(2, "slow"), "text/event-stream", log, how)], start=1):
        rec.http(event="request", exchange=ex, conn=1, method="POST", target="/mcp", headers=[])
        rec.frame(C2S, orjson.dumps(c2s), session=SID, transport={"exchange": ex, "stream": "post"})
        rec.http(event="response", exchange=ex, conn=1, status=200, headers=[["Content-Type", ctype], ["Mcp-Session-Id", SID]])
        rec.frame(S2C, orjson.dumps(s2c), session=SID, transport={"exchange": ex, "stream": "post", "status": 200, "sse": {"id": "e1"}})
        rec.http(event="end", exchange=ex, conn=1, how=end)
    rec.close()
    return path


@pytest.mark.parametrize("how", ["complete", "upstream_closed"])
async def test_an_event_stream_that_carried_messages_but_not_the_answer_ends_as_it_did(tmp_path: Path, how: str) -> None:
    """It used to stay open, waiting for an answer the recording does not have on it: the client hung."""
    got: list[Any] = []

    async def body(http: httpx.AsyncClient, url: str, hs: dict[str, str]) -> None:
        try:
            async with http.stream("POST", url, json=call(7, "slow"), headers=hs) as r:
                async for chunk in r.aiter_bytes():
                    got.append(chunk)
        except httpx.RemoteProtocolError as exc:      # the connection closed mid-stream, as the server's was
            got.append(exc)

    own = tmp_path / "own.jsonl"
    with trio.fail_after(60):                         # bounds the hang this guards against
        await serve(_broken_stream(tmp_path / "cap.jsonl", how), own, body)
    text = b"".join(g for g in got if isinstance(g, bytes))
    assert b"id: e1\n" in text and b'"data":"working"' in text          # the log, with the event id it had
    assert isinstance(got[-1], httpx.RemoteProtocolError) == (how != "complete"), got
    if how != "complete":
        assert any(r.get("type") == "note" and "closed mid-stream" in r.get("message", "") for r in read_capture(str(own)).records)
