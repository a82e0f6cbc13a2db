#!/usr/bin/env python3
"""Benchmark the stdio tap against a plain threaded byte relay, in one run.

    .venv/bin/python scripts/bench_stdio.py [--rtt 5000] [--flood 1000000] [--repeat 3]

Configurations (same client, same raw server):

* ``direct``    client <-> server
* ``threaded``  client <-> plain threaded byte relay (two threads, blocking
                os.read/os.write of up to 64 KiB, nothing else) <-> server: the
                floor for one extra hop in Python, and the baseline of every ratio
* ``trio``      client <-> plain trio byte relay <-> server (``--only`` to add it)
* ``mcptap``    client <-> ``mcptap record -o FILE -- server`` <-> server

Measures, with the baseline in the same run and ratios printed:

* round trips: p50/p99 of ``ping`` over N round trips (interleaved blocks,
  after a warm-up) and the latency each hop adds over ``direct``
  (targets: mcptap added p50 <= 1.5x, p99 <= 2x the threaded relay's);
* s2c flood: wall time for the host to receive ``--flood`` notifications,
  each configuration in a fresh process, ``--repeat`` times in alternating
  order, medians (target <= 1.25x the threaded relay); every message is then
  verified in mcptap's capture (bytes and SHA-256 rebuilt from the records);
* both directions at once: the same flood s2c while the host sends as many
  notifications c2s (target <= 1.25x);
* one ``--big`` request answered by as big a response (default 100 MB, the
  issue's size: the ratio is of the message, so a smaller one mostly measures
  the idle tap), MB/s, and peak RSS (VmHWM) of the tap after the flood and
  after the big message (target <= 2x the message).

The machine may be shared: numbers are printed, never asserted; report the
load (printed) with them.

The server is a raw responder (no MCP library): it answers each request line
with a minimal response built by byte slicing, so it costs almost nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memstat import resident_union

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

SERVER = r'''
import sys, threading
inp, out = sys.stdin.buffer, sys.stdout.buffer
lock = threading.Lock()
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood message"}}\n'
HEAD = b'{"jsonrpc":"2.0","id":'

def flood(n, rid):
    block = NOTE * 1000
    with lock:
        for _ in range(n // 1000):
            out.write(block)
        out.write(NOTE * (n % 1000))
        out.write(HEAD + rid + b',"result":{}}\n')
        out.flush()

notes = 0
for line in inp:
    if not line.startswith(HEAD):
        notes += 1
        continue                                   # notifications: no answer
    rest = line[len(HEAD):]
    rid = rest[:rest.index(b",")]
    if b'"method":"bench/flood2"' in rest:         # both directions: flood from a thread, keep reading
        n = int(rest[rest.index(b'"n":') + 4:].split(b"}", 1)[0])
        threading.Thread(target=flood, args=(n, rid)).start()
        continue
    if b'"method":"bench/flood"' in rest:
        n = int(rest[rest.index(b'"n":') + 4:].split(b"}", 1)[0])
        flood(n, rid)
        continue
    with lock:
        if b'"method":"ping"' in rest:
            out.write(HEAD + rid + b',"result":{}}\n')
        elif b'"method":"bench/sync"' in rest:
            out.write(HEAD + rid + b',"result":{"notes":%d}}\n' % notes)
        elif b'"method":"initialize"' in rest:
            out.write(HEAD + rid + b',"result":{"protocolVersion":"2025-06-18","capabilities":{"logging":{}},'
                      b'"serverInfo":{"name":"raw-bench","version":"0"}}}\n')
        elif b'"method":"bench/big"' in rest:
            params = rest[rest.index(b'"params":') + 9:].rstrip(b"\r\n")[:-1]
            out.write(HEAD + rid + b',"result":' + params + b'}\n')
        else:
            out.write(HEAD + rid + b',"error":{"code":-32601,"message":"no"}}\n')
        out.flush()
'''


# -- the plain relays (run as child modes of this script) ---------------------------

def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _threaded_relay(cmd: list[str]) -> int:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def pump(src: int, dst: int, close: bool) -> None:
        while data := os.read(src, 65536):
            _write_all(dst, data)
        if close:
            os.close(dst)

    threading.Thread(target=pump, args=(0, proc.stdin.fileno(), True), daemon=True).start()
    pump(proc.stdout.fileno(), 1, False)
    return proc.wait()


async def _trio_relay(cmd: list[str]) -> int:
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


def _child_mode(mode: str, cmd: list[str]) -> None:
    if mode == "threaded":
        sys.exit(_threaded_relay(cmd))
    import trio

    sys.exit(trio.run(_trio_relay, cmd))


# -- the client -------------------------------------------------------------------

class Peer:
    """Blocking client over the pipes of one configuration's process."""

    def __init__(self, argv: list[str], cwd: str | Path = ROOT) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd)
        self.w, self.r = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.buf = b""
        self.next_id = 0

    def send(self, data: bytes) -> None:
        _write_all(self.w, data)

    def line(self) -> bytes:
        i = self.buf.find(b"\n")
        if i < 0:
            parts = [self.buf]                      # a list: a 100 MB line is not re-copied per read
            while True:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise EOFError("server closed stdout")
                parts.append(chunk)
                if b"\n" in chunk:
                    break
            self.buf = b"".join(parts)
            i = self.buf.find(b"\n")
        out, self.buf = self.buf[: i + 1], self.buf[i + 1:]
        return out

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

    def _receive_lines(self, want: int) -> None:
        lines = self.buf.count(b"\n")
        while lines < want:
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            lines += chunk.count(b"\n")
            self.buf = chunk[chunk.rfind(b"\n") + 1:] if b"\n" in chunk else self.buf + chunk

    def flood(self, n: int) -> float:
        """Seconds to receive ``n`` notifications and the closing response."""
        self.next_id += 1
        t0 = time.perf_counter()
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"bench/flood","params":{"n":%d}}\n' % (self.next_id, n))
        self._receive_lines(n + 1)
        return time.perf_counter() - t0

    def flood_both(self, n: int) -> float:
        """Seconds until ``n`` notifications went each way: the server floods
        s2c from a thread while the host writes ``n`` c2s, then a sync request
        (answered after the server read all of them)."""
        self.next_id += 2
        t0 = time.perf_counter()
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"bench/flood2","params":{"n":%d}}\n' % (self.next_id - 1, n))
        note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"host flood msg"}}\n'
        sync = b'{"jsonrpc":"2.0","id":%d,"method":"bench/sync"}\n' % self.next_id

        def writer() -> None:
            block = note * 1000
            for _ in range(n // 1000):
                self.send(block)
            self.send(note * (n % 1000) + sync)

        t = threading.Thread(target=writer)
        t.start()
        self._receive_lines(n + 2)
        t.join()
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
        return self.proc.wait(timeout=600)


def status(pid: int) -> dict[str, int]:
    """VmHWM / VmRSS of ``pid`` in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0])
    return out


def relay_pid(pid: int) -> int | None:
    """mcptap's relay process (a fork of ``pid``: same command line), or None
    (other configurations)."""
    try:
        me = Path(f"/proc/{pid}/cmdline").read_bytes()
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for kid in kids:
            if Path(f"/proc/{kid}/cmdline").read_bytes() == me:
                return int(kid)
    except OSError:
        pass
    return None


def relay_status(pid: int) -> dict[str, int]:
    """VmHWM / VmRSS of mcptap's relay process, or {} (other configurations)."""
    kid = relay_pid(pid)
    try:
        return {} if kid is None else status(kid)
    except OSError:
        return {}


def tap_memory(pid: int) -> float | None:
    """MiB the tap ``pid`` and its relay process hold in RAM together: their
    distinct resident pages (``memstat.resident_union``; the two share most
    pages after the fork), or None when page frames are hidden (not root)."""
    kid = relay_pid(pid)
    return resident_union([pid] + ([] if kid is None else [kid]))


class MemorySampler:
    """The tap's peak memory during a flood, cheaply: samples the RSS of both
    its processes every ``every`` s on a thread (``/proc/PID/status``) until
    ``stop()``, which then counts the pages they share once (``tap_memory``,
    the pagemap walk too slow to sample) and returns the peak RSS sum less
    those shared pages (MiB): an upper bound of the peak distinct resident
    pages, since the processes share no more pages later than during the run
    (copy-on-write only unshares). None when page frames are hidden."""

    def __init__(self, pid: int, every: float) -> None:
        self.pids = [pid] + [k for k in [relay_pid(pid)] if k is not None]
        self.every, self.peak = every, 0.0
        self.after: float | None = None      # distinct resident pages (MiB) when stopped
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _rss_sum(self) -> float:
        try:
            return sum(status(p)["VmRSS"] for p in self.pids) / 1024
        except (OSError, KeyError):
            return 0.0

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, self._rss_sum())
            if self._done.wait(self.every):
                return

    def stop(self) -> float | None:
        self._done.set()
        self._thread.join()
        union = self.after = resident_union(self.pids)
        if union is None:
            return None
        shared = self._rss_sum() - union
        return self.peak - shared


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            for kid in Path(f"/proc/{pid}/task/{tid}/children").read_text().split():
                out += _tree(int(kid))
    except OSError:
        pass
    return out


