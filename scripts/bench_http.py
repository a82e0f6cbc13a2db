#!/usr/bin/env python3
"""HTTP tap overhead, each figure against a direct connection in the same run.

    .venv/bin/python scripts/bench_http.py [--requests 2000] [--events 300] [--big-mib 64]
                                           [--sessions 500] [--sdk-requests 300] [--skip ...]

Peers: a minimal upstream (raw sockets, one thread per connection, answers by
byte slicing: never the bottleneck) in its own process, and a raw-socket
client in this process. The tap is a real ``python -m mcptap.cli.record_http``
subprocess recording to a temporary capture. Measured (issue 13 targets):

* ``rt``: keep-alive JSON POST round trips, blocks alternating direct / tap
  on one persistent connection each; p50/p99 and the latency the tap adds
  (target: added p50 <= 200 us);
* ``sse``: delay from the upstream writing an SSE event (it stamps the
  monotonic clock into the event) to the client receiving it, direct and
  through the tap, alternating streams (target: added p50 <= 100 us);
* ``big``: one SSE event of ``--big-mib`` MiB (one chunk, written in 1 MiB
  pieces): wall time request -> last byte, direct and through a fresh tap
  (target <= 2x), and that tap's peak RSS (VmHWM; target <= 2x the event);
* ``mem``: a fresh tap's RSS idle after start, after the round trips, and with
  ``--sessions`` concurrent sessions (a POST each, then an open SSE GET
  stream; target <= 64 MiB; idle <= 40 MiB);
* ``sdk``: round trips (``tools/call`` echo, SSE-framed answers) against the
  official SDK's Streamable HTTP server (tests/e2e/sdk_server.py), direct and
  through the tap: the realistic figure.

The machine may be shared: numbers are printed (with the load), never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MIB = 1 << 20

UPSTREAM = r'''
import socket, sys, threading, time
BLOCK = b"x" * (1 << 20)

def head(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")

def serve(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = conn.makefile("rb", buffering=65536)
    try:
        while True:
            line = f.readline()
            if not line:
                return
            method, target, _ = line.split(b" ", 2)
            length = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, v = h.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(v)
            body = f.read(length) if length else b""
            q = dict(kv.split(b"=") for kv in target.partition(b"?")[2].split(b"&") if b"=" in kv)
            if method == b"POST":
                i = body.find(b'"id":') + 5
                rid = body[i:body.find(b",", i)]
                out = (b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[{"type":"text","text":"'
                       + BLOCK[:200] + b'"}]}}')
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(out), out))
            elif target.startswith(b"/sse"):
                head(conn)
                gap = float(q[b"gap"])
                for i in range(int(q[b"n"])):
                    ev = (b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":'
                          b'{"level":"info","data":{"t":%d,"i":%d}}}\n\n' % (time.monotonic_ns(), i))
                    conn.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
                    time.sleep(gap)
                conn.sendall(b"0\r\n\r\n")
            elif target.startswith(b"/big"):
                size = int(q[b"bytes"])
                pre = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
                post = b'"}}\n\n'
                fill = size - len(pre) - len(post)
                head(conn)
                conn.sendall(b"%x\r\n%s" % (size, pre))
                while fill > 0:
                    conn.sendall(BLOCK[:fill])
                    fill -= len(BLOCK)
                conn.sendall(post + b"\r\n0\r\n\r\n")
            elif target.startswith(b"/hold"):
                head(conn)
                ev = b"id: 0\ndata: \n\n"
                conn.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
                while conn.recv(65536):
                    pass
                return
    except OSError:
        return
    finally:
        conn.close()

srv = socket.create_server(("127.0.0.1", 0), backlog=1024)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


# -- a raw HTTP/1.1 client ------------------------------------------------------------
class Conn:
    def __init__(self, port: int) -> None:
        self.port = port
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self) -> None:
        self.s.close()

    def _fill(self) -> None:
        d = self.s.recv(1 << 18)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def request(self, method: str, target: str, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        h = {"Host": f"127.0.0.1:{self.port}", "Accept": "application/json, text/event-stream", **(headers or {})}
        if body or method == "POST":
            h["Content-Type"] = "application/json"
            h["Content-Length"] = str(len(body))
        lines = "".join(f"{k}: {v}\r\n" for k, v in h.items())
        self.s.sendall(f"{method} {target} HTTP/1.1\r\n{lines}\r\n".encode() + body)

    def head(self) -> tuple[int, dict[str, str]]:
        while (i := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        lines = bytes(self.buf[:i]).decode("latin-1").split("\r\n")
        del self.buf[:i + 4]
        hdrs = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        return int(lines[0].split()[1]), hdrs

    def body_parts(self, hdrs: dict[str, str]) -> Iterator[bytes]:
        """The body's pieces as they arrive (Content-Length or chunked)."""
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            while len(self.buf) < n:
                self._fill()
            out = bytes(self.buf[:n])
            del self.buf[:n]
            yield out
            return
        while True:
            while (i := self.buf.find(b"\r\n")) < 0:
                self._fill()
            size = int(bytes(self.buf[:i]).split(b";")[0], 16)
            del self.buf[:i + 2]
            if size == 0:
                while (i := self.buf.find(b"\r\n")) < 0:
                    self._fill()
                del self.buf[:i + 2]
                return
            while size:
                if not self.buf:
                    self._fill()
                piece = bytes(self.buf[:size])
                del self.buf[:len(piece)]
                size -= len(piece)
                yield piece
            while len(self.buf) < 2:
                self._fill()
            del self.buf[:2]

    def body(self, hdrs: dict[str, str]) -> bytes:
        return b"".join(self.body_parts(hdrs))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def proc_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


