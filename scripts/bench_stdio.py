#!/usr/bin/env python3
"""Benchmark the stdio tap against a direct connection, in one run.

    .venv/bin/python scripts/bench_stdio.py [--rtt 5000] [--flood 100000] [--million]

Configurations (same client, same raw server):

* ``direct``   client ↔ server
* ``relay``    client ↔ plain trio byte relay (no parsing, no recording) ↔ server:
               the floor for one extra hop in Python/trio
* ``norec``    client ↔ mcptap's StdioTap with a recorder that does nothing ↔ server:
               the transport's own cost
* ``mcptap``   client ↔ ``mcptap record -o FILE -- server`` ↔ server (everything recorded)

Measures: p50/p99 round-trip time of ``ping`` over N round trips (after a
warm-up) and the latency each hop adds over ``direct``; a one-way s2c flood of
``notifications/message`` (msg/s, every message recorded by mcptap); one 16 MiB
request answered by a 16 MiB response (MB/s of message bytes moved); peak RSS
(VmHWM) of the tap process, sampled after 100k flood messages and after
1,000,000 (``--million``) to show memory stays flat. The machine may be shared:
numbers are printed, never asserted.

The server is a raw responder (no MCP library): it answers each request line
with a minimal response built by byte slicing, so it costs almost nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

SERVER = r'''
import sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood message"}}\n'
HEAD = b'{"jsonrpc":"2.0","id":'
for line in inp:
    if not line.startswith(HEAD):
        continue                                   # notifications: no answer
    rest = line[len(HEAD):]
    rid = rest[:rest.index(b",")]
    if b'"method":"ping"' in rest:
        out.write(HEAD + rid + b',"result":{}}\n')
    elif b'"method":"initialize"' in rest:
        out.write(HEAD + rid + b',"result":{"protocolVersion":"2025-06-18","capabilities":{"logging":{}},'
                  b'"serverInfo":{"name":"raw-bench","version":"0"}}}\n')
    elif b'"method":"bench/flood"' in rest:
        n = int(rest[rest.index(b'"n":') + 4:].split(b"}", 1)[0])
        block = NOTE * 1000
        for _ in range(n // 1000):
            out.write(block)
        out.write(NOTE * (n % 1000))
        out.write(HEAD + rid + b',"result":{}}\n')
    elif b'"method":"bench/big"' in rest:
        params = rest[rest.index(b'"params":') + 9:].rstrip(b"\r\n")[:-1]
        out.write(HEAD + rid + b',"result":' + params + b'}\n')
    else:
        out.write(HEAD + rid + b',"error":{"code":-32601,"message":"no"}}\n')
    out.flush()
'''


# -- the plain relay and the no-record tap (run as child modes of this script) --

async def _plain_relay(cmd: list[str]) -> int:
    import subprocess as sp

    import trio

    proc = await trio.lowlevel.open_process(cmd, stdin=sp.PIPE, stdout=sp.PIPE)
    hin, hout = trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(os.dup(1))

    async def pump(src, dst, close_dst: bool) -> None:
        while data := await src.receive_some(65536):
            await dst.send_all(data)
        if close_dst:
            await dst.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump, hin, proc.stdin, True)
        await pump(proc.stdout, hout, False)
        nursery.cancel_scope.cancel()
    return await proc.wait()


class _NullRecorder:
    def __getattr__(self, name: str):
        return lambda *a, **k: None


def _child_mode(mode: str, cmd: list[str]) -> None:
    import trio

    if mode == "relay":
        sys.exit(trio.run(_plain_relay, cmd))
    from mcptap.transport.stdio import run_stdio_tap

    result = trio.run(run_stdio_tap, cmd, _NullRecorder())
    sys.exit(result.exit_code)


# -- the client -------------------------------------------------------------------

class Peer:
    """Blocking client over the pipes of one configuration's process."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.w, self.r = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.buf = b""
        self.next_id = 0

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.w, view):]

    def line(self) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                out, self.buf = self.buf[: i + 1], self.buf[i + 1:]
                return out
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            self.buf += chunk

    def request(self, method: str, params: bytes = b"{}") -> bytes:
        self.next_id += 1
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}\n' % (self.next_id, method.encode(), params))
        return self.line()

    def handshake(self) -> None:
        self.request("initialize", b'{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}')
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def rtts(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            self.next_id += 1
            msg = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % self.next_id
            t0 = time.perf_counter_ns()
            self.send(msg)
            self.line()
            out.append((time.perf_counter_ns() - t0) / 1000)
        return out

    def flood(self, n: int) -> float:
        """Seconds to receive ``n`` notifications and the closing response."""
        self.next_id += 1
        t0 = time.perf_counter()
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"bench/flood","params":{"n":%d}}\n' % (self.next_id, n))
        want = n + 1
        lines = self.buf.count(b"\n")
        while lines < want:
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            lines += chunk.count(b"\n")
            self.buf = chunk[chunk.rfind(b"\n") + 1:] if b"\n" in chunk else self.buf + chunk
        return time.perf_counter() - t0

    def big(self, size: int) -> tuple[float, int]:
        params = b'{"blob":"' + b"x" * size + b'"}'
        t0 = time.perf_counter()
        resp = self.request("bench/big", params)
        dt = time.perf_counter() - t0
        assert len(resp) > size, "short response"
        return dt, len(params) + len(resp)

    def close(self) -> int:
        self.proc.stdin.close()
        self.proc.stdout.read()
        return self.proc.wait(timeout=60)