def cpu_snapshot(tap: int) -> dict[tuple[str, int], int]:
    """CPU time (ns, /proc schedstat) of every thread of this client and of
    ``tap``'s process tree, keyed by (role, tid): client, tap (mcptap's own
    normal threads, or the plain relay), analysis (mcptap's SCHED_IDLE
    threads), relay (mcptap's forked relay process), server."""
    me = Path(f"/proc/{tap}/cmdline").read_bytes() if Path(f"/proc/{tap}").exists() else b""
    out: dict[tuple[str, int], int] = {}
    for pid in [os.getpid(), *_tree(tap)]:
        try:
            same = Path(f"/proc/{pid}/cmdline").read_bytes() == me
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                run = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
                policy = int(Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[38])
            except (OSError, IndexError, ValueError):
                continue
            role = ("client" if pid == os.getpid() else ("analysis" if policy == 5 else "tap") if pid == tap
                    else "relay" if same else "server")
            out[(role, int(tid))] = run
    return out


def settle(peers: object, quiet_ms: float = 0.5, window: float = 0.02, limit: float = 10.0) -> None:
    """Wait (at most ``limit`` s) until the process trees of ``peers`` used
    less than ``quiet_ms`` of CPU in ``window`` s: a tap's analysis of the
    last block is done. Without it, mcptap's batched idle-priority analysis
    ran during the next configuration's block and both measured alike
    (no copies at all and full analysis within 2 µs, against 37 µs apart
    when each ran alone)."""
    pids = [p.proc.pid for p in peers]  # type: ignore[attr-defined]

    def total() -> int:
        n = 0
        for pid in pids:
            for key, run in cpu_snapshot(pid).items():
                if key[0] != "client":
                    n += run
        return n

    end = time.monotonic() + limit
    last = total()
    while time.monotonic() < end:
        time.sleep(window)
        now = total()
        if now - last < quiet_ms * 1e6:
            return
        last = now


