#!/usr/bin/env python3
"""Benchmark live OTLP export (``mcptap record --otlp-endpoint``) against the
same tap without it, in one run.

    .venv/bin/python scripts/bench_otel.py [--rtt 5000] [--flood 20000]

Configurations (same client, same raw server as scripts/bench_stdio.py):

* ``direct``   client ↔ server
* ``mcptap``   client ↔ ``mcptap record -o FILE -- server``
* ``otel``     the same with ``--otlp-endpoint`` pointing at a loopback OTLP/HTTP
               receiver (a separate process that decodes every request with
               opentelemetry-proto and counts the spans)

Measures p50/p99 round-trip time of ``ping`` (50 interleaved blocks, after a
warm-up), the ratio otel/mcptap of the p50 (target: ≤ 1.10, i.e. live export
adds at most 10 %) overall and as the median of the per-block ratios (a shared
machine's load changes between blocks; the median of paired blocks is the
steadier figure), a one-way s2c notification flood (msg/s; every notification
is a span of its own, so this is the export's worst case), and how many spans
the receiver got versus the spans mcptap handed over (its closing ``note``).
Numbers are printed, never asserted: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stdio import PY, SERVER, Peer, pct


def receiver(port_file: str, count_file: str) -> None:
    """Child mode: an OTLP/HTTP traces receiver counting decoded spans."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

    total = {"spans": 0, "requests": 0}
    answer = ExportTraceServiceResponse().SerializeToString()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            req = ExportTraceServiceRequest.FromString(body)
            total["spans"] += sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
            total["requests"] += 1
            Path(count_file).write_text(json.dumps(total))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Path(port_file).write_text(str(server.server_address[1]))
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtt", type=int, default=5000, help="round trips per configuration (default 5000)")
    ap.add_argument("--flood", type=int, default=20_000, help="s2c notifications in the flood (default 20000)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="mcptap-bench-otel-"))
    server = tmp / "raw_server.py"
    server.write_text(SERVER)
    srv = [PY, str(server)]
    port_file, count_file = tmp / "port", tmp / "count"
    recv = subprocess.Popen([PY, __file__, "--receiver", str(port_file), str(count_file)])
    deadline = time.time() + 30
    while not port_file.exists() or not port_file.read_text():
        if time.time() > deadline or recv.poll() is not None:
            sys.exit("bench_otel: the OTLP receiver did not start (is opentelemetry-proto installed? make install)")
        time.sleep(0.05)
    endpoint = f"http://127.0.0.1:{port_file.read_text()}"
    caps = {"mcptap": tmp / "plain.jsonl", "otel": tmp / "otel.jsonl"}
    configs = {
        "direct": srv,
        "mcptap": [PY, "-m", "mcptap.cli.main", "record", "-q", "-o", str(caps["mcptap"]), "--", *srv],
        "otel": [PY, "-m", "mcptap.cli.main", "record", "-q", "-o", str(caps["otel"]), "--otlp-endpoint", endpoint, "--", *srv],
    }
    peers = {name: Peer(argv) for name, argv in configs.items()}
    lats: dict[str, list[float]] = {name: [] for name in peers}
    for peer in peers.values():
        peer.handshake()
        peer.rtts(500)                                     # warm-up
    blocks = 50
    block_ratios = []
    for i in range(blocks):
        per = {}
        for name, peer in peers.items():
            got = peer.rtts(args.rtt // blocks + (1 if i < args.rtt % blocks else 0))
            lats[name] += got
            per[name] = pct(got, 0.5)
        block_ratios.append(per["otel"] / per["mcptap"])
    floods = {name: args.flood / peer.flood(args.flood) for name, peer in peers.items()}
    for peer in peers.values():
        peer.close()
    note: dict[str, object] = {}
    failure = ""
    for line in caps["otel"].read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "note" and "spans" in rec:
            note = rec
        elif rec.get("type") == "note" and "message" in rec:
            failure = rec["message"]
    # spans pending at the capture's end are still being sent by the export process
    deadline = time.time() + 8
    while time.time() < deadline:
        got = json.loads(count_file.read_text()) if count_file.exists() else {"spans": 0, "requests": 0}
        if got["spans"] >= (note.get("spans") or 0):
            break
        time.sleep(0.2)
    recv.send_signal(signal.SIGTERM)
    recv.wait(10)
    got = json.loads(count_file.read_text()) if count_file.exists() else {"spans": 0, "requests": 0}

    print(f"\nround trips: {args.rtt} per config, interleaved in {blocks} blocks (after 500 warm-up); flood: {args.flood:,} s2c notifications")
    print(f"{'config':8s} {'p50 µs':>8s} {'p99 µs':>8s} {'flood msg/s':>12s}")
    p50 = {}
    for name, lat in lats.items():
        p50[name] = pct(lat, 0.5)
        print(f"{name:8s} {p50[name]:8.1f} {pct(lat, 0.99):8.1f} {floods[name]:12,.0f}")
    ratio = p50["otel"] / p50["mcptap"]
    block_ratio = statistics.median(block_ratios)
    print(f"\nlive export: p50 {p50['otel']:.1f} µs vs {p50['mcptap']:.1f} µs without = ratio {ratio:.3f} "
          f"({(ratio - 1) * 100:+.1f} %; target <= 1.10); median of the {blocks} per-block p50 ratios {block_ratio:.3f} "
          f"(robust to load changes between blocks)")
    print(f"flood: {floods['otel'] / floods['mcptap']:.2f}x the plain tap's rate")
    print(f"spans: mcptap handed {note.get('spans', '?')}, exported {note.get('exported', '?')}, failed {note.get('failed', '?')}, "
          f"pending at close {note.get('pending', '?')}; receiver decoded {got['spans']} in {got['requests']} requests (pending ones included)")
    if failure:
        print(f"export note: {failure}")
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--receiver":
        receiver(sys.argv[2], sys.argv[3])
    else:
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)   # the plain config must not export
        main()
