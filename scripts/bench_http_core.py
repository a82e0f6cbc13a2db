#!/usr/bin/env python3
"""CPU per keep-alive JSON POST round trip of the HTTP tap's two halves, in process, no sockets.

    .venv/bin/python scripts/bench_http_core.py [--requests 3000] [--repeat 5] [--baseline DIR]

``relay``: the relay core (``HttpRelay.client_data``/``upstream_data`` on the
bytes ``bench_http.py``'s client and upstream exchange) plus the hand-off
encoding (``fact_codec.encode``), i.e. the relay process's work without trio
and the sockets; ``recorder``: what the recorder process does with those
batches (``fact_codec.decode``, ``HttpObserver``, ``Recorder``, the capture
write, flushed every 100 batches); ``h11 floor``: h11 alone forwarding the
same bytes (``bench_http.py``'s FLOOR_PROXY without trio); ``h11 floor, no
writer``: the same with each event passed to the other connection's state
machine only (``_process_event``: no ``send``, so no response clean-up and no
writer), the most that forwarding unchanged bytes as read can save while h11
keeps both connections' state. Process CPU time,
the best of ``--repeat`` runs (the machine may be shared: printed, never
asserted). ``--baseline DIR`` measures another checkout's ``mcptap`` package
(a clone of main) the same way, in a subprocess, interleaved: before/after
figures in the same run.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def req(i: int) -> bytes:
    body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' % i
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def resp(i: int) -> bytes:
    out = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}' % (i, b"x" * 200)
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out)


def measure(n: int, repeat: int) -> tuple[float, float, float, float]:
    """(relay, recorder, h11 floor, h11 floor without serialising) CPU seconds per round trip, best of ``repeat``."""
    import h11

    from mcptap.capture.writer import CaptureWriter
    from mcptap.clock import monotonic_us_clock, utc_timestamp
    from mcptap.recorder import Recorder
    from mcptap.relay.http.events import Upstream
    from mcptap.relay.http.observe import HttpObserver
    from mcptap.relay.http.proxy import HttpRelay
    from mcptap.transport import fact_codec as fc
    from mcptap.transport.http_config import LOOPBACK_NAMES

    up = Upstream.parse("http://127.0.0.1:9/mcp")
    best = [1e9, 1e9, 1e9, 1e9]
    for rep in range(repeat):
        gc.collect()
        reqs, resps = [req(i) for i in range(rep * n, rep * n + n)], [resp(i) for i in range(rep * n, rep * n + n)]
        relay = HttpRelay(up, listen_authority="127.0.0.1:8000", allowed_hosts=LOOPBACK_NAMES)
        cid, _ = relay.client_opened("127.0.0.1:5555")
        frames: list[Any] = []
        t0 = time.process_time()
        for q, a in zip(reqs, resps, strict=True):
            frames.append(fc.encode(relay.client_data(cid, q)))
            frames.append(fc.encode(relay.upstream_data(cid, 1, a)))
        best[0] = min(best[0], (time.process_time() - t0) / n)
        with tempfile.TemporaryDirectory() as tmp:
            rec = Recorder(CaptureWriter.open(os.path.join(tmp, "c.jsonl")), "http", target={"url": "http://127.0.0.1:9/mcp"},
                           clock=monotonic_us_clock(), started=utc_timestamp())
            obs = HttpObserver(rec, up, listen_authority="127.0.0.1:8000")
            t0 = time.process_time()
            for k, e in enumerate(frames):
                if e is None:
                    continue
                bodies = iter(e[1])
                obs.handle(fc.decode(e[0], lambda _n, b=bodies: next(b)), flush=False)
                if k % 100 == 99:
                    rec.hold_flush = False
                    rec.flush()
            rec.hold_flush = False
            rec.flush()
            best[1] = min(best[1], (time.process_time() - t0) / n)
            rec.close(exit_code=0)
        srv, cli = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
        t0 = time.process_time()
        for q, a in zip(reqs, resps, strict=True):
            for src, dst, data in ((srv, cli, q), (cli, srv, a)):
                src.receive_data(data)
                out = []
                while (ev := src.next_event()) is not h11.NEED_DATA:
                    out.append(dst.send(ev) or b"")
                    if type(ev) is h11.EndOfMessage:
                        break
                b"".join(out)
            srv.start_next_cycle()
            cli.start_next_cycle()
        best[2] = min(best[2], (time.process_time() - t0) / n)
        srv, cli = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
        t0 = time.process_time()
        for q, a in zip(reqs, resps, strict=True):
            for src, dst, data in ((srv, cli, q), (cli, srv, a)):
                src.receive_data(data)
                while (ev := src.next_event()) is not h11.NEED_DATA:
                    dst._process_event(dst.our_role, ev)        # the send side's state pass, no clean-up or writer
                    if type(ev) is h11.EndOfMessage:
                        break
            srv.start_next_cycle()
            cli.start_next_cycle()
        best[3] = min(best[3], (time.process_time() - t0) / n)
    return best[0], best[1], best[2], best[3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3, help="with --baseline: runs of each, interleaved")
    ap.add_argument("--baseline", metavar="DIR", type=Path, default=None)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)      # a subprocess run: print the figures
    args = ap.parse_args()
    if args.one:
        import mcptap

        assert Path(mcptap.__file__).resolve().is_relative_to(Path.cwd().resolve()), mcptap.__file__     # the checkout asked for
        print(*measure(args.requests, args.repeat))
        return
    roots = {"tap": ROOT, **({"base": args.baseline.resolve()} if args.baseline else {})}
    got: dict[str, list[tuple[float, ...]]] = {k: [] for k in roots}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", file=sys.stderr)
    for _ in range(args.rounds if args.baseline else 1):
        for k, root in roots.items():
            env = {**os.environ, "PYTHONPATH": str(root)}
            out = subprocess.run([sys.executable, __file__, "--one", "--requests", str(args.requests), "--repeat", str(args.repeat)],
                                 env=env, cwd=root, capture_output=True, text=True, check=True).stdout
            got[k].append(tuple(float(x) for x in out.split()))
    print(f"{'us CPU per round trip (best)':<32}" + "".join(f"{k:>10}" for k in roots) + ("   tap/base" if args.baseline else ""))
    for i, what in enumerate(("relay core + hand-off", "recorder", "h11 floor (same bytes)", "h11 floor, no writer")):
        vals = [min(r[i] for r in got[k]) * 1e6 for k in roots]
        ratio = f"{vals[0] / vals[1]:10.2f}x" if len(vals) > 1 else ""
        print(f"{what:<32}" + "".join(f"{v:>10.1f}" for v in vals) + ratio)


if __name__ == "__main__":
    main()
