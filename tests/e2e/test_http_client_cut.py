"""End to end: a client walks away from its answer, through the real HTTP tap,
with the official SDK (mcp 2.x) server tests/e2e/cut_server.py. On
2026-07-28 Streamable HTTP closing the response stream IS the cancellation (no
notifications/cancelled); a client that stops reading mid-event cut the event
itself, not the server. Live findings and `check --full` agree."""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import h11
import pytest
import trio
from mcp import Client

from mcptap.capture.reader import read_capture
from peers import free_port, listening
from test_http_sdk import tapped
from test_http_tap_faults import findings_live_and_full

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "cut_server.py"


@asynccontextmanager
async def cut_server(*args: str):
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), *args], port):
        yield f"http://127.0.0.1:{port}"


def records(path: Path) -> list[dict[str, Any]]:
    return read_capture(str(path)).records


@pytest.mark.parametrize("flags", [("--json", "--stateless"), ("--stateless",), ("--json",), ()])
async def test_a_modern_client_that_gives_up_on_a_call_cancels_it(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """The SDK client in auto mode (2026-07-28) gives up on a slow tools/call
    (anyio.move_on_after): its connection closes before the answer. That is
    the cancellation: cancel.request by transport, never an unanswered request."""
    cap = tmp_path / "cap.jsonl"
    async with cut_server("streamable-http", *flags) as base, tapped(base + "/mcp", cap) as (url, _tap):
        with trio.fail_after(30):
            async with Client(url, mode="auto") as client:
                with anyio.move_on_after(0.5):
                    await client.call_tool("sleepy", {"seconds": 3})
                assert (await client.call_tool("sleepy", {"seconds": 0})).content[0].text == "woke up"
            await trio.sleep(0.3)
    recs = records(cap)
    call = next(r for r in recs if r["type"] == "message" and r.get("method") == "tools/call")
    assert call["rev"] == "2026-07-28"
    live, full = findings_live_and_full(cap)
    assert live == full
    codes = [(f[3], f[4]) for f in live]
    assert ("jsonrpc.unanswered_request", "error") not in codes, live
    assert not any(sev in ("error", "warn") for _, sev in codes), live
    cancels = [f for f in live if f[3] == "cancel.request"]
    assert len(cancels) == 1 and '"by": "transport"' in cancels[0][6] and str(call["seq"]) in cancels[0][6], live
    assert recs[-1]["type"] == "end" and recs[-1]["pending"] == []


def _post(authority: str, path: str, body: dict[str, Any], headers: list[tuple[str, str]]) -> bytes:
    data = json.dumps(body).encode()
    hdrs = [("Host", authority), ("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json"),
            ("Content-Length", str(len(data))), *headers]
    return h11.Connection(h11.CLIENT).send(h11.Request(method="POST", target=path, headers=hdrs)) + data


async def read_some_then_close(url: str, head: bytes, at_least: int, until: bytes = b"") -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Send ``head`` (a whole request) on a fresh connection, read the
    response until ``at_least`` body bytes (or ``until`` in them) came, then
    close: a client that stops reading. Returns (response headers, body so far)."""
    authority = url.split("//")[1].split("/")[0]
    host, port = authority.rsplit(":", 1)
    s = await trio.open_tcp_stream(host, int(port))
    c = h11.Connection(h11.CLIENT)
    c.send(h11.Request(method="POST", target="/", headers=[("Host", authority), ("Content-Length", "0")]))   # our state: request sent
    c.send(h11.EndOfMessage())
    await s.send_all(head)
    got, hdrs = b"", []
    with trio.fail_after(20):
        while not hdrs or (len(got) < at_least and not (until and until in got)):
            ev = c.next_event()
            if ev is h11.NEED_DATA:
                c.receive_data(await s.receive_some(65536))
            elif isinstance(ev, h11.Response):
                hdrs = list(ev.headers.raw_items())
            elif isinstance(ev, h11.Data):
                got += ev.data
            elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
    await s.aclose()
    return hdrs, got


def assert_cut_judged_as_the_clients(cap: Path, code: str = "sse.client_closed_mid_event") -> list[tuple]:
    """The client cut a big event (or JSON body): recorded as such
    (``code``, info), never as the server's data. Returns the live findings
    (equal to check --full's)."""
    live, full = findings_live_and_full(cap)
    assert live == full
    codes = {f[3] for f in live}
    assert not codes & {"sse.data_not_jsonrpc", "sse.unterminated_event_at_eof", "framing.large_message",
                        "sse.stream_closed_without_response", "jsonrpc.unanswered_request", "jsonrpc.invalid_message"}, live
    assert not [f for f in live if f[4] == "error"], live
    cut = [f for f in live if f[3] in ("sse.client_closed_mid_event", "http.client_closed_mid_response")]
    assert [f[3] for f in cut] == [code] and cut[0][4] == "info", live
    assert json.loads(cut[0][6]).get("bytes", json.loads(cut[0][6]).get("response_bytes")) >= 1 << 20, live
    return live


INIT_25 = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
BIG = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "big", "arguments": {"mb": 25}}}


