"""End to end: the official MCP SDK (mcp 2.x) client and server over HTTP through
the real HTTP tap — Streamable HTTP in SSE and JSON-response modes, stateful and
stateless, both eras (initialize handshake and 2026-07-28), and the legacy
HTTP+SSE transport. The session must work unchanged; the capture must hold every
message, paired, with no error findings, and digests of what crossed the tap.
"""

from __future__ import annotations

import re
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from mcp import Client
from mcp.client.sse import sse_client

from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening
from sdk_scenario import EXPECTED, drive

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"



@asynccontextmanager
async def sdk_server(*args: str):
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), *args], port):
        yield f"http://127.0.0.1:{port}"


@asynccontextmanager
async def tapped(upstream: str, capture: Path):
    rec = Recorder(CaptureWriter.open(str(capture)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as nursery:
        tap = HttpTap(HttpTapConfig(upstream=upstream), rec, say=print)
        url = await nursery.start(tap.serve)
        yield url, tap
        nursery.cancel_scope.cancel()
    rec.close()


def check_capture(path: Path) -> tuple[list[dict], list[dict]]:
    cap = read_capture(str(path))
    assert cap.end is not None and not cap.truncated
    msgs = [r for r in cap.records if r["type"] == "message"]
    http = [r for r in cap.records if r["type"] == "http"]
    errors = [(r["seq"], f) for r in cap.records for f in r.get("findings", ()) if f["severity"] in ("error", "warn")]
    assert errors == [], f"clean SDK session produced error/warn findings: {errors}"
    # check --full (today's rules, HTTP layer re-judged from the http records) agrees
    stream = CaptureStream(str(path))
    again = [(r["seq"], f) for r in reannotate(stream.header, stream, shapes=False, reuse=False)
             for f in r.get("findings", ()) if isinstance(f, dict) and f["severity"] in ("error", "warn")]
    assert again == [], again
    reqs = {r["seq"] for r in msgs if r["kind"] == "request"}
    paired = {r["pair"] for r in msgs if r["kind"] in ("response", "error") and "pair" in r}
    # a request the server redirected is answered at HTTP level (and sent again where Location points)
    redirected = {s for r in http for f in r.get("findings", ()) if f["code"] == "http.redirected" for s in f["data"]["requests"]}
    assert reqs == paired | redirected, f"unpaired requests: {reqs - paired - redirected}"
    assert cap.end["pending"] == []
    assert cap.end["c2s"]["bytes"] > 0 and cap.end["s2c"]["bytes"] > 0
    # every HTTP exchange that started also ended, and none through a 502
    started = {r["exchange"] for r in http if r["event"] == "request"}
    ended = {r["exchange"] for r in http if r["event"] == "end"}
    assert started == ended
    assert not [r for r in http if r["event"] == "end" and r.get("sent_502")]
    return msgs, http


MODES = {
    "sse-legacy": (("streamable-http",), "legacy"),
    "sse-modern": (("streamable-http",), "auto"),
    "json-legacy": (("streamable-http", "--json"), "legacy"),
    "json-modern": (("streamable-http", "--json"), "auto"),
    "stateless-legacy": (("streamable-http", "--stateless"), "legacy"),
    "stateless-json-modern": (("streamable-http", "--stateless", "--json"), "auto"),
}


@pytest.mark.parametrize("name", MODES)
async def test_streamable_http_through_the_tap(name: str, tmp_path: Path) -> None:
    args, mode = MODES[name]
    cap = tmp_path / "cap.jsonl"
    async with sdk_server(*args) as base, tapped(base + "/mcp", cap) as (url, tap):
        async with Client(url, mode=mode) as client:
            got, progress = await drive(client)
    assert got == EXPECTED
    if "--json" not in args:
        assert progress == [1.0, 2.0, 3.0]
    msgs, http = check_capture(cap)
    if mode == "legacy":
        assert [r.get("method") for r in msgs if r["dir"] == "c2s"][:2] == ["initialize", "notifications/initialized"]
        sessions = {r.get("session") for r in msgs}
        if "--stateless" in args:
            assert sessions == {None}
        else:
            assert len(sessions) == 1 and None not in sessions, sessions
    else:
        assert msgs[0]["method"] == "server/discover"
        assert {r.get("rev") for r in msgs if r["kind"] == "request"} == {"2026-07-28"}


async def test_legacy_http_sse_through_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    async with sdk_server("sse") as base, tapped(base + "/sse", cap) as (url, tap):
        async with Client(sse_client(url), mode="legacy") as client:
            got, progress = await drive(client)
    assert got == EXPECTED
    assert progress == [1.0, 2.0, 3.0]
    msgs, http = check_capture(cap)
    ends = [r for r in http if r["event"] == "sse" and "endpoint" in r]
    assert len(ends) == 1
    key = msgs[0]["session"]
    assert key and {r.get("session") for r in msgs} == {key}
    # the SDK's session id authorises the POSTs: a credential, its placeholder everywhere (docs/redaction.md)
    assert key.startswith("«redacted:hmac:") and f"session_id={key}" in ends[0]["endpoint"]["data"]
    assert not re.search(r"session_id=[0-9a-f]{32}", cap.read_text())
    # POST acknowledgements of the legacy transport are not Streamable HTTP acks
    assert not [f for r in http for f in r.get("findings", ()) if f["code"].startswith("http.ack")]


async def test_a_polling_session_through_the_tap_has_no_false_error(tmp_path: Path) -> None:
    """2025-11-25 polling with the SDK's own server: the tool ends its response
    stream after the priming event, the SDK client resumes with Last-Event-ID
    and gets the answer there. The capture pairs it, and the ended stream is
    information, not the error it was (found by a breaker helper)."""
    cap = tmp_path / "cap.jsonl"
    async with sdk_server("streamable-http", "--poll") as base, tapped(base + "/mcp", cap) as (url, tap):
        async with Client(url, mode="legacy") as client:
            result = await client.call_tool("poll", {})
    assert result.content[0].text == "polled"   # type: ignore[union-attr]
    msgs, http = check_capture(cap)
    resumed = [r for r in http if r["event"] == "request" and any(k.lower() == "last-event-id" for k, _ in r["headers"])]
    assert resumed, "the client did not resume: the scenario tests nothing"
    ended = [f for r in http for f in r.get("findings", ()) if f["code"] == "sse.stream_closed_without_response"]
    assert ended and {f["severity"] for f in ended} == {"info"}


async def test_a_redirect_on_the_upstream_origin_keeps_the_client_on_the_tap(tmp_path: Path) -> None:
    """--upstream .../mcp/ (trailing slash) for an SDK server at /mcp: the server
    answers 307 to http://upstream/mcp. The tap points that Location at itself,
    so the SDK client (which refuses a cross-origin redirect) follows it through
    the tap; each redirected POST is http.redirected (info), not unanswered."""
    cap = tmp_path / "cap.jsonl"
    async with sdk_server("streamable-http") as base, tapped(base + "/mcp/", cap) as (url, tap):
        async with Client(url, mode="legacy") as client:
            got, _ = await drive(client)
    assert got == EXPECTED
    msgs, http = check_capture(cap)
    rewrites = [r for r in http if r["event"] == "auth_rewrite" and r["what"] == "location"]
    assert rewrites and all(r["original"] == base + "/mcp" and r["rewritten"] == url.removesuffix("/") for r in rewrites)
    redirected = [f for r in http for f in r.get("findings", ()) if f["code"] == "http.redirected"]
    assert redirected and {f["data"]["location"] for f in redirected} == {base + "/mcp"}
    assert all(f"given to the client as {url.removesuffix('/')!r}" in f["message"] for f in redirected)
    # check --full gives exactly the live findings, the Location the client was given included
    stream = CaptureStream(str(cap))
    again = list(reannotate(stream.header, stream, shapes=False, reuse=False))
    live = read_capture(str(cap)).records
    assert [(r.get("seq"), r.get("findings")) for r in again if r["type"] != "end"] == \
        [(r.get("seq"), r.get("findings")) for r in live if r["type"] != "end"]