# -- peers ------------------------------------------------------------------------------
class Upstream:
    def __init__(self) -> None:
        self.p = subprocess.Popen([PY, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        self.port = int(self.p.stdout.readline())

    def stop(self) -> None:
        self.p.kill()
        self.p.wait()


class Tap:
    def __init__(self, upstream_port: int, path: str = "/mcp") -> None:
        self.cap = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        self.p = subprocess.Popen([PY, "-m", "mcptap.cli.record_http", "--upstream", f"http://127.0.0.1:{upstream_port}{path}",
                                   "-q", "-o", self.cap], stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.p.stderr is not None
        line = self.p.stderr.readline()
        self.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])

    def rss(self) -> float:
        return proc_kib(self.p.pid, "VmRSS") / 1024

    def peak(self) -> float:
        return proc_kib(self.p.pid, "VmHWM") / 1024

    def settle(self) -> float:
        """Wait until the tap's CPU time stops growing (analysis and recording
        done); returns how long that took (s)."""
        t0 = time.perf_counter()
        last = -1
        while True:
            with open(f"/proc/{self.p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu = int(fields[11]) + int(fields[12])
            if cpu == last:
                return time.perf_counter() - t0 - 0.2
            last = cpu
            time.sleep(0.2)

    def stop(self) -> int:
        self.p.send_signal(2)
        self.p.wait()
        size = os.path.getsize(self.cap)
        os.unlink(self.cap)
        return size


# -- measurements -------------------------------------------------------------------------
def round_trips(conn: Conn, n: int, start: int, target: str = "/mcp", headers: dict[str, str] | None = None,
                method: str = "tools/call") -> list[float]:
    out = []
    for i in range(start, start + n):
        body = (b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"name":"echo","arguments":{"text":"hi"}}}'
                % (i, method.encode()))
        t0 = time.perf_counter()
        conn.request("POST", target, body, headers)
        _, h = conn.head()
        data = conn.body(h)
        out.append(time.perf_counter() - t0)
        assert b'"id":%d' % i in data, data[:200]
    return out


def sse_delays(port: int, n: int, gap: float) -> list[float]:
    c = Conn(port)
    c.request("GET", f"/sse?n={n}&gap={gap}")
    _, h = c.head()
    out, buf = [], b""
    for piece in c.body_parts(h):
        now = time.monotonic_ns()
        buf += piece
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            t = int(ev.split(b'"t":')[1].split(b",")[0])
            out.append((now - t) / 1e9)
    c.close()
    return out[5:]                   # the first events include the connection set-up


def big_event(port: int, size: int) -> float:
    c = Conn(port)
    t0 = time.perf_counter()
    c.request("GET", f"/big?bytes={size}")
    _, h = c.head()
    got = sum(len(p) for p in c.body_parts(h))
    dt = time.perf_counter() - t0
    c.close()
    assert got == size, (got, size)
    return dt


def sessions(port: int, n: int) -> list[Conn]:
    held = []
    for k in range(n):
        c = Conn(port)
        round_trips(c, 1, k, headers={"Connection": "close"}, method="initialize")
        c.close()
        g = Conn(port)
        g.request("GET", "/hold", headers={"Mcp-Session-Id": f"s-{k}"})
        held.append(g)
    for g in held:
        st, h = g.head()
        assert st == 200, st
        parts = g.body_parts(h)
        next(parts)                  # the priming event: the stream is open end to end
    return held


# -- report -----------------------------------------------------------------------------
ROWS: list[tuple[str, str, str, str, str, str]] = []


def row(name: str, direct: float | None, tap: float, unit: str, target: str = "", ratio: bool = False) -> None:
    d = "" if direct is None else f"{direct:.1f}"
    added = "" if direct is None else (f"{tap / direct:.2f}x" if ratio else f"{tap - direct:+.1f}")
    ROWS.append((f"{name} ({unit})", d, f"{tap:.1f}", added, target, ""))