def cpu_used(before: dict[tuple[str, int], int], after: dict[tuple[str, int], int]) -> dict[str, float]:
    """ms of CPU per role between two ``cpu_snapshot``s."""
    used: dict[str, float] = {}
    for key, run in after.items():
        used[key[0]] = used.get(key[0], 0.0) + (run - before.get(key, 0)) / 1e6
    return used


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def verify_capture(path: Path) -> dict[str, dict[str, object]]:
    """Rebuild each direction's bytes from the capture's message and chunk
    records: {dir: {bytes, sha256, lines, chunk_records, end}}."""
    sys.path.insert(0, str(ROOT))
    import orjson

    from mcptap.capture.format import decode_bytes
    from mcptap.capture.reader import CaptureStream

    acc = {d: {"sha": hashlib.sha256(), "bytes": 0, "lines": 0, "chunks": 0} for d in ("c2s", "s2c")}
    end: dict = {}
    for rec in CaptureStream(str(path)):
        typ = rec["type"]
        if typ in ("message", "chunk"):
            a = acc[rec["dir"]]
            data = decode_bytes(rec, "data" if typ == "chunk" else "raw")
            if data is None:
                data = orjson.dumps(rec["json"]) + rec.get("eol", "\n").encode()
            a["sha"].update(data)
            a["bytes"] += len(data)
            a["lines"] += data.count(b"\n")
            a["chunks"] += typ == "chunk"
        elif typ == "end":
            end = rec
    return {d: {"bytes": a["bytes"], "sha256": a["sha"].hexdigest(), "lines": a["lines"], "chunk_records": a["chunks"],
                "end": end.get(d, {})} for d, a in acc.items()}


