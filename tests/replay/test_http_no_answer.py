"""Replay over Streamable HTTP: a 2xx response that ends without the answer to its
request (a JSON body that answers nothing: ``{}``, another id, a notification, an
array; an empty body; a ``202``, which is for notifications and responses only; an
event stream that ends without it, resumed or not; a body of another type) is said
at once, MISSING with what came instead; a redirect (replay does not follow it) at
once as its status, as an HTTP error is. Before, each waited out the whole --timeout
and read "no answer within S s". Raw servers: the SDK servers give none of these on
demand but the 202 (tests/e2e/test_replay_unanswered_http.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.capgen import C2S, S2C, Tape
from replay.raw_http import replay_raw, response
from replay.test_plan import handshake, req, res

INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
OTHER = b'{"jsonrpc":"2.0","id":99,"result":{}}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}'


def _sse(*events: bytes) -> bytes:
    body = b"".join(events)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s1\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
            % len(body) + body)


CASES: list[tuple[str, bytes, str]] = [
    ("empty object", response(200, "application/json", b"{}"), "HTTP 200 application/json without the answer: {}"),
    ("another id", response(200, "application/json", OTHER), 'without the answer: {"jsonrpc":"2.0","id":99'),
    ("a notification", response(200, "application/json", NOTE), "without the answer: " + NOTE.decode()[:40]),
    ("an empty array", response(200, "application/json", b"[]"), "HTTP 200 application/json without the answer: []"),
    ("an array of another id", response(200, "application/json", b"[" + OTHER + b"]"), "without the answer: [{"),
    ("an empty 200", response(200, "application/json", b""), "HTTP 200 with an empty body, not the answer"),
    ("a 202", response(202, None, b"", "Accepted"), "HTTP 202 with an empty body, not the answer"),
    ("a 204", response(204, None, b"", "No Content").replace(b"Content-Length: 0\r\n", b""), "HTTP 204 with an empty body"),
    ("html", response(200, "text/html", b"<html>\n<p>maintenance</p>"), "HTTP 200 text/html without the answer: <html> <p>maintenance"),
    ("an event stream without it", _sse(b"event: message\ndata: " + NOTE + b"\n\n"),
     "HTTP 200 event stream ended without the answer (1 other message)"),
    ("an empty event stream", _sse(), "HTTP 200 event stream ended without the answer"),
    # an event id: resumed with GET + Last-Event-ID (refused 405 here), then given up
    ("a resumed stream without it", _sse(b"id: e1\nretry: 10\ndata:\n\n"),
     "HTTP 200 event stream ended without the answer; resuming it (GET with Last-Event-ID) brought no answer"),
]


def _capture(tmp_path: Path) -> str:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "ping"))
    t.send(S2C, res(2, {}))
    t.close()
    return path


def _server(answer: bytes) -> Any:
    def respond(method: str, body: bytes) -> bytes:
        if method != "POST":
            return response(405, "text/plain", b"Method Not Allowed")
        msg = json.loads(body)
        if "id" not in msg:
            return response(202, None, b"", "Accepted")
        if msg["method"] == "ping":
            return answer
        result = INIT if msg["method"] == "initialize" else {"tools": []}
        return response(200, "application/json", json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()) \
            .replace(b"Connection: close", b"Mcp-Session-Id: s1\r\nConnection: close")
    return respond


@pytest.mark.parametrize(("answer", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_a_2xx_without_the_answer_is_said_at_once(tmp_path: Path, answer: bytes, said: str) -> None:
    plan, result = await replay_raw(tmp_path, _capture(tmp_path), _server(answer))
    ping = next(s for s in plan.steps if s.method == "ping")
    assert result.live[ping.index].response is None
    note = result.notes[ping.index]
    assert said in note, note
    tools = next(s for s in plan.steps if s.method == "tools/list")
    assert result.live[tools.index].response is not None        # (answered as usual)


async def test_a_redirect_is_said_at_once_as_its_status(tmp_path: Path) -> None:
    moved = response(307, "text/plain", b"moved").replace(b"Connection: close", b"Location: /elsewhere\r\nConnection: close")
    plan, result = await replay_raw(tmp_path, _capture(tmp_path), _server(moved))
    ping = next(s for s in plan.steps if s.method == "ping")
    err = result.live[ping.index].response["error"]
    assert err["code"] == 307 and err["message"] == "HTTP 307 without a JSON-RPC body: moved", err