async def test_a_client_that_stops_reading_mid_event_is_not_the_servers_fault(tmp_path: Path) -> None:
    """Handshake era, stateful SSE server: the client reads 2 MiB of the
    25 MiB result event and closes. The partial event is the client's cut
    (sse.client_closed_mid_event), the request abandoned by the client (a
    warning: a disconnect is not a cancellation before 2026-07-28)."""
    cap = tmp_path / "cap.jsonl"
    async with cut_server("streamable-http") as base, tapped(base + "/mcp", cap) as (url, _tap):
        authority = url.split("//")[1].split("/")[0]
        hdrs, body = await read_some_then_close(url, _post(authority, "/mcp", INIT_25, []), 1, b"\n\n")
        sid = next(v.decode() for k, v in hdrs if k.lower() == b"mcp-session-id")
        more = [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-06-18")]
        await read_some_then_close(url, _post(authority, "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, more), 0)
        _, got = await read_some_then_close(url, _post(authority, "/mcp", BIG, more), 2 << 20)
        assert len(got) >= 2 << 20
        await trio.sleep(0.3)
    live = assert_cut_judged_as_the_clients(cap)
    gone = [f for f in live if f[3] == "http.client_abandoned_request"]
    assert len(gone) == 1 and gone[0][4] == "warn" and "tools/call id=2" in gone[0][5], live


@pytest.mark.parametrize(("flags", "code"), [(("--stateless",), "http.client_closed_mid_response"),
                                             (("--stateless", "--json"), "http.client_closed_mid_response")])
async def test_a_modern_client_that_stops_reading_mid_answer_cancelled(tmp_path: Path, flags: tuple[str, ...], code: str) -> None:
    """2026-07-28: the same cut is the cancellation (the SDK server answers
    modern requests with JSON: the client cuts the body)."""
    cap = tmp_path / "cap.jsonl"
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    call = {**BIG, "params": {**BIG["params"], "_meta": meta}}
    async with cut_server("streamable-http", *flags) as base, tapped(base + "/mcp", cap) as (url, _tap):
        authority = url.split("//")[1].split("/")[0]
        more = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "big")]
        _, got = await read_some_then_close(url, _post(authority, "/mcp", call, more), 2 << 20)
        assert len(got) >= 2 << 20
        await trio.sleep(0.3)
    live = assert_cut_judged_as_the_clients(cap, code)
    assert not [f for f in live if f[4] == "warn"], live
    assert [f[3] for f in live if f[3].startswith("cancel.")] == ["cancel.request"], live


async def test_a_legacy_client_that_stops_reading_its_event_stream_mid_event(tmp_path: Path) -> None:
    """Legacy HTTP+SSE: the answer rides the GET stream; the client closes it
    2 MiB into the 25 MiB result event. The cut is the client's, the request
    abandoned by it (warn), not unanswered by the server."""
    cap = tmp_path / "cap.jsonl"
    async with cut_server("sse") as base, tapped(base + "/sse", cap) as (url, _tap):
        authority = url.split("//")[1].split("/")[0]
        host, port = authority.rsplit(":", 1)
        s = await trio.open_tcp_stream(host, int(port))
        c = h11.Connection(h11.CLIENT)
        await s.send_all(c.send(h11.Request(method="GET", target="/sse", headers=[("Host", authority), ("Accept", "text/event-stream")])))
        await s.send_all(c.send(h11.EndOfMessage()))
        got = b""

        async def until(pred: Any) -> None:
            nonlocal got
            with trio.fail_after(20):
                while not pred(got):
                    ev = c.next_event()
                    if ev is h11.NEED_DATA:
                        c.receive_data(await s.receive_some(65536))
                    elif isinstance(ev, h11.Data):
                        got += ev.data

        await until(lambda b: b"event: endpoint" in b and b"\n\n" in b.split(b"event: endpoint", 1)[1].replace(b"\r\n", b"\n"))
        endpoint = got.replace(b"\r\n", b"\n").split(b"event: endpoint\ndata: ", 1)[1].split(b"\n", 1)[0].decode()
        await read_some_then_close(url, _post(authority, endpoint, {**INIT_25, "params": {**INIT_25["params"], "protocolVersion": "2024-11-05"}},
                                              []), 0)
        await until(lambda b: b'"id":1' in b.replace(b" ", b""))
        await read_some_then_close(url, _post(authority, endpoint, {"jsonrpc": "2.0", "method": "notifications/initialized"}, []), 0)
        await read_some_then_close(url, _post(authority, endpoint, BIG, []), 0)
        n = len(got)
        await until(lambda b: len(b) > n + (2 << 20))
        await s.aclose()
        await trio.sleep(0.3)
    live = assert_cut_judged_as_the_clients(cap)
    gone = [f for f in live if f[3] == "http.client_abandoned_request"]
    assert len(gone) == 1 and gone[0][4] == "warn" and "tools/call id=2" in gone[0][5], live


async def test_sessionless_exchanges_after_initialize_carry_its_phase_and_revision(tmp_path: Path) -> None:
    """A stateless SDK server (no Mcp-Session-Id) and the SDK client in
    legacy mode: the exchanges after initialize are the operating ones of the
    revision it negotiated (one logical client), live and under check --full."""
    cap = tmp_path / "cap.jsonl"
    async with cut_server("streamable-http", "--stateless", "--json") as base, tapped(base + "/mcp", cap) as (url, _tap):
        with trio.fail_after(30):
            async with Client(url, mode="legacy") as client:
                assert (await client.call_tool("sleepy", {"seconds": 0})).content[0].text == "woke up"
    msgs = [r for r in records(cap) if r["type"] == "message"]
    assert all(r.get("session") is None for r in msgs)
    init = next(r for r in msgs if r.get("method") == "initialize" and r["kind"] == "request")
    rev = next(r["rev"] for r in msgs if r.get("pair") == init["seq"])
    later = [r for r in msgs if r["transport"]["exchange"] != init["transport"]["exchange"]]
    assert later and all((r.get("phase"), r.get("rev")) == ("operating", rev) for r in later), later
    live, full = findings_live_and_full(cap)
    assert live == full and not [f for f in live if f[4] in ("error", "warn")], live



@pytest.mark.parametrize("tool", ["chatty", "sleepy"])
async def test_a_client_that_gives_up_while_the_server_works_abandoned_it(tmp_path: Path, tool: str) -> None:
    """Handshake era, stateful SSE server: a client gives up on a tools/call and closes its
    response stream (no notifications/cancelled). While the server was still sending progress
    on it (``chatty``) the request was abandoned by the client (http.client_abandoned_request),
    not unanswered by the server (was jsonrpc.unanswered_request and
    sse.stream_closed_without_response "(the client closed it)", errors blamed on the
    server). A stream the server left idle (``sleepy``) stays the server's possible hang."""
    cap = tmp_path / "cap.jsonl"
    args = {"steps": 100} if tool == "chatty" else {"seconds": 5}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args, "_meta": {"progressToken": 7}}}
    async with cut_server("streamable-http") as base, tapped(base + "/mcp", cap) as (url, _tap):
        authority = url.split("//")[1].split("/")[0]
        hdrs, _ = await read_some_then_close(url, _post(authority, "/mcp", INIT_25, []), 1, b"\n\n")
        sid = next(v.decode() for k, v in hdrs if k.lower() == b"mcp-session-id")
        more = [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-06-18")]
        await read_some_then_close(url, _post(authority, "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, more), 0)
        if tool == "chatty":
            _, got = await read_some_then_close(url, _post(authority, "/mcp", call, more), 1, b'"progress":3')
            assert b"notifications/progress" in got
        else:
            with trio.move_on_after(0.5):
                await read_some_then_close(url, _post(authority, "/mcp", call, more), 1 << 20)
        await trio.sleep(0.3)
    live, full = findings_live_and_full(cap)
    assert live == full
    codes = {f[3] for f in live}
    gone = [f for f in live if f[3] == "http.client_abandoned_request"]
    if tool == "chatty":
        assert not codes & {"jsonrpc.unanswered_request", "sse.stream_closed_without_response"}, live
        assert len(gone) == 1 and gone[0][4] == "warn" and "tools/call id=2" in gone[0][5] and "still sending" in gone[0][5], live
    else:
        assert not gone and "sse.stream_closed_without_response" in codes, live
