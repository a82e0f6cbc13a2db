"""Idle connections and floods (issue 9 item 6; reproducer ../shared/repro/idle-connections.py)
and the HTTP tap's stderr (item 10): idle and request timeouts, a connection
limit answered with 503, one rate-limited stderr line per condition, one line
per upstream failure (rate-limited) and a one-line summary at exit."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from mcptap.capture.reader import read_capture
from mcptap.transport.limits import Notices
from tests.transport.test_http_tap import fake_mcp, tap, upstream_server

REPRO = "idle-connections.py"
CMD = [sys.executable, "-m", "mcptap.cli.record_http"]


def test_notices_are_rate_limited_per_condition() -> None:
    said: list[str] = []
    now = [0.0]
    n = Notices(said.append, interval=10, clock=lambda: now[0])
    for _ in range(5):
        n.note("502", "upstream failed")
    n.note("full", "503")
    now[0] = 11
    n.note("502", "upstream failed again")
    assert said == ["upstream failed", "503", "upstream failed again (and 4 more like it since the last such line)"]
    assert n.counts() == {"502": 6, "full": 1}


async def _read_all(s: trio.SocketStream) -> bytes:
    out = b""
    with trio.fail_after(20):
        try:
            while chunk := await s.receive_some(65536):
                out += chunk
        except trio.BrokenResourceError:
            pass
    return out


def _host_port(url: str) -> tuple[str, int]:
    h, p = url.split("//")[1].split("/")[0].split(":")
    return h, int(p)


async def test_idle_connection_is_closed(tmp_path: Path) -> None:
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", idle_timeout=0.2) as (url, rec):
            s = await trio.open_tcp_stream(*_host_port(url))
            assert await _read_all(s) == b""                  # closed by the tap, no answer
    closes = [r for r in read_capture(str(tmp_path / "cap.jsonl")).records if r.get("event") == "conn_close"]
    assert closes and closes[0]["side"] == "tap" and "idle" in closes[0]["detail"]


@pytest.mark.parametrize("sent", [
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",                                          # head never ends
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":",    # body never ends
])
async def test_a_request_not_received_in_time_gets_408(tmp_path: Path, sent: bytes) -> None:
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", request_timeout=0.3) as (url, rec):
            s = await trio.open_tcp_stream(*_host_port(url))
            for b in sent:                                    # slowloris: one byte at a time
                await s.send_all(bytes([b]))
            answer = await _read_all(s)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"Connection: close" in answer
    recs = read_capture(str(tmp_path / "cap.jsonl")).records
    if b"\r\n\r\n" in sent:
        codes = [f["code"] for r in recs for f in r.get("findings", ())]
        assert "http.client_timeout" in codes


async def test_a_long_response_stream_is_not_timed_out(tmp_path: Path) -> None:
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", idle_timeout=0.1, request_timeout=0.1) as (url, rec):
            s = await trio.open_tcp_stream(*_host_port(url))
            await s.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            got = b""
            with trio.fail_after(20):
                while b"endpoint" not in got:
                    got += await s.receive_some(65536)
            with trio.move_on_after(1.0):                      # ten timeouts long: still open, nothing more
                more = await s.receive_some(65536)
                pytest.fail(f"the stream ended or changed: {more!r}")
            await s.aclose()


PING = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
        b"Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")


async def _stream(url: str) -> trio.SocketStream:
    """A connection busy with an SSE GET stream (the fake upstream never ends it)."""
    s = await trio.open_tcp_stream(*_host_port(url))
    await s.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    got = b""
    with trio.fail_after(20):
        while b"endpoint" not in got:
            got += await s.receive_some(65536)
    return s


async def test_over_the_limit_clients_get_503(tmp_path: Path) -> None:
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", max_connections=3) as (url, rec):
            busy = [await _stream(url) for _ in range(3)]
            extra = await trio.open_tcp_stream(*_host_port(url))
            await extra.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = await _read_all(extra)
            assert answer.startswith(b"HTTP/1.1 503 ") and b"too many connections" in answer
            await busy[0].aclose()                             # a slot frees: served again
            with trio.fail_after(20):
                while True:
                    s = await trio.open_tcp_stream(*_host_port(url))
                    await s.send_all(PING)
                    answer = await _read_all(s)
                    if not answer.startswith(b"HTTP/1.1 503"):
                        break
                    await trio.sleep(0.05)
            assert answer.startswith(b"HTTP/1.1 200 ")
            for b in busy[1:]:
                await b.aclose()


async def test_at_the_limit_the_longest_idle_connection_makes_room(tmp_path: Path) -> None:
    """An idle flood cannot keep clients out: a new client takes the slot of
    the connection idle longest."""
    async with upstream_server(fake_mcp) as port:
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp", max_connections=3) as (url, rec):
            idle = [await trio.open_tcp_stream(*_host_port(url)) for _ in range(3)]
            s = await trio.open_tcp_stream(*_host_port(url))
            await s.send_all(PING)
            assert (await _read_all(s)).startswith(b"HTTP/1.1 200 ")
            assert await _read_all(idle[0]) == b""               # the oldest idle one was closed
            for c in idle:
                await c.aclose()
    closes = [r for r in read_capture(str(tmp_path / "cap.jsonl")).records if r.get("event") == "conn_close" and r["side"] == "tap"]
    assert closes and "connection limit reached" in closes[0]["detail"]


def _start(args: list[str], tmp_path: Path, prefix: str = "") -> tuple[subprocess.Popen[str], str]:
    cmd = " ".join([*(f"'{c}'" for c in CMD), *args, "-o", str(tmp_path / "c.jsonl")])
    proc = subprocess.Popen(f"{prefix}exec {cmd}", shell=True, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith("mcptap: listening on "), line
    return proc, line.split()[3]


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def test_idle_flood_at_the_fd_limit_still_answers(tmp_path: Path) -> None:
    """The reproducer: 300 idle connections against a tap limited to 256 file
    descriptors; a legitimate client still gets an answer, stderr stays short."""
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        proc, url = _start(["--upstream", f"http://127.0.0.1:{dead.getsockname()[1]}/mcp"], tmp_path, "ulimit -n 256; ")
        host, port = _host_port(url)
        idle = []
        try:
            for _ in range(300):
                idle.append(socket.create_connection((host, port), timeout=30))
            c = socket.create_connection((host, port), timeout=30)
            c.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = c.recv(100)
            c.close()
        finally:
            for s in idle:
                s.close()
            err = _stop(proc)
    assert answer.startswith(b"HTTP/1.1 502 "), answer           # served (the upstream is down): not kept out
    assert "Traceback" not in err
    assert len(err.splitlines()) <= 8, err
    assert "closing the longest idle one for a new client" in err and "stopped:" in err


def test_upstream_failures_are_said_once_and_summed_up_at_exit(tmp_path: Path) -> None:
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        proc, url = _start(["--upstream", f"http://127.0.0.1:{dead.getsockname()[1]}/mcp"], tmp_path)
        host, port = _host_port(url)
        for _ in range(5):
            c = socket.create_connection((host, port), timeout=30)
            c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
            assert c.recv(100).startswith(b"HTTP/1.1 502 ")
            c.close()
        err = _stop(proc)
    fails = [x for x in err.splitlines() if x.startswith("mcptap: upstream failed")]
    assert len(fails) == 1 and "answered 502" in fails[0], err
    last = err.splitlines()[-1]
    assert last.startswith("mcptap: stopped: 5 exchange(s) on 5 client connection(s); 5 answered 502"), err
    end = read_capture(str(tmp_path / "c.jsonl")).end
    assert end is not None and end["tap"] == {"502": 5}
