"""Replay over HTTP: an HTTP error that answers no request is reported at once
as ``error <status>`` quoting its body, whatever the body is. A JSON object that
is no JSON-RPC answer (429 ``{"error":"rate_limit_exceeded"}``, 500
``{"detail":"boom"}``, an OAuth resource server's 401 ``{"error":"invalid_token"}``,
a JSON-RPC error with id null) counted as the answer's payload: the request then
waited out the whole --timeout and was reported as "no answer". A server that
answers those errors on demand is a raw one here (the SDK servers do not); the
timeout is far beyond the hang guard, so waiting it out fails the test."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import trio

from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.replay.http_client import HttpLink
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer
from replay.capgen import Tape
from replay.test_plan import handshake

NEVER = 3600.0          # the replay's --timeout: never reached by a passing test
HANG = 60


async def _answer_every_post(stream: trio.SocketStream, head: bytes) -> None:
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            buf += chunk
        await stream.send_all(head)
    finally:
        await stream.aclose()


async def _replay(tmp_path: Path, status: int, ctype: str, body: bytes) -> Any:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.close()
    head = (b"HTTP/1.1 %d Refused\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (status, ctype.encode(), len(body))
            + body)
    with trio.fail_after(HANG):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, lambda s: _answer_every_post(s, head), 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            url = f"http://127.0.0.1:{port}/mcp"
            rec = Recorder(CaptureWriter.open(str(tmp_path / "new.jsonl")), "http", target={"url": url}, clock=monotonic_us_clock(),
                           started=utc_timestamp())
            plan = plan_from_path(path)
            result = await Replayer(plan, HttpLink(url, rec), timeout=NEVER).run()
            rec.close()
            nursery.cancel_scope.cancel()
    init = next(s for s in plan.steps if s.method == "initialize")
    return result.live[init.index].response


@pytest.mark.parametrize(("status", "ctype", "body", "quoted"), [
    (429, "application/json", b'{"error":"rate_limit_exceeded"}', 'answer: {"error":"rate_limit_exceeded"}'),
    (500, "application/json", b'{"detail":"boom"}', 'answer: {"detail":"boom"}'),
    (401, "application/json", b'{"error":"invalid_token","error_description":"no token"}', '"invalid_token"'),
    (400, "application/json", b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad session"}}', "Bad session"),
    (404, "text/plain", b"Not Found\n", "body: Not Found"),
])
async def test_an_http_error_without_an_answer_is_reported_at_once(tmp_path: Path, status: int, ctype: str, body: bytes,
                                                                   quoted: str) -> None:
    answer = await _replay(tmp_path, status, ctype, body)
    assert answer is not None, "the request waited for an answer that never came"
    err = answer["error"]
    assert err["code"] == status and err["message"].startswith(f"HTTP {status} without a JSON-RPC "), err
    assert quoted in err["message"], err
