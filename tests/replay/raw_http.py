"""A raw HTTP/1.1 server for replay tests of answers no SDK server gives on demand
(a 2xx body that answers nothing, an error body quoting a secret, a status line that
is not HTTP): each connection serves one request, ``respond(method, body)`` giving
the whole response's bytes (the connection is then closed)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.replay.http_client import HttpLink
from mcptap.replay.plan import Plan, plan_from_path
from mcptap.replay.runner import Replayer, ReplayResult

#: the replay's --timeout: never reached by a passing test (waiting it out trips HANG)
NEVER = 3600.0
HANG = 60

Respond = Callable[[str, bytes], bytes]


def response(status: int, ctype: str | None, body: bytes, reason: str = "X") -> bytes:
    """A whole ``Connection: close`` response."""
    head = f"HTTP/1.1 {status} {reason}\r\n" + (f"Content-Type: {ctype}\r\n" if ctype else "") + f"Content-Length: {len(body)}\r\n"
    return (head + "Connection: close\r\n\r\n").encode("latin-1") + body


async def _one(respond: Respond, stream: trio.SocketStream) -> None:
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(v) for n, _, v in (ln.partition(":") for ln in lines[1:]) if n.strip().lower() == "content-length"), 0)
        while len(body) < length:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            body += chunk
        await stream.send_all(respond(lines[0].split(" ")[0], body))
    except trio.BrokenResourceError:
        pass
    finally:
        await stream.aclose()


async def replay_raw(tmp_path: Path, capture: str, respond: Respond, **link: Any) -> tuple[Plan, ReplayResult]:
    """Replay ``capture`` over Streamable HTTP against ``respond``, with no practical
    timeout: a request left waiting fails the test (HANG) instead of passing late."""
    with trio.fail_after(HANG):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, functools.partial(_one, respond), 0, host="127.0.0.1"))
            url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
            rec = Recorder(CaptureWriter.open(str(tmp_path / "new.jsonl")), "http", target={"url": url}, clock=monotonic_us_clock(),
                           started=utc_timestamp())
            plan = plan_from_path(capture)
            result = await Replayer(plan, HttpLink(url, rec, **link), timeout=NEVER).run()
            rec.close()
            nursery.cancel_scope.cancel()
    return plan, result
