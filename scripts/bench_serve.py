#!/usr/bin/env python3
"""Benchmark for ``mcptap serve`` over stdio (prints figures; no asserts).

A raw JSON-RPC client (one request, wait for its answer, next) sends N
``tools/call add`` requests to the official-SDK test server
(tests/e2e/sdk_server.py) through ``mcptap record``; then, in the same run,
the same N calls go to the real server directly and to ``mcptap serve`` of
that capture (also with ``-o``, recording its own session). Printed:
per-call time and calls/s of each, and the ratio
mock/real (target <= 1.0: the mock answers at least as fast as the real
server). Only the calls are timed (after the handshake), best of
``--rounds`` rounds for each side, alternating.

    python scripts/bench_serve.py [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "e2e" / "sdk_server.py")]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def session(argv: list[str], calls: int) -> float:
    """Handshake, then ``calls`` sequential tools/call add; returns the seconds the calls took."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None
    w, r = p.stdin, p.stdout

    def call(i: int, method: str, params: dict | None = None) -> bytes:
        msg: dict = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        w.write(orjson.dumps(msg) + b"\n")
        w.flush()
        while True:
            line = r.readline()
            if not line:
                raise SystemExit(f"{argv[0]}: the server closed its stdout")
            v = orjson.loads(line)
            if v.get("id") == i and "method" not in v:
                return line

    call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
    w.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    w.flush()
    t0 = time.perf_counter()
    for i in range(1, calls + 1):
        line = call(i, "tools/call", {"name": "add", "arguments": {"a": i, "b": 1}})
        if str(i + 1).encode() not in line:
            raise SystemExit(f"wrong answer to call {i}: {line[:200]!r}")
    dt = time.perf_counter() - t0
    w.close()
    p.wait(30)
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cap = str(Path(d) / "cap.jsonl")
        session([*MCPTAP, "record", "-q", "-o", cap, "--", *SERVER], args.calls)
        real, mock, mock_o = [], [], []
        for _ in range(args.rounds):
            real.append(session(SERVER, args.calls))
            mock.append(session([*MCPTAP, "serve", "--quiet", cap], args.calls))
            mock_o.append(session([*MCPTAP, "serve", "--quiet", "-o", str(Path(d) / "own.jsonl"), cap], args.calls))
    n = args.calls
    best_real, best_mock = min(real), min(mock)
    print(f"tools/call add, {n} sequential calls over stdio, best of {args.rounds}")
    print(f"  real SDK server   {best_real / n * 1e6:8.1f} µs/call  {n / best_real:9.0f} calls/s")
    print(f"  mcptap serve      {best_mock / n * 1e6:8.1f} µs/call  {n / best_mock:9.0f} calls/s")
    print(f"  mcptap serve -o   {min(mock_o) / n * 1e6:8.1f} µs/call  {n / min(mock_o):9.0f} calls/s  (recording its own session)")
    print(f"  ratio mock/real   {best_mock / best_real:8.2f}  (target <= 1.00); with -o {min(mock_o) / best_real:.2f}")


if __name__ == "__main__":
    main()
