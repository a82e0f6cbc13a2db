"""A kept-alive client connection goes idle once its exchange is over: the idle
timeout and the eviction at the connection limit apply to it too (before, a
connection that had made one request waited with no timeout for ever, because
its reader had looked at the state while the response was still in progress)."""

from __future__ import annotations

from pathlib import Path

import trio

from mcptap.capture.reader import read_capture
from tests.transport.test_http_limits import PING, _host_port, _read_all
from tests.transport.test_http_tap import fake_mcp, tap, upstream_server

KEEP_ALIVE_PING = PING.replace(b"Connection: close\r\n", b"")


async def _one_exchange(url: str) -> trio.SocketStream:
    s = await trio.open_tcp_stream(*_host_port(url))
    await s.send_all(KEEP_ALIVE_PING)
    got = b""
    with trio.fail_after(10):
        while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < _length(got):
            got += await s.receive_some(65536)
    assert got.startswith(b"HTTP/1.1 200 ")
    return s


def _length(got: bytes) -> int:
    for line in got.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            return int(value)
    raise AssertionError(f"no Content-Length in {got!r}")


async def test_a_connection_idle_after_its_exchange_is_closed(tmp_path: Path) -> None:
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", idle_timeout=0.3) as (url, rec):
            s = await _one_exchange(url)
            with trio.fail_after(10):
                assert await _read_all(s) == b""          # closed by the tap, nothing more sent
    closes = [r for r in read_capture(str(tmp_path / "cap.jsonl")).records if r.get("event") == "conn_close"]
    assert closes and closes[0]["side"] == "tap" and "idle" in closes[0]["detail"]


async def test_a_connection_idle_after_its_exchange_makes_room_at_the_limit(tmp_path: Path) -> None:
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", max_connections=1) as (url, rec):
            old = await _one_exchange(url)
            new = await _one_exchange(url)                  # the limit is reached: the idle one goes
            with trio.fail_after(10):
                assert await _read_all(old) == b""
            await new.aclose()
