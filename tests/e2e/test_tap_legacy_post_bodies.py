"""Legacy HTTP+SSE (2024-11-05): the body of a POST's response is no message of the session.

The transport carries every server message on the SSE stream; the POST to the endpoint gets an
acknowledgement (the official SDK's ``202 Accepted``). The tap used to drop a JSON body the server
sent there (a POST to an announced endpoint: neither framed nor kept) or to frame it as a JSON-RPC
message (a POST to the endpoint's path with a session the server never announced, taken for a
Streamable HTTP POST: ``jsonrpc.unmatched_response``, ``http.post_accept_incomplete``). Now it is a
``response_body`` record, and a JSON-RPC message there (a server answering on the POST, as a
Streamable HTTP one would) is ``http.legacy_post_body_message``; ``check --full`` judges the
capture the same. No real legacy server answers so on demand: the upstream is h11.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h11
import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import trio

from h11_upstream import answer, requests
from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig

ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'
STALE = b'{"error":"unknown session"}'


async def _upstream(stream: trio.SocketStream) -> None:
    """GET /sse: the endpoint event, then held open; POST: 202 with a JSON-RPC answer in the body for the
    announced session, 404 with a JSON error object for any other."""
    conn = h11.Connection(h11.SERVER)
    try:
        async for req, _ in requests(stream, conn):
            if req.method == b"GET":
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])))
                await stream.send_all(conn.send(h11.Data(data=b"event: endpoint\ndata: /messages/?session_id=abc\n\n")))
                await trio.sleep_forever()
            status, out = (202, ANSWER) if req.target.endswith(b"session_id=abc") else (404, STALE)
            await stream.send_all(answer(conn, status, [("Content-Type", "application/json"), ("Content-Length", str(len(out)))], out))
    finally:
        await stream.aclose()


async def _client(url: str) -> list[Any]:
    base = url.rsplit("/sse", 1)[0]
    seen = []
    async with httpx.AsyncClient(timeout=30) as http, http.stream("GET", url, headers={"Accept": "text/event-stream"}) as r:
        async for chunk in r.aiter_bytes():
            assert b"endpoint" in chunk
            break
        for i, sid in enumerate(["abc", "stale"], start=1):
            p = await http.post(f"{base}/messages/?session_id={sid}", json={"jsonrpc": "2.0", "id": i, "method": "ping"})
            seen.append((p.status_code, p.content))
    return seen


async def test_a_legacy_posts_json_body_is_a_response_body_and_a_jsonrpc_one_a_finding(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": "u"}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        await nursery.start(trio.serve_listeners, _upstream, listeners)
        upstream = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/sse"
        url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream, keep_host=True), rec).serve)
        with trio.fail_after(30):
            live = await _client(url)
        nursery.cancel_scope.cancel()
    rec.close()
    assert live == [(202, ANSWER), (404, STALE)]
    records = read_capture(str(cap)).records
    assert [r for r in records if r.get("type") == "message" and r.get("dir") == "s2c"] == []
    assert [decode_bytes(r, "body") for r in records if r.get("event") == "response_body"] == [ANSWER, STALE]

    def codes(recs: Any) -> list[str]:
        return sorted(f["code"] for r in recs for f in r.get("findings", ()) if not f["code"].startswith("sse."))

    assert codes(records) == ["http.legacy_post_body_message", "http.legacy_post_not_found"], codes(records)
    stream = CaptureStream(str(cap))
    assert codes(reannotate(stream.header, stream, shapes=False, reuse=False)) == codes(records)       # check --full's
