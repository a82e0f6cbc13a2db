"""The legacy HTTP+SSE replay link (replay/sse_link.py) against a small h11
server in the same trio run, one behaviour at a time: a normal session, an
endpoint on another origin, no endpoint event, a POST refused, a stream the
server ends before answering."""

from __future__ import annotations

import json
import ssl
import sys
from pathlib import Path
from typing import Any

import h11
import pytest
import trio

from h11_upstream import answer, requests
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.redact import placeholder
from mcptap.replay.compare import compare_replay
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer
from mcptap.replay.sse_link import REOPEN_FAILURES, REOPEN_NOTE, SseLink
from replay.capgen import C2S, S2C, TOOLS, Tape
from replay.test_plan import handshake, req, res

sys.path.insert(0, str(Path(__file__).parents[1] / "transport"))
from test_http_tap import _make_cert, upstream_server

#: a GitHub token's shape (a built-in redaction rule)
TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "x9Y8z7"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}


class LegacyServer:
    """GET /sse: an event stream whose endpoint event names /messages/?session_id=s1
    (``mode`` "foreign": another origin; "silent": no endpoint event); POSTs are
    202, their answers go on the stream ("post404": POSTs are 404; "ends": the
    stream ends at each POST after initialize, unanswered; "ends_once": at the
    first only, and a GET opens it again; "ends_gone": at the first, and a GET
    again is 404; "drop": the first tools/list POST
    closes its connection unanswered, as a server whose keep-alive timeout
    fires as the request arrives)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.out, self.into_stream = trio.open_memory_channel[Any](100)
        self.gets = self.dropped = self.ended = 0

    async def __call__(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        async for head, body in requests(stream, conn):
            if head.method == b"GET":
                self.host = dict(head.headers).get(b"host", b"").decode()
                self.gets += 1
                if self.mode == "ends_gone" and self.gets > 1:
                    await stream.send_all(answer(conn, 404, [("Content-Length", "0")]))
                    return
                await self._stream(conn, stream)
                return
            msg = json.loads(body)
            if self.mode == "drop" and msg.get("method") == "tools/list" and not self.dropped:
                self.dropped += 1
                return                      # (the connection is closed as the handler returns)
            await self._post(conn, stream, msg)

    async def _stream(self, conn: h11.Connection, stream: trio.abc.Stream) -> None:
        head = h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])
        await stream.send_all(conn.send(head))
        if self.mode == "silent":
            await trio.sleep_forever()
        where = "http://127.0.0.2:9/messages/?session_id=s1" if self.mode == "foreign" else \
            f"http://127.0.0.2:9/u/{TOKEN}/messages/" if self.mode == "foreign_token" else \
            f"https://{self.host}/messages/?session_id=s1" if self.mode == "absolute" else "/messages/?session_id=s1"
        await stream.send_all(conn.send(h11.Data(data=f"event: endpoint\ndata: {where}\n\n".encode())))
        async for msg in self.into_stream:
            if msg is None:
                await stream.send_all(conn.send(h11.EndOfMessage()))
                return
            await stream.send_all(conn.send(h11.Data(data=b"event: message\ndata: " + json.dumps(msg).encode() + b"\n\n")))

    async def _post(self, conn: h11.Connection, stream: trio.abc.Stream, msg: dict[str, Any]) -> None:
        status = 404 if self.mode == "post404" else 202
        text = b"Not Found" if status == 404 else b"Accepted"
        await stream.send_all(answer(conn, status, [("Content-Length", str(len(text)))], text))
        if status != 202 or "id" not in msg:
            return
        if msg["method"] == "initialize":
            await self.out.send({"jsonrpc": "2.0", "id": msg["id"], "result": INIT})
        elif self.mode in ("ends", "ends_gone") or (self.mode == "ends_once" and not self.ended):
            self.ended += 1
            await self.out.send(None)
        else:
            await self.out.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": TOOLS}})


async def _replay(tmp_path: Path, mode: str, tls: tuple[Path, Path] | None = None, lists: int = 1) -> tuple[list[tuple[str, str, str | None]], dict[str, Any]]:
    """Replay a handshake and a tools/list (``lists`` of them) against ``LegacyServer(mode)``;
    ``tls``: (key, certificate) to serve https with (the link trusts the certificate)."""
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    for i in range(2, lists + 1):
        t.send(C2S, req(i, "tools/list"))
        t.send(S2C, res(i, {"tools": TOOLS}))
    t.close()
    plan = plan_from_path(path)
    out = str(tmp_path / "new.jsonl")
    ctx = None
    if tls is not None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(tls[1]), str(tls[0]))
    async with upstream_server(LegacyServer(mode), ssl_context=ctx) as port:
        url = f"{'https' if tls else 'http'}://127.0.0.1:{port}/sse"
        rec = Recorder(CaptureWriter.open(out), "http", {"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())
        link = SseLink(url, rec, endpoint_timeout=0.5, cacert=str(tls[1]) if tls else None)
        result = await Replayer(plan, link, timeout=2).run()
        rec.close()
    rows = compare_replay(plan, result.live, result.server_requests, result.notes)
    return [(r.label, r.status, r.note) for r in rows], {"records": read_capture(out).records, "link": link, "result": result}


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
    # a token in the endpoint's path is quoted as its placeholder (replay/peer_text.py), as everywhere replay quotes the server
    # (the note quotes the error's first 80 characters)
    ("foreign_token", f"error 0 '{f'endpoint on another origin, not followed: http://127.0.0.2:9/u/{placeholder(TOKEN)}/messages/'[:80]}…'"),
    ("silent", "error 0 'no endpoint event on the HTTP+SSE stream within 0.5 s'"),
    ("post404", "error 404 'HTTP 404 from the legacy HTTP+SSE endpoint'"),
])
async def test_no_endpoint_or_a_refused_post_fails_the_handshake(tmp_path: Path, mode: str, why: str) -> None:
    rows, cap = await _replay(tmp_path, mode)
    assert rows == [("initialize", "ERROR-CHANGED", None), ("tools/list", "MISSING", f"not sent: initialize failed ({why})")], rows
    (init,) = [lv.response for lv in cap["result"].live.values() if lv.response is not None]
    assert TOKEN not in init["error"]["message"], init        # (the initialize row shows it)
    posts = [r for r in cap["records"] if r.get("type") == "http" and r.get("event") == "request" and r["method"] == "POST"]
    assert len(posts) == (1 if mode == "post404" else 0)
    codes = [f["code"] for r in cap["records"] for f in r.get("findings", ())]
    assert ("http.legacy_post_not_found" in codes) == (mode == "post404"), codes


async def test_a_stream_the_server_ends_is_opened_again_and_what_it_owed_is_missing(tmp_path: Path) -> None:
    """The server ends the event stream mid-replay: the link opens it again (a
    new GET, a new endpoint event) and sends the next requests there; what the
    ended stream still owed is MISSING with why (no resumption in the legacy
    transport). It used to close the link: nothing more was sent."""
    rows, cap = await _replay(tmp_path, "ends_once", lists=2)
    assert rows == [("initialize", "MATCH", None), ("tools/list", "MISSING", REOPEN_NOTE), ("tools/list", "MATCH", None)], rows
    records = cap["records"]
    gets = [r["exchange"] for r in records if r.get("type") == "http" and r.get("event") == "request" and r["method"] == "GET"]
    assert len(gets) == 2
    ends = {r["exchange"]: r["how"] for r in records if r.get("type") == "http" and r.get("event") == "end"}
    assert [ends[g] for g in gets] == ["complete", "client_closed"]     # the server ended the first; replay closed the second
    assert len([r for r in records if r.get("type") == "http" and "endpoint" in r]) == 2


async def test_a_stream_the_server_keeps_ending_is_given_up(tmp_path: Path) -> None:
    """A server that ends every stream it is asked for: opened again until
    REOPEN_FAILURES streams in a row bring no message, then the link is closed."""
    rows, cap = await _replay(tmp_path, "ends", lists=3)
    assert rows[:2] == [("initialize", "MATCH", None), ("tools/list", "MISSING", REOPEN_NOTE)], rows
    assert all(status == "MISSING" for _, status, _ in rows[1:]), rows
    gets = [r for r in cap["records"] if r.get("type") == "http" and r.get("event") == "request" and r["method"] == "GET"]
    assert len(gets) == 1 + REOPEN_FAILURES


async def test_a_stream_that_cannot_be_opened_again_closes_the_link(tmp_path: Path) -> None:
    """The GET that would open the ended stream again is refused: the link is
    closed (the request waiting for its endpoint is unanswered; nothing more is sent)."""
    rows, cap = await _replay(tmp_path, "ends_gone", lists=3)
    assert rows == [("initialize", "MATCH", None), ("tools/list", "MISSING", REOPEN_NOTE),
                    ("tools/list", "MISSING", "the server closed the connection before answering"),
                    ("tools/list", "MISSING", "not sent: the server had closed the connection")], rows
    posts = [r for r in cap["records"] if r.get("type") == "http" and r.get("event") == "request" and r["method"] == "POST"]
    assert len(posts) == 3                  # initialize, initialized, the first tools/list


async def test_a_post_lost_on_a_closed_kept_alive_connection_is_sent_again(tmp_path: Path) -> None:
    """The server closes a kept-alive connection as a POST arrives (no response
    byte): the POST is sent again once on a new connection, as the Streamable
    HTTP link does; the lost attempt is recorded as the tap records it. The
    request used to be ERROR-CHANGED (connection failed)."""
    rows, cap = await _replay(tmp_path, "drop")
    assert rows == [("initialize", "MATCH", None), ("tools/list", "MATCH", None)], rows
    assert cap["link"].retried == 1
    records = cap["records"]
    posts = [r["exchange"] for r in records if r.get("type") == "http" and r.get("event") == "request" and r["method"] == "POST"]
    assert len(posts) == 4                  # initialize, initialized, tools/list lost, tools/list again
    (lost,) = [r for r in records if r.get("type") == "http" and r.get("event") == "end" and r["exchange"] == posts[2]]
    assert lost["how"] == "upstream_closed" and [f["code"] for f in lost["findings"]] == ["http.request_lost_on_closed_connection"]
    codes = [f["code"] for r in records for f in r.get("findings", ())]
    assert "jsonrpc.duplicate_id_in_flight" not in codes, codes      # (the lost one was answered by the transport)


async def test_a_refused_post_of_a_1e400_id_is_its_request_s_error(tmp_path: Path) -> None:
    """A request recorded with id 1e400 (sent verbatim) whose POST the server
    refuses: the link's synthetic HTTP error carries that id back; it used to
    be keyed as another id, so the request waited out the timeout instead."""
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    t.send(C2S, b'{"jsonrpc":"2.0","id":1e400,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n')
    t.send(S2C, b'{"jsonrpc":"2.0","id":1e400,"result":' + json.dumps(INIT).encode() + b'}\n')
    t.close()
    plan = plan_from_path(path)
    async with upstream_server(LegacyServer("post404")) as port:
        url = f"http://127.0.0.1:{port}/sse"
        rec = Recorder(CaptureWriter.open(str(tmp_path / "new.jsonl")), "http", {"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())
        result = await Replayer(plan, SseLink(url, rec, endpoint_timeout=2), timeout=5).run()
        rec.close()
    rows = compare_replay(plan, result.live, result.server_requests, result.notes)
    assert [(r.label, r.status, r.note) for r in rows] == [("initialize", "ERROR-CHANGED", None)]
    assert result.live[0].response["error"]["code"] == 404 and result.duration_s < 4


@pytest.mark.parametrize("mode", ["ok", "absolute"])
async def test_a_session_over_https_keeps_its_key(tmp_path: Path, mode: str) -> None:
    """A legacy server reached over https: the endpoint it announces (relative,
    or absolute on its own https origin) is resolved against the https stream
    URL and keys the session. The replay's observer took the client side to be
    plain http (as the tap's is), so an absolute https endpoint was judged
    another origin (sse.endpoint_foreign_origin) and its session lost, and a
    relative one was recorded as resolving to http://."""
    rows, cap = await _replay(tmp_path, mode, tls=_make_cert(tmp_path))
    assert [(label, status) for label, status, _ in rows] == [("initialize", "MATCH"), ("tools/list", "MATCH")]
    records = cap["records"]
    (endpoint,) = [r for r in records if r.get("type") == "http" and "endpoint" in r]
    sid = placeholder("s1")             # a legacy session id is a credential, recorded as the tap records it
    assert endpoint["session"] == sid and endpoint["endpoint"]["resolved"].startswith("https://127.0.0.1:")
    assert [f["code"] for f in endpoint["findings"]] == ["sse.endpoint_event"]
    msgs = [r for r in records if r.get("type") == "message"]
    assert [m["session"] for m in msgs] == [sid] * 5


async def test_each_stream_message_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link parsed each message of the event stream to hand it on, after
    the tap's observer had parsed the same bytes to record them; it now hands
    on the observer's parse."""
    import orjson

    plain, parsed = orjson.loads, []

    def counting(data: Any) -> Any:
        if isinstance(data, bytes) and b'"result": {"tools"' in data:      # (the live server's spacing: the capture's is orjson's)
            parsed.append(data)
        return plain(data)

    monkeypatch.setattr(orjson, "loads", counting)
    rows, cap = await _replay(tmp_path, "ok")
    assert [(label, status) for label, status, _ in rows] == [("initialize", "MATCH"), ("tools/list", "MATCH")]
    assert len(parsed) == 1, parsed


async def test_a_reopened_stream_is_a_new_session_and_is_initialised_again(tmp_path: Path) -> None:
    """The official SDK's legacy server (mcp.server.sse): the first stream ends
    when the first tools/list arrives. The GET that opens it again gets a new
    endpoint, which the SDK serves with a new session that refuses requests
    until it is initialised (-32602): the link gives it the recorded handshake
    again (its initialize under an id of its own, answered on the stream and
    recorded, not the runner's; then initialized), so the next tools/list is
    answered. Before, it was sent to the uninitialised session: ERROR-CHANGED."""
    from peers import free_port, listening

    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t, tools=[])
    t.send(C2S, req(2, "tools/list"))
    t.send(S2C, res(2, {"tools": []}))
    t.close()
    plan = plan_from_path(path)
    out = str(tmp_path / "new.jsonl")
    port = free_port()
    async with listening([sys.executable, str(Path(__file__).parent / "sse_hangup_server.py"), str(port)], port):
        url = f"http://127.0.0.1:{port}/sse"
        rec = Recorder(CaptureWriter.open(out), "http", {"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())
        result = await Replayer(plan, SseLink(url, rec, endpoint_timeout=10), timeout=10).run()
        rec.close()
    rows = [(r.label, r.status, r.note) for r in compare_replay(plan, result.live, result.server_requests, result.notes)]
    assert rows[1:] == [("tools/list", "MISSING", REOPEN_NOTE), ("tools/list", "MATCH", None)], rows
    records = read_capture(out).records
    endpoints = [r["session"] for r in records if r.get("type") == "http" and "endpoint" in r]
    assert len(endpoints) == 2 and endpoints[0] != endpoints[1]           # two sessions on the server
    second = [(r["dir"], r.get("method"), r["json"].get("id")) for r in records if r.get("type") == "message" and r["session"] == endpoints[1]]
    assert second == [("c2s", "initialize", "mcptap-replay-initialize-1"), ("s2c", None, "mcptap-replay-initialize-1"),
                      ("c2s", "notifications/initialized", None), ("c2s", "tools/list", 2), ("s2c", None, 2)], second
    assert not [f for r in records for f in r.get("findings", ()) if f["severity"] == "error"]
