#!/usr/bin/env python3
"""CPU of the relay's endpoint rewriter (relay/http/endpoint.py) on 32 MiB floods, in process.

    .venv/bin/python scripts/bench_endpoint.py ROOT KIND [prof]

ROOT: the checkout whose ``mcptap`` is measured (a baseline clone or this one:
run both in the same run); KIND: ``events`` (endpoint events naming the
upstream: each rewritten), ``relative`` (endpoint events kept), ``lines``
(``event: endpoint`` lines without a blank line: each block given up at
HOLD_LIMIT), ``json`` (data events whose JSON mentions "endpoint"). Process
CPU, best of 3 (printed, never asserted); ``prof``: a cProfile of one run.
"""

import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from mcptap.relay.http.endpoint import EndpointRewriter
from mcptap.relay.http.events import Upstream
from mcptap.relay.http.rewrite import endpoint_rewrite_fn

UNITS = {
    "events": b"event: endpoint\ndata: http://127.0.0.1:9/messages?session_id=abc\n\n",
    "relative": b"event: endpoint\ndata: /messages?session_id=abc\n\n",
    "lines": b"event: endpoint\n",
    "json": b'data: {"jsonrpc":"2.0","method":"x","params":{"endpoint":"y"}}\n\n',
}
kind = sys.argv[2]
up = Upstream.parse("http://127.0.0.1:9/sse")
unit = UNITS[kind]
stream = unit * ((32 << 20) // len(unit))
chunks = [stream[k:k + (256 << 10)] for k in range(0, len(stream), 256 << 10)]


def run() -> tuple[int, int]:
    rw = EndpointRewriter(endpoint_rewrite_fn(up, "127.0.0.1:5"))
    n = sum(len(rw.feed(c)) for c in chunks) + len(rw.flush())
    return n, len(rw.rewrites)


best, out = 1e9, (0, 0)
for _ in range(3):
    t = time.process_time()
    out = run()
    best = min(best, time.process_time() - t)
print(f"{kind}: {len(stream) >> 20} MiB -> {out[0]} bytes, {out[1]} rewrites, cpu {best * 1e3:.0f} ms")
if len(sys.argv) > 3:
    prof = str(Path(tempfile.mkdtemp()) / "endpoint.prof")
    cProfile.run("run()", prof)
    pstats.Stats(prof).sort_stats("tottime").print_stats(8)
