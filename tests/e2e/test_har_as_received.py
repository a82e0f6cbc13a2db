"""A HAR entry's request is what the server received (as a proxy's HAR shows it: mitmproxy's
is its flow's request as forwarded), its URL, headers and body alike. Before, the URL and body
were the upstream's but the headers the client's (the tap's own Host, hop-by-hop fields no
server saw, no Authorization the tap added from the upstream URL's user info).

Real peers: the real HTTP tap, a raw upstream that keeps the exact request it received, httpx."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest
import trio

from mcptap.capture.reader import read_capture
from mcptap.export.har import har_of
from mcptap.export.har_sent import BASIC_NOT_RECORDED
from test_http_sdk import tapped

pytestmark = pytest.mark.e2e
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


async def _upstream(got: list[tuple[bytes, bytes]], task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """An HTTP/1.1 server that keeps each request's head and body as it received them."""
    async def one(stream: trio.SocketStream) -> None:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            n = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:] if line.lower().startswith(b"content-length:")), 0)
            while len(buf) < n:
                buf += await stream.receive_some(65536)
            got.append((head, buf[:n]))
            buf = buf[n:]
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ANSWER) + ANSWER)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(one, listeners)


async def test_a_har_request_is_what_the_server_received(tmp_path: Path) -> None:
    got: list[tuple[bytes, bytes]] = []
    cap = tmp_path / "har.jsonl"
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    async with trio.open_nursery() as nursery:
        port = await nursery.start(_upstream, got)
        async with tapped(f"http://user:pw@127.0.0.1:{port}/mcp?tenant=acme", cap) as (url, _), httpx.AsyncClient() as http:
            r = await http.post(url + "?x=1", content=body, headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "Connection": "keep-alive, X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=5"})
            assert r.status_code == 200
        nursery.cancel_scope.cancel()
    (head, received), = got
    line, *fields = head.decode("latin-1").split("\r\n")
    target = line.split(" ")[1]
    server_headers = [tuple(f.split(": ", 1)) for f in fields]
    capture = read_capture(str(cap))
    (entry,) = har_of(capture.header, capture.records)["log"]["entries"]
    req = entry["request"]
    assert target == "/mcp?tenant=acme&x=1" and req["url"] == f"http://127.0.0.1:{port}{target}"
    assert req["postData"]["text"].encode() == received == body
    shown = [(h["name"], h["value"]) for h in req["headers"]]
    # the tap's Authorization (the URL's user info) is never recorded: the HAR names it, without its value
    assert [(n, BASIC_NOT_RECORDED if n.lower() == "authorization" else v) for n, v in server_headers] == shown
    assert ("Host", f"127.0.0.1:{port}") in shown or ("host", f"127.0.0.1:{port}") in shown
    client = [(h["name"].lower(), h["value"]) for h in entry["_mcp"]["clientHeaders"]]
    assert ("x-hop", "1") in client and ("host", url.split("/")[2]) in client
    assert entry["_mcp"]["clientUrl"] == url + "?x=1"