def status(pid: int) -> dict[str, int]:
    """VmHWM / VmRSS of ``pid`` in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0])
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtt", type=int, default=5000, help="round trips per configuration (default 5000)")
    ap.add_argument("--flood", type=int, default=100_000, help="flood size (default 100000)")
    ap.add_argument("--big", type=int, default=16 << 20, help="big message size in bytes (default 16 MiB)")
    ap.add_argument("--million", action="store_true", help="then flood mcptap up to 1,000,000 messages, sampling RSS")
    ap.add_argument("--only", nargs="*", default=["direct", "relay", "norec", "mcptap"])
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="mcptap-bench-"))
    server = tmp / "raw_server.py"
    server.write_text(SERVER)
    srv = [PY, str(server)]
    capture = tmp / "bench.jsonl"
    configs = {
        "direct": srv,
        "relay": [PY, __file__, "--child", "relay", "--", *srv],
        "norec": [PY, __file__, "--child", "norec", "--", *srv],
        "mcptap": [PY, "-m", "mcptap.cli.main", "record", "-q", "-o", str(capture), "--", *srv],
    }
    results: dict[str, dict[str, float]] = {}
    peers = {name: Peer(configs[name]) for name in args.only}
    lats: dict[str, list[float]] = {name: [] for name in peers}
    for peer in peers.values():
        peer.handshake()
        peer.rtts(500)                                     # warm-up
    # interleave blocks of round trips so machine noise hits every config alike
    blocks = 10
    for i in range(blocks):
        for name, peer in peers.items():
            lats[name] += peer.rtts(args.rtt // blocks + (1 if i < args.rtt % blocks else 0))
    for name in peers:
        lat = lats[name]
        r = results[name] = {"p50": pct(lat, 0.5), "p99": pct(lat, 0.99), "mean": statistics.fmean(lat)}
    for name, peer in peers.items():
        r = results[name]
        dt = peer.flood(args.flood)
        r["flood"] = args.flood / dt
        if name != "direct":
            r.update({f"{k}@flood": v for k, v in status(peer.proc.pid).items()})
        if args.million and name == "mcptap":
            more = 1_000_000 - args.flood
            dt = peer.flood(more)
            r["flood_1m"] = more / dt
            r.update({f"{k}@1M": v for k, v in status(peer.proc.pid).items()})
        dt, moved = peer.big(args.big)
        r["big_MBps"] = moved / dt / 1e6
        if name != "direct":
            r.update({f"{k}@big": v for k, v in status(peer.proc.pid).items()})
        r["exit"] = peer.close()
        print(f"{name:7s} done: rtt p50 {r['p50']:.1f} µs, flood {r['flood']:,.0f} msg/s", file=sys.stderr)

    base = results.get("direct")
    print(f"\nround trips: {args.rtt} per config, interleaved in 10 blocks (after 500 warm-up); flood: {args.flood:,} s2c notifications; big: {args.big:,} "
          "bytes each way")
    print(f"{'config':8s} {'p50 µs':>8s} {'p99 µs':>8s} {'+p50':>7s} {'+p99':>7s} {'flood msg/s':>12s} {'big MB/s':>9s} {'HWM MiB':>8s} {'HWM@big':>8s}")
    for name, r in results.items():
        add50 = r["p50"] - base["p50"] if base else float("nan")
        add99 = r["p99"] - base["p99"] if base else float("nan")
        hwm = r.get("VmHWM@flood", 0) / 1024
        hwm_big = r.get("VmHWM@big", 0) / 1024
        print(f"{name:8s} {r['p50']:8.1f} {r['p99']:8.1f} {add50:7.1f} {add99:7.1f} {r['flood']:12,.0f} {r['big_MBps']:9.1f} {hwm:8.1f} {hwm_big:8.1f}")
    if base and "relay" in results and "mcptap" in results:
        relay_add = results["relay"]["p50"] - base["p50"]
        tap_add = results["mcptap"]["p50"] - base["p50"]
        print(f"\nmcptap added p50 {tap_add:.1f} µs = {tap_add / relay_add:.2f}x the plain relay's {relay_add:.1f} µs "
              f"(targets: <= 100 µs, <= 3x); flood {results['mcptap']['flood']:,.0f} msg/s (target >= 50,000)")
    m = results.get("mcptap", {})
    if "VmHWM@1M" in m:
        print(f"mcptap RSS after {args.flood:,} msgs: {m['VmRSS@flood'] / 1024:.1f} MiB (peak {m['VmHWM@flood'] / 1024:.1f}); "
              f"after 1,000,000: {m['VmRSS@1M'] / 1024:.1f} MiB (peak {m['VmHWM@1M'] / 1024:.1f}); "
              f"flood to 1M at {m['flood_1m']:,.0f} msg/s (target peak <= 40 MB)")
    if capture.exists():
        print(f"capture: {capture.stat().st_size / 1e6:.1f} MB")
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        _child_mode(sys.argv[2], sys.argv[4:])
    else:
        main()
