"""The legacy HTTP+SSE replay link (replay/sse_link.py) against a small h11
server in the same trio run, one behaviour at a time: a normal session, an
endpoint on another origin, no endpoint event, a POST refused, a stream the
server ends before answering."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import h11
import pytest
import trio

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.redact import placeholder
from mcptap.replay.compare import compare_replay
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer
from mcptap.replay.sse_link import SseLink
from replay.capgen import TOOLS, Tape
from replay.test_plan import handshake

sys.path.insert(0, str(Path(__file__).parents[1] / "transport"))
from test_http_tap import upstream_server

INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}


class LegacyServer:
    """GET /sse: an event stream whose endpoint event names /messages/?session_id=s1
    (``mode`` "foreign": another origin; "silent": no endpoint event); POSTs are
    202, their answers go on the stream ("post404": POSTs are 404; "ends": the
    stream ends at the first POST after initialize, unanswered)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.out, self.into_stream = trio.open_memory_channel[Any](100)

    async def __call__(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        req, body = None, b""
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
                continue
            if isinstance(ev, h11.Request):
                req, body = ev, b""
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                assert req is not None
                if req.method == b"GET":
                    await self._stream(conn, stream)
                    return
                await self._post(conn, stream, json.loads(body))
                conn.start_next_cycle()

    async def _stream(self, conn: h11.Connection, stream: trio.abc.Stream) -> None:
        head = h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])
        await stream.send_all(conn.send(head))
        if self.mode == "silent":
            await trio.sleep_forever()
        where = "http://127.0.0.2:9/messages/?session_id=s1" if self.mode == "foreign" else "/messages/?session_id=s1"
        await stream.send_all(conn.send(h11.Data(data=f"event: endpoint\ndata: {where}\n\n".encode())))
        async for msg in self.into_stream:
            if msg is None:
                await stream.send_all(conn.send(h11.EndOfMessage()))
                return
            await stream.send_all(conn.send(h11.Data(data=b"event: message\ndata: " + json.dumps(msg).encode() + b"\n\n")))

    async def _post(self, conn: h11.Connection, stream: trio.abc.Stream, msg: dict[str, Any]) -> None:
        status = 404 if self.mode == "post404" else 202
        text = b"Not Found" if status == 404 else b"Accepted"
        await stream.send_all(conn.send(h11.Response(status_code=status, headers=[("Content-Length", str(len(text)))]))
                              + conn.send(h11.Data(data=text)) + conn.send(h11.EndOfMessage()))
        if status != 202 or "id" not in msg:
            return
        if msg["method"] == "initialize":
            await self.out.send({"jsonrpc": "2.0", "id": msg["id"], "result": INIT})
        elif self.mode == "ends":
            await self.out.send(None)
        else:
            await self.out.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": TOOLS}})


async def _replay(tmp_path: Path, mode: str) -> tuple[list[tuple[str, str, str | None]], dict[str, Any]]:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.close()
    plan = plan_from_path(path)
    out = str(tmp_path / "new.jsonl")
    async with upstream_server(LegacyServer(mode)) as port:
        url = f"http://127.0.0.1:{port}/sse"
        rec = Recorder(CaptureWriter.open(out), "http", {"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())
        result = await Replayer(plan, SseLink(url, rec, endpoint_timeout=0.5), timeout=2).run()
        rec.close()
    rows = compare_replay(plan, result.live, result.server_requests, result.notes)
    return [(r.label, r.status, r.note) for r in rows], {"records": read_capture(out).records}


async def test_a_session_goes_over_the_stream_and_its_endpoint(tmp_path: Path) -> None:
    rows, cap = await _replay(tmp_path, "ok")
    assert [(label, status) for label, status, _ in rows] == [("initialize", "MATCH"), ("tools/list", "MATCH")]
    records = cap["records"]
    (endpoint,) = [r for r in records if r.get("type") == "http" and "endpoint" in r]
    sid = placeholder("s1")             # a legacy session id is a credential, recorded as the tap records it
    assert endpoint["session"] == sid
    msgs = [r for r in records if r.get("type") == "message"]
    assert [(m["dir"], m.get("method"), m["session"], m["transport"]["stream"]) for m in msgs] == [
        ("c2s", "initialize", sid, "post"), ("s2c", None, sid, "get"), ("c2s", "notifications/initialized", sid, "post"),
        ("c2s", "tools/list", sid, "post"), ("s2c", None, sid, "get")]
    ends = [r for r in records if r.get("type") == "http" and r.get("event") == "end"]
    assert [r["how"] for r in ends] == ["complete"] * 3 + ["client_closed"]      # three POSTs, then replay closed the stream


@pytest.mark.parametrize(("mode", "why"), [
    ("foreign", "error 0 'endpoint on another origin, not followed: http://127.0.0.2:9/messages/'"),
    ("silent", "error 0 'no endpoint event on the HTTP+SSE stream within 0.5 s'"),
    ("post404", "error 404 'HTTP 404 from the legacy HTTP+SSE endpoint'"),
])
async def test_no_endpoint_or_a_refused_post_fails_the_handshake(tmp_path: Path, mode: str, why: str) -> None:
    rows, cap = await _replay(tmp_path, mode)
    assert rows == [("initialize", "ERROR-CHANGED", None), ("tools/list", "MISSING", f"not sent: initialize failed ({why})")], rows
    posts = [r for r in cap["records"] if r.get("type") == "http" and r.get("event") == "request" and r["method"] == "POST"]
    assert len(posts) == (1 if mode == "post404" else 0)
    codes = [f["code"] for r in cap["records"] for f in r.get("findings", ())]
    assert ("http.legacy_post_not_found" in codes) == (mode == "post404"), codes


async def test_a_stream_the_server_ends_leaves_what_it_owed_missing(tmp_path: Path) -> None:
    rows, cap = await _replay(tmp_path, "ends")
    assert rows == [("initialize", "MATCH", None), ("tools/list", "MISSING", "the server closed the connection before answering")], rows
    get_end = [r for r in cap["records"] if r.get("type") == "http" and r.get("event") == "end" and r["exchange"] == 1]
    assert [r["how"] for r in get_end] == ["complete"]
