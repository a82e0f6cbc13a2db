#!/usr/bin/env python3
"""Benchmarks for ``mcptap replay`` and ``mcptap diff`` (prints figures; no asserts).

1. replay: a client sends N ``tools/call`` requests one after another to the
   official-SDK test server (tests/replay/sdk_server.py v1) through
   ``mcptap record``; then ``mcptap replay`` plays that capture against a fresh
   server. Printed: original session time, replay time, ratio (target <= 1.5).
   Both times run from the first client message to the last message.
2. diff: two generated captures of M messages each (tools/call request +
   response pairs, realistic record shapes, different ids and latencies) are
   diffed in a child process. Printed: messages/s over both captures (target
   >= 100,000) and the child's peak RSS.

    python scripts/bench_replay.py [--exchanges 10000] [--messages 1000000] [--skip-replay] [--skip-diff]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "replay" / "sdk_server.py"), "v1"]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]

CLIENT = r"""
import json, subprocess, sys, time
n, out = int(sys.argv[1]), sys.argv[2]
cmd = json.loads(sys.argv[3])
p = subprocess.Popen(cmd + ["record", "-q", "-o", out, "--"] + json.loads(sys.argv[4]), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def call(i, method, params=None):
    msg = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        msg["params"] = params
    p.stdin.write(json.dumps(msg).encode() + b"\n"); p.stdin.flush()
    line = p.stdout.readline()
    assert b'"result"' in line, line
call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
call(1, "tools/list")
for i in range(2, n + 2):
    call(i, "tools/call", {"name": "add", "arguments": {"a": i, "b": 1}})
p.stdin.close(); p.wait()
"""


def session_seconds(capture: Path) -> float:
    """First message to last message of a capture (s)."""
    first = last = None
    with open(capture, "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec.get("type") == "message":
                first = rec["t_us"] if first is None else first
                last = rec["t_us"]
    return (last - first) / 1e6 if first is not None else 0.0


def bench_replay(n: int, work: Path) -> None:
    cap, new = work / "original.jsonl", work / "replayed.jsonl"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", CLIENT, str(n), str(cap), json.dumps(MCPTAP), json.dumps(SERVER)], check=True, cwd=ROOT)
    wall_orig = time.perf_counter() - t
    t = time.perf_counter()
    proc = subprocess.run([*MCPTAP, "replay", str(cap), "-o", str(new), "--format", "json", "--", *SERVER],
                          capture_output=True, cwd=ROOT)
    wall_replay = time.perf_counter() - t
    report = json.loads(proc.stdout)
    orig, rep = session_seconds(cap), session_seconds(new)
    print(f"replay: {n} exchanges; exit {proc.returncode}; verdicts {report['counts']}")
    print(f"  original session {orig:.2f} s (wall {wall_orig:.2f} s); replayed session {rep:.2f} s (wall {wall_replay:.2f} s)")
    print(f"  ratio replay/original = {rep / orig:.2f} (target <= 1.5)")


def generate(path: Path, messages: int, seed: int, plant: int = 0) -> None:
    """A capture of ``messages`` records: tools/call request/response pairs.
    ``plant``: change the result of every ``plant``-th exchange (0: none)."""
    rnd = random.Random(seed)
    dumps = orjson.dumps
    with open(path, "wb") as f:
        w = f.write
        w(dumps({"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "bench", "started": "2026-01-01T00:00:00Z",
                 "transport": "stdio", "target": {"argv": ["bench-server"]}}) + b"\n")
        seq = t = 0
        rid = seed * 10_000_000
        n = 0
        while seq < messages:
            rid += 1
            n += 1
            seq += 1
            t += 40
            i = n % 97
            req = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": f"tool{i % 7}", "arguments": {"x": i, "q": "abc" * 3}}}
            w(dumps({"type": "message", "seq": seq, "t_us": t, "dir": "c2s", "kind": "request", "id": rid, "method": "tools/call",
                     "phase": "operating", "rev": "2025-11-25", "json": req, "offset": 0}) + b"\n")
            lat = 80 + rnd.randrange(60)
            seq += 1
            t += lat
            text = f"value {i * 3}" if not plant or n % plant else "planted change"
            res = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}], "isError": False}}
            w(dumps({"type": "message", "seq": seq, "t_us": t, "dir": "s2c", "kind": "response", "id": rid, "pair": seq - 1,
                     "latency_us": lat, "phase": "operating", "rev": "2025-11-25", "json": res, "offset": 0}) + b"\n")
        w(dumps({"type": "end", "seq": seq + 1, "t_us": t}) + b"\n")


CHILD = r"""
import resource, sys, time, json
from mcptap.diff.captures import diff_captures
t = time.perf_counter()
r = diff_captures(sys.argv[1], sys.argv[2])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "messages": r.stats["a"]["messages"] + r.stats["b"]["messages"], "items": len(r.items),
                  "counts": r.counts, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def bench_diff(messages: int, work: Path) -> None:
    a, b = work / "a.jsonl", work / "b.jsonl"
    generate(a, messages, 1)
    generate(b, messages, 2, plant=max(1, messages // 20))     # ~10 planted changes: the detail pass runs too
    base = subprocess.run([sys.executable, "-c", "import resource, mcptap.diff.captures; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"],
                          capture_output=True, text=True, cwd=ROOT)
    out = json.loads(subprocess.run([sys.executable, "-c", CHILD, str(a), str(b)], capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    rate = out["messages"] / out["seconds"]
    size = (a.stat().st_size + b.stat().st_size) / 1e6
    print(f"diff: 2 x {messages:,} messages ({size:.0f} MB) in {out['seconds']:.2f} s = {rate:,.0f} messages/s (target >= 100,000)")
    print(f"  verdicts {out['counts']}, {out['items']} differences; peak RSS {out['rss_mb']:.0f} MB (interpreter + imports {float(base.stdout):.0f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exchanges", type=int, default=10_000)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--skip-diff", action="store_true")
    args = ap.parse_args()
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="mcptap-bench-") as tmp:
        if not args.skip_replay:
            bench_replay(args.exchanges, Path(tmp))
        if not args.skip_diff:
            bench_diff(args.messages, Path(tmp))


if __name__ == "__main__":
    main()
