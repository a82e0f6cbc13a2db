"""Replay over Streamable HTTP does what the SDK clients do with a stream or a
connection the server ends (replay/http_resume.py, replay/http_conn.py ``stale``,
HttpLink's retry).

* 2025-11-25 polling (SEP-1699) with the SDK's own server (tests/e2e/sdk_server.py
  ``--poll``): the tool ends its response stream after the priming event (id,
  ``retry``); the recorded SDK client resumed with GET + Last-Event-ID. Replay read
  the ended stream as the end of it: MISSING "no answer within 30 s". It now resumes.
* A kept-alive connection the server closed while it sat idle (uvicorn after 5 s) was
  reused: the request written into it was lost, "connection failed:
  BrokenResourceError" (ERROR-CHANGED). An idle connection is now checked before
  reuse, and a request whose reused connection ends before any response byte (the
  server closed it as the request arrived) is sent again once on a new one.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import h11
import pytest
import trio
from mcp import Client

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening
from replay.capgen import C2S, S2C, TOOLS, Tape
from replay.test_plan import handshake, req, res

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def _replay(cap: Path, url: str, out: Path) -> tuple[int, dict[str, Any], str]:
    p = await trio.run_process([*MCPTAP, "replay", str(cap), "--url", url, "-o", str(out), "--allow-side-effects", "--timeout", "10",
                                "--format", "json"], capture_stdout=True, capture_stderr=True, check=False)
    return p.returncode, json.loads(p.stdout), p.stderr.decode(errors="replace")


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {e["label"]: e["status"] + (f" {e.get('note', '')}" if e["status"] != "MATCH" else "") for e in report["exchanges"]}


async def test_a_polling_session_is_replayed_by_resuming_the_stream(tmp_path: Path) -> None:
    cap, new = tmp_path / "cap.jsonl", tmp_path / "new.jsonl"
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "streamable-http", "--poll"], port):
        upstream = f"http://127.0.0.1:{port}/mcp"
        rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec, say=print).serve)
            async with Client(url, mode="legacy") as client:
                assert (await client.call_tool("poll", {})).content[0].text == "polled"   # type: ignore[union-attr]
                assert (await client.call_tool("echo", {"text": "after"})).content[0].text == "after"   # type: ignore[union-attr]
            nursery.cancel_scope.cancel()
        rec.close()
        recorded = [r for r in read_capture(str(cap)).records if r["type"] == "http" and r["event"] == "request"
                    and any(k.lower() == "last-event-id" for k, _ in r["headers"])]
        assert recorded, "the SDK client did not resume: the scenario tests nothing"
        with trio.fail_after(60):
            code, report, err = await _replay(cap, upstream, new)
    statuses = _statuses(report)
    assert code == 0, (statuses, err)
    assert statuses["tools/call poll"] == statuses["tools/call echo"] == "MATCH"
    http = [r for r in read_capture(str(new)).records if r["type"] == "http"]
    resumed = [r for r in http if r["event"] == "request" and r["method"] == "GET"
               and any(k.lower() == "last-event-id" and v for k, v in r["headers"])]
    assert resumed
    answer = next(r for r in read_capture(str(new)).records if r["type"] == "message" and r.get("kind") == "response"
                  and isinstance(r.get("json"), dict) and r["json"].get("result", {}).get("structuredContent") == {"result": "polled"})
    assert answer["transport"]["method"] == "GET" and answer.get("pair")
    # the new capture is judged as the tap's: the HTTP layer re-judged from its http records (the priming
    # event's id as an sse record, each request's session, the DELETE's MCP-Protocol-Version) finds nothing
    p = await trio.run_process([*MCPTAP, "check", "--full", "--format", "json", str(new)], capture_stdout=True, check=False)
    judged = json.loads(p.stdout)["captures"][0]
    assert {c["code"] for c in judged["codes"] if c["severity"] in ("error", "warn")} == set()
    assert "sse.stream_closed_without_response" in {c["code"] for c in judged["codes"]}     # info: resumable


class KeepAliveServer:
    """A minimal Streamable HTTP server (JSON responses) that keeps each connection
    alive (``Connection: keep-alive``) with, ``idle_timeout``: a keep-alive timeout of
    ``IDLE`` s (uvicorn's is 5 s), a connection idle longer is closed; or
    ``drop_second``: it reads a connection's second request and closes it without an
    answer (the timeout fell as the request arrived). ``tools/call`` with ``a: 100``
    answers after ``SLOW`` s."""

    IDLE, SLOW = 0.1, 0.6

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.connections = 0
        self.answered: list[str] = []

    async def _read(self, stream: trio.SocketStream, conn: h11.Connection, served: int) -> bytes | None:
        """The next request's body (None: the connection ends)."""
        body = b""
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                idle = self.mode == "idle_timeout" and served and conn.their_state is h11.IDLE
                with trio.move_on_after(self.IDLE if idle else 60):
                    data = await stream.receive_some(65536)
                    if not data:
                        return None
                    conn.receive_data(data)
                    continue
                return None                 # idle past the keep-alive timeout: closed
            if isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                return body

    async def handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        served = 0
        try:
            while (body := await self._read(stream, conn, served)) is not None:
                if self.mode == "drop_second" and served == 1:
                    return                  # read, never answered: the connection closes under it
                msg = json.loads(body) if body else {}         # (a DELETE ending the session has none)
                if "id" not in msg:
                    out, status = b"", 202
                else:
                    self.answered.append(msg["method"])
                    result: Any = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
                    if msg["method"] == "tools/list":
                        result = {"tools": TOOLS}
                    elif msg["method"] == "tools/call":
                        if msg["params"]["arguments"]["a"] == 100:
                            await trio.sleep(self.SLOW)
                        result = {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False}
                    out, status = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode(), 200
                heads = [("Content-Type", "application/json"), ("Content-Length", str(len(out))), ("Connection", "keep-alive"),
                         ("Mcp-Session-Id", "s1")]
                await stream.send_all(conn.send(h11.Response(status_code=status, headers=heads)) + conn.send(h11.Data(data=out))
                                      + conn.send(h11.EndOfMessage()))
                served += 1
                conn.start_next_cycle()
        except (trio.BrokenResourceError, h11.ProtocolError):
            return
        finally:
            await stream.aclose()


def _session(path: Path) -> None:
    """A slow call and a quick one in flight together (two connections: the quick one's
    then sits idle past the keep-alive timeout), then two more together (both reused)."""
    t = Tape(str(path))
    handshake(t, TOOLS)
    answer = {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False}
    for first in (10, 12):
        t.send(C2S, req(first, "tools/call", {"name": "add", "arguments": {"a": 100, "b": 2}}))
        t.send(C2S, req(first + 1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
        t.send(S2C, res(first + 1, answer))
        t.send(S2C, res(first, answer))
    t.close()


@pytest.mark.parametrize("mode", ["idle_timeout", "drop_second"])
async def test_a_closed_keep_alive_connection_costs_no_request(tmp_path: Path, mode: str) -> None:
    cap, new = tmp_path / "cap.jsonl", tmp_path / "new.jsonl"
    _session(cap)
    server = KeepAliveServer(mode)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(60):
            code, report, err = await _replay(cap, f"http://127.0.0.1:{port}/mcp", new)
        nursery.cancel_scope.cancel()
    statuses = _statuses(report)
    assert code == 0, (statuses, report.get("new_errors"), err)
    assert set(statuses.values()) == {"MATCH"}, statuses
    assert server.answered == ["initialize", "tools/list"] + ["tools/call"] * 4   # each once
    ends = [r for r in read_capture(str(new)).records if r["type"] == "http" and r.get("how") == "upstream_closed"]
    if mode == "drop_second":
        # recorded as it happened: each lost attempt ends upstream_closed on its reused connection
        assert ends
    else:
        # a connection the server had closed while idle is not reused: no request is written into it
        assert ends == []
