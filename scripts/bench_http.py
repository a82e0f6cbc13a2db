#!/usr/bin/env python3
"""HTTP tap overhead: direct vs through ``mcptap record --upstream`` (same run).

    python scripts/bench_http.py [--requests 500] [--sessions 100] [--per-session 20]

A fake MCP upstream (h11, in this process) answers JSON-RPC POSTs with a JSON
body and serves an SSE stream that stamps each event with its send time; the
tap runs as a real subprocess (``python -m mcptap.cli.record_http``) recording
to a temporary capture. Printed: p50/p99 per round trip and the added latency,
SSE event delivery delay, and 100 concurrent keep-alive sessions (wall time,
p99, errors). Numbers are for comparison within one run on one machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import h11
import trio

EVENTS = 200
EVENT_GAP = 0.005


async def upstream(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    body = b""
    try:
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
            elif isinstance(ev, h11.Request):
                req, body = ev, b""
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                if req.method == b"GET":
                    await stream.send_all(conn.send(h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])))
                    for i in range(EVENTS):
                        payload = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"t": time.perf_counter_ns(), "i": i}})
                        await stream.send_all(conn.send(h11.Data(data=f"event: message\ndata: {payload}\n\n".encode())))
                        await trio.sleep(EVENT_GAP)
                    await stream.send_all(conn.send(h11.EndOfMessage()))
                else:
                    msg = json.loads(body)
                    out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "x" * 200}]}}).encode()
                    await stream.send_all(conn.send(h11.Response(status_code=200, headers=[("Content-Type", "application/json"),
                                                                                           ("Content-Length", str(len(out)))]))
                                          + conn.send(h11.Data(data=out)) + conn.send(h11.EndOfMessage()))
                conn.start_next_cycle()
            elif isinstance(ev, h11.ConnectionClosed):
                return
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
        return


class Client:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    async def __aenter__(self) -> Client:
        self.s = await trio.open_tcp_stream(self.host, self.port)
        self.c = h11.Connection(h11.CLIENT)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.s.aclose()

    async def call(self, i: int) -> float:
        data = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "x", "arguments": {}}}).encode()
        t0 = time.perf_counter()
        await self.s.send_all(self.c.send(h11.Request(method="POST", target="/mcp", headers=[
            ("Host", f"{self.host}:{self.port}"), ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"), ("Content-Length", str(len(data)))]))
            + self.c.send(h11.Data(data=data)) + self.c.send(h11.EndOfMessage()))
        body = b""
        while True:
            ev = self.c.next_event()
            if ev is h11.NEED_DATA:
                self.c.receive_data(await self.s.receive_some(65536))
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                break
        dt = time.perf_counter() - t0
        assert json.loads(body)["id"] == i
        self.c.start_next_cycle()
        return dt

    async def sse_delays(self) -> list[float]:
        await self.s.send_all(self.c.send(h11.Request(method="GET", target="/mcp", headers=[
            ("Host", f"{self.host}:{self.port}"), ("Accept", "text/event-stream")])) + self.c.send(h11.EndOfMessage()))
        delays, buf = [], b""
        while True:
            ev = self.c.next_event()
            if ev is h11.NEED_DATA:
                self.c.receive_data(await self.s.receive_some(65536))
            elif isinstance(ev, h11.Data):
                now = time.perf_counter_ns()
                buf += ev.data
                while b"\n\n" in buf:
                    block, buf = buf.split(b"\n\n", 1)
                    line = next(ln for ln in block.split(b"\n") if ln.startswith(b"data: "))
                    delays.append((now - json.loads(line[6:])["params"]["t"]) / 1e9)
            elif isinstance(ev, h11.EndOfMessage):
                return delays


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1e3


async def measure(port: int, args: argparse.Namespace) -> dict[str, float]:
    out: dict[str, float] = {}
    async with Client("127.0.0.1", port) as c:
        for i in range(20):
            await c.call(i)                     # warm-up
        rt = [await c.call(i) for i in range(args.requests)]
    out["rt_p50"], out["rt_p99"] = pct(rt, 50), pct(rt, 99)
    async with Client("127.0.0.1", port) as c:
        d = await c.sse_delays()
    out["sse_p50"], out["sse_p99"] = pct(d, 50), pct(d, 99)
    lat: list[float] = []
    errors = 0

    async def session(k: int) -> None:
        nonlocal errors
        try:
            async with Client("127.0.0.1", port) as c:
                for i in range(args.per_session):
                    lat.append(await c.call(i))
        except Exception:  # noqa: BLE001
            errors += 1

    t0 = time.perf_counter()
    async with trio.open_nursery() as n:
        for k in range(args.sessions):
            n.start_soon(session, k)
    out["conc_wall"] = (time.perf_counter() - t0) * 1e3
    out["conc_p99"] = pct(lat, 99)
    out["conc_errors"] = errors
    return out


async def main(args: argparse.Namespace) -> None:
    async with trio.open_nursery() as n:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        up_port = listeners[0].socket.getsockname()[1]
        await n.start(trio.serve_listeners, upstream, listeners)
        direct = await measure(up_port, args)
        cap = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.record_http", "--upstream", f"http://127.0.0.1:{up_port}/mcp",
                                 "-q", "-o", cap], stderr=subprocess.PIPE, text=True)
        line = await trio.to_thread.run_sync(proc.stderr.readline)
        tap_port = int(line.split()[3].split(":")[2].split("/")[0])
        tapped = await measure(tap_port, args)
        proc.send_signal(signal.SIGINT)
        await trio.to_thread.run_sync(proc.wait)
        size = os.path.getsize(cap)
        os.unlink(cap)
        n.cancel_scope.cancel()
    print(f"{'metric':<28}{'direct':>10}{'tap':>10}{'added':>10}")
    names = {"rt_p50": "round trip p50 (ms)", "rt_p99": "round trip p99 (ms)", "sse_p50": "SSE event delay p50 (ms)",
             "sse_p99": "SSE event delay p99 (ms)", "conc_wall": f"{args.sessions} sessions wall (ms)",
             "conc_p99": f"{args.sessions} sessions p99 (ms)", "conc_errors": "concurrent errors"}
    for k, name in names.items():
        print(f"{name:<28}{direct[k]:>10.2f}{tapped[k]:>10.2f}{tapped[k] - direct[k]:>10.2f}")
    print(f"capture size: {size / 1024:.0f} KiB for {args.requests + 20 + args.sessions * args.per_session} round trips and {EVENTS} SSE events")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--per-session", type=int, default=20)
    trio.run(main, ap.parse_args())