def run_rt(up: Upstream, tap: Tap, args: argparse.Namespace) -> None:
    d, t = Conn(up.port), Conn(tap.port)
    round_trips(d, 50, 0)
    round_trips(t, 50, 0)
    dd: list[float] = []
    tt: list[float] = []
    block = 100
    for k in range(max(1, args.requests // block)):
        dd += round_trips(d, block, 1000 + k * block)
        tt += round_trips(t, block, 1000 + k * block)
    d.close()
    t.close()
    for p in (50, 99):
        row(f"round trip p{p}", pct(dd, p) * 1e6, pct(tt, p) * 1e6, "us", "added p50 <= 200" if p == 50 else "")


def run_sse(up: Upstream, tap: Tap, args: argparse.Namespace) -> None:
    dd: list[float] = []
    tt: list[float] = []
    for _ in range(2):
        dd += sse_delays(up.port, args.events // 2, 0.002)
        tt += sse_delays(tap.port, args.events // 2, 0.002)
    for p in (50, 99):
        row(f"SSE event delay p{p}", pct(dd, p) * 1e6, pct(tt, p) * 1e6, "us", "added p50 <= 100" if p == 50 else "")


def run_big(up: Upstream, args: argparse.Namespace) -> None:
    size = args.big_mib * MIB
    dd, tt, peaks, settled = [], [], [], []
    for _ in range(2):
        dd.append(big_event(up.port, size))
        tap = Tap(up.port)
        tt.append(big_event(tap.port, size))
        settled.append(tap.settle())
        peaks.append(tap.peak())
        tap.stop()
    row(f"{args.big_mib} MiB SSE event", min(dd) * 1e3, min(tt) * 1e3, "ms", "<= 2x", ratio=True)
    ROWS.append((f"{args.big_mib} MiB SSE event: tap peak RSS (MiB)", "", f"{max(peaks):.1f}", f"{max(peaks) / args.big_mib:.2f}x",
                 "<= 2x the event", f"(analysis done {max(settled) * 1e3:.0f} ms after the last byte)"))


def run_sdk(args: argparse.Namespace) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen([PY, str(ROOT / "tests/e2e/sdk_server.py"), str(port), "streamable-http"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        tap = Tap(port)
        conns = []
        for p in (port, tap.port):
            c = Conn(p)
            init = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}')
            c.request("POST", "/mcp", init)
            _, h = c.head()
            c.body(h)
            hdr = {"Mcp-Session-Id": h["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
            c.request("POST", "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', hdr)
            _, h2 = c.head()
            c.body(h2)
            round_trips(c, 20, 1, headers=hdr)
            conns.append((c, hdr))
        dd: list[float] = []
        tt: list[float] = []
        block = 50
        for k in range(max(1, args.sdk_requests // block)):
            dd += round_trips(conns[0][0], block, 100 + k * block, headers=conns[0][1])
            tt += round_trips(conns[1][0], block, 100 + k * block, headers=conns[1][1])
        for c, _ in conns:
            c.close()
        tap.stop()
        row("SDK server round trip p50", pct(dd, 50) * 1e6, pct(tt, 50) * 1e6, "us")
        row("SDK server round trip p99", pct(dd, 99) * 1e6, pct(tt, 99) * 1e6, "us")
    finally:
        srv.kill()
        srv.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--big-mib", type=int, default=64)
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--sdk-requests", type=int, default=300)
    ap.add_argument("--skip", action="append", default=[], choices=["rt", "sse", "big", "mem", "sdk"])
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))       # the tap inherits it
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", file=sys.stderr)
    up = Upstream()
    try:
        tap = Tap(up.port)
        idle = tap.rss()
        if "rt" not in args.skip:
            run_rt(up, tap, args)
        if "sse" not in args.skip:
            run_sse(up, tap, args)
        after = tap.rss()
        size = tap.stop()
        ROWS.append(("tap RSS idle / after the above (MiB)", "", f"{idle:.1f} / {after:.1f}", "", "<= 40", ""))
        ROWS.append(("capture size (KiB)", "", f"{size / 1024:.0f}", "", "", ""))
        if "big" not in args.skip:
            run_big(up, args)
        if "mem" not in args.skip:
            tap = Tap(up.port)
            t0 = time.perf_counter()
            held = sessions(tap.port, args.sessions)
            dt = time.perf_counter() - t0
            rss = tap.rss()
            for c in held:
                c.close()
            tap.stop()
            ROWS.append((f"{args.sessions} sessions with open SSE streams: tap RSS (MiB)", "", f"{rss:.1f}", "", "<= 64",
                         f"(set up in {dt:.1f} s)"))
        if "sdk" not in args.skip:
            run_sdk(args)
    finally:
        up.stop()
    print(f"{'metric':<52}{'direct':>10}{'tap':>14}{'added':>10}  target")
    for name, d, t, a, target, note in ROWS:
        print(f"{name:<52}{d:>10}{t:>14}{a:>10}  {target} {note}".rstrip())
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