def load() -> str:
    return open("/proc/loadavg").read().split(" ", 3)[:3].__str__()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtt", type=int, default=5000, help="round trips per configuration (default 5000)")
    ap.add_argument("--flood", type=int, default=1_000_000, help="flood size (default 1000000)")
    ap.add_argument("--repeat", type=int, default=3, help="flood runs per configuration (default 3; medians)")
    ap.add_argument("--big", type=int, default=100_000_000, help="big message size in bytes (default 100 MB, issue 13's size)")
    ap.add_argument("--blocks", type=int, default=10,
                    help="round trips in this many interleaved blocks per config (default 10; 1: one sustained run each)")
    ap.add_argument("--only", nargs="*", default=["direct", "threaded", "mcptap"])
    ap.add_argument("--skip", nargs="*", default=[], choices=["rtt", "flood", "both", "big"])
    ap.add_argument("--before", metavar="DIR", help="also run the mcptap of another checkout (DIR holds its mcptap/ package) "
                    "as the configuration 'before'")
    ap.add_argument("--mem-every", type=float, default=0.0, metavar="S",
                    help="floods: sample the RSS of the tap's two processes every S seconds and print the peak of their "
                         "distinct resident pages (an upper bound: MemorySampler) and those pages once the flood's "
                         "analysis is done (default off)")
    ap.add_argument("--cpu", action="store_true", help="floods: CPU time per process role (Linux schedstat), medians")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="mcptap-bench-"))
    server = tmp / "raw_server.py"
    server.write_text(SERVER)
    srv = [PY, str(server)]
    capture = tmp / "bench.jsonl"
    configs = {
        "direct": srv,
        "threaded": [PY, __file__, "--child", "threaded", "--", *srv],
        "trio": [PY, __file__, "--child", "trio", "--", *srv],
        "mcptap": [PY, "-m", "mcptap.cli.main", "record", "-q", "-o", str(capture), "--", *srv],
    }
    captures = {"mcptap": capture}
    cwds: dict[str, str | Path] = {}
    names = [n for n in args.only if n in configs]
    if args.before:
        captures["before"] = tmp / "before.jsonl"
        configs["before"] = [PY, "-m", "mcptap.cli.main", "record", "-q", "-o", str(captures["before"]), "--", *srv]
        cwds["before"] = args.before
        names.append("before")
    print(f"load average at start: {load()}; cpus: {os.cpu_count()}")

    if "rtt" not in args.skip:
        peers = {name: Peer(configs[name], cwds.get(name, ROOT)) for name in names}
        lats: dict[str, list[float]] = {name: [] for name in peers}
        for peer in peers.values():
            peer.handshake()
            peer.rtts(500)                                     # warm-up
        blocks = args.blocks
        rt_cpu: dict[str, dict[str, float]] = {name: {} for name in peers}
        for i in range(blocks):                                # interleaved: noise hits every config alike
            for name, peer in peers.items():
                # mcptap analyses a block's copies after it (batched, idle priority): let
                # every tap finish that first, or it runs during the next config's block
                settle(peers.values())
                n = args.rtt // blocks + (1 if i < args.rtt % blocks else 0)
                before = cpu_snapshot(peer.proc.pid)
                lats[name] += peer.rtts(n)
                settle([peer])
                for role, ms in cpu_used(before, cpu_snapshot(peer.proc.pid)).items():
                    rt_cpu[name][role] = rt_cpu[name].get(role, 0.0) + ms * 1000 / args.rtt
        hwm = {}
        together: dict[str, float | None] = {}
        for name, peer in peers.items():
            if name != "direct":
                hwm[name] = status(peer.proc.pid)
            if name == "mcptap":
                hwm["relay"] = relay_status(peer.proc.pid)
            if name in ("mcptap", "before"):
                together[name] = tap_memory(peer.proc.pid)
            peer.close()
        base = lats.get("direct")
        print(f"\nround trips: {args.rtt} per config, {blocks} interleaved blocks after 500 warm-up (µs)")
        print(f"{'config':9s} {'p50':>8s} {'p99':>8s} {'+p50':>8s} {'+p99':>8s} {'RSS MiB':>8s}")
        added = {}
        for name, lat in lats.items():
            p50, p99 = pct(lat, 0.5), pct(lat, 0.99)
            a50 = p50 - pct(base, 0.5) if base else float("nan")
            a99 = p99 - pct(base, 0.99) if base else float("nan")
            added[name] = (a50, a99)
            rss = hwm.get(name, {}).get("VmRSS", 0) / 1024
            print(f"{name:9s} {p50:8.1f} {p99:8.1f} {a50:8.1f} {a99:8.1f} {rss:8.1f}")
        if hwm.get("relay"):
            print(f"mcptap RSS {hwm['mcptap']['VmRSS'] / 1024:.1f} MiB, its relay process {hwm['relay']['VmRSS'] / 1024:.1f} MiB")
        for name, mib in together.items():
            if mib is not None:
                print(f"{name} memory {mib:.1f} MiB (target <= 40): distinct resident pages of both processes")
        print("CPU µs per round trip, by process role (client: this process; analysis: mcptap's idle-priority threads):")
        for name, roles in rt_cpu.items():
            print(f"  {name:9s} " + "  ".join(f"{role} {us:.1f}" for role, us in sorted(roles.items())))
        for name in ("mcptap", "before"):
            if "threaded" in added and name in added:
                (t50, t99), (m50, m99) = added["threaded"], added[name]
                print(f"{name} added p50 {m50:.1f} µs = {m50 / t50:.2f}x the threaded relay's {t50:.1f} (target <= 1.5x); "
                      f"added p99 {m99:.1f} µs = {m99 / t99:.2f}x its {t99:.1f} (target <= 2x)")

    flood_names = [n for n in names if n != "direct"] or names
    for test in ("flood", "both"):
        if test in args.skip:
            continue
        times: dict[str, list[float]] = {n: [] for n in flood_names}
        rss: dict[str, list[float]] = {n: [] for n in flood_names}
        relay_rss: list[float] = []
        together: dict[str, list[float]] = {n: [] for n in flood_names}
        after_flood: dict[str, list[float]] = {n: [] for n in flood_names}
        cpu: dict[str, list[dict[str, float]]] = {n: [] for n in flood_names}
        checks = []
        for rep in range(args.repeat):
            order = flood_names if rep % 2 == 0 else flood_names[::-1]
            for name in order:
                cap = captures.get(name)
                if cap is not None and cap.exists():
                    cap.unlink()
                peer = Peer(configs[name], cwds.get(name, ROOT))
                peer.handshake()
                snap = cpu_snapshot(peer.proc.pid) if args.cpu else {}
                sampler = MemorySampler(peer.proc.pid, args.mem_every) if args.mem_every and name != "threaded" else None
                dt = peer.flood(args.flood) if test == "flood" else peer.flood_both(args.flood)
                if sampler is not None:
                    settle([peer])                  # the analysis of the flood done: memory after traffic
                    peak = sampler.stop()
                    if peak is not None and sampler.after is not None:
                        together[name].append(peak)
                        after_flood[name].append(sampler.after)
                if args.cpu:
                    cpu[name].append(cpu_used(snap, cpu_snapshot(peer.proc.pid)))
                times[name].append(dt)
                if name != "direct":
                    rss[name].append(status(peer.proc.pid)["VmHWM"] / 1024)
                if name == "mcptap":
                    relay_rss.append(relay_status(peer.proc.pid).get("VmHWM", 0) / 1024)
                t_close = time.perf_counter()
                code = peer.close()
                t_close = time.perf_counter() - t_close
                if cap is not None:
                    v = verify_capture(cap)
                    want_s2c = args.flood + 1 + (1 if test == "both" else 0) + 1     # + initialize response
                    ok = v["s2c"]["lines"] >= want_s2c and all(
                        v[d]["sha256"] == v[d]["end"].get("sha256") and v[d]["bytes"] == v[d]["end"].get("bytes") for d in v)
                    want_c2s = 2 + (args.flood + 2 if test == "both" else 1)      # initialize, initialized, flood(s)/sync
                    ok = ok and v["c2s"]["lines"] == want_c2s
                    checks.append(f"{name} rep {rep}: s2c {v['s2c']['lines']:,} lines, c2s {v['c2s']['lines']:,} lines, "
                                  f"{v['s2c']['chunk_records'] + v['c2s']['chunk_records']} chunk records, digests match: {ok}, "
                                  f"exit {code}, tap exit after host EOF {t_close:.2f} s")
        what = "s2c flood" if test == "flood" else "both directions"
        print(f"\n{what}: {args.flood:,} notifications{' each way' if test == 'both' else ''}, {args.repeat} runs each, alternating order; "
              f"load now {load()}")
        for name in flood_names:
            med = statistics.median(times[name])
            print(f"  {name:9s} median {med:6.3f} s  ({args.flood / med:12,.0f} msg/s)  runs {', '.join(f'{t:.3f}' for t in times[name])}"
                  f"  peak RSS {max(rss[name], default=0):.1f} MiB")
        if relay_rss:
            print(f"  mcptap's relay process peak RSS {max(relay_rss):.1f} MiB")
        for name, peaks in together.items():
            if peaks:
                print(f"  {name} memory, both processes, RSS sampled every {args.mem_every * 1e3:.0f} ms: peak <= {max(peaks):.1f} MiB "
                      f"(target <= 40; distinct resident pages: the RSS sum less the pages shared at the end); "
                      f"after the flood's analysis {', '.join(f'{m:.1f}' for m in after_flood[name])} MiB")
        for name in ("mcptap", "before"):
            if "threaded" in times and name in times:
                ratio = statistics.median(times[name]) / statistics.median(times["threaded"])
                print(f"  {name} / threaded relay = {ratio:.2f}x (target <= 1.25x)")
        if args.cpu:
            print("  CPU ms during the flood, medians (client: this process; analysis: mcptap's idle-priority threads):")
            for name in flood_names:
                roles = sorted({r for c in cpu[name] for r in c})
                print(f"    {name:9s} " + "  ".join(f"{r} {statistics.median(c.get(r, 0.0) for c in cpu[name]):.1f}" for r in roles))
        for c in checks:
            print(f"  capture {c}")

    if "big" not in args.skip:
        print(f"\nbig: {args.big:,} bytes each way")
        for name in names:
            if capture.exists():
                capture.unlink()
            peer = Peer(configs[name], cwds.get(name, ROOT))
            peer.handshake()
            dt, moved = peer.big(args.big)
            st = status(peer.proc.pid) if name != "direct" else {}
            relay = relay_status(peer.proc.pid) if name == "mcptap" else {}
            peer.close()
            extra = f" (relay process {relay['VmHWM'] / 1024:.1f} MiB)" if relay else ""
            ratio = f" = {st['VmHWM'] * 1024 / args.big:.2f}x the message (target <= 2x)" if name == "mcptap" else ""
            print(f"  {name:9s} {moved / dt / 1e6:8.1f} MB/s  peak RSS {st.get('VmHWM', 0) / 1024:.1f} MiB{ratio}{extra}")
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
