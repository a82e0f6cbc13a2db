#!/usr/bin/env python3
"""Throughput and memory of `mcptap check`, `show` and `report` on big captures.

Default: generates a synthetic stdio capture of N messages (default
1,000,000: a handshake, then tools/call requests with varying arguments, a
progress notification every tenth call, and their responses), then runs
`mcptap check`, `mcptap show --format json` and `mcptap report` on it as
subprocesses and prints messages/s and peak RSS (from wait4, per child). Memory must be flat: the
same command on a capture 10x smaller should peak at about the same RSS.

--recorded (issue 13 item 4, analysis throughput): two 1,000,000-message
captures written by the real Recorder, as `mcptap record` writes them:

* ``plain``: the traffic above, one message record per message (recorded
  annotations and rules fingerprint real, so `check` reuses them);
* ``chunks``: a server flood of notifications forwarded in 64 KiB chunks while
  analysis falls behind for two chunks in three, so most bytes are stored as
  raw ``chunk`` records (Recorder.stdio_unframed) and are framed and annotated
  by `check` (re-annotation from the bytes).

For each, the same run measures, as subprocesses with process start included
(wall time, CPU time of the process and its children, for mcptap split
as parent/child (check's forked child: wall time is about the slower one's), peak RSS): the
baselines ``wc -l`` and ``parse`` (a `python -c` that reads and orjson-parses
every line of the same file), then `mcptap check` and `mcptap check --full`,
and prints messages/s and each time as a multiple of the ``parse`` baseline,
so the figures mean something on a loaded machine.

    .venv/bin/python scripts/bench_analysis.py                 # 1,000,000 and 100,000 messages
    .venv/bin/python scripts/bench_analysis.py -n 200000 --small 20000
    .venv/bin/python scripts/bench_analysis.py --profile 50000 # cProfile of the re-annotation path
    .venv/bin/python scripts/bench_analysis.py --profile-full 50000   # cProfile of check --full's own path
    .venv/bin/python scripts/bench_analysis.py --no-shapes     # without schema shape checks
    .venv/bin/python scripts/bench_analysis.py --recorded      # check / check --full on recorded captures
    .venv/bin/python scripts/bench_analysis.py --recorded --keep /tmp/caps --repeat 3   # reuse the captures, best of 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
TARGET = 100_000  # messages/s (the synthetic default mode)
TARGETS = {"check": 300_000, "check --full": 150_000}   # messages/s, --recorded (issue 13 item 4)
PARSE = ("import sys, orjson\n"
         "n = 0\n"
         "with open(sys.argv[1], 'rb') as fp:\n"
         "    for line in fp:\n"
         "        orjson.loads(line)\n"
         "        n += 1\n")


def generate(path: Path, n: int) -> int:
    """Write a capture with ``n`` message records; returns the message count."""
    dumps = orjson.dumps
    seq = 0
    t = 0
    count = 0

    def msg(d: str, kind: str, obj: dict) -> bytes:
        nonlocal seq, t, count
        seq += 1
        t += 50
        count += 1
        rec = {"type": "message", "seq": seq, "t_us": t, "dir": d, "kind": kind, "json": obj}
        return dumps(rec) + b"\n"

    with open(path, "wb") as fp:
        fp.write(dumps({"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "bench",
                        "started": "2026-01-01T00:00:00Z", "transport": "stdio", "target": {"argv": ["bench"]}}) + b"\n")
        buf = [
            msg("c2s", "request", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                   "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}}),
            msg("s2c", "response", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                                           "serverInfo": {"name": "b", "version": "1"}}}),
            msg("c2s", "notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ]
        i = 0
        while count < n:
            i += 1
            params: dict = {"name": "echo" if i % 3 else "add", "arguments": {"text": f"message {i}", "n": i}}
            progress = i % 10 == 0
            if progress:
                params["_meta"] = {"progressToken": i}
            buf.append(msg("c2s", "request", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}))
            if progress and count < n:
                buf.append(msg("s2c", "notification", {"jsonrpc": "2.0", "method": "notifications/progress",
                                                       "params": {"progressToken": i, "progress": 1, "total": 1}}))
            if count < n:
                buf.append(msg("s2c", "response", {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"message {i}"}]}}))
            if len(buf) >= 10_000:
                fp.write(b"".join(buf))
                buf.clear()
        seq += 1
        buf.append(dumps({"type": "eof", "seq": seq, "t_us": t, "dir": "c2s"}) + b"\n")
        seq += 1
        buf.append(dumps({"type": "eof", "seq": seq, "t_us": t, "dir": "s2c"}) + b"\n")
        seq += 1
        buf.append(dumps({"type": "end", "seq": seq, "t_us": t}) + b"\n")
        fp.write(b"".join(buf))
    return count


def generate_recorded(path: Path, n: int) -> int:
    """The same traffic written the way `mcptap record` writes it: the bytes
    go through a real Recorder (annotations and the rules fingerprint are
    real), so `check`/`show` may reuse the recorded annotations."""
    sys.path.insert(0, str(ROOT))
    from mcptap.capture.writer import CaptureWriter
    from mcptap.model import Direction
    from mcptap.recorder import Recorder

    tmp = path.with_suffix(".raw.jsonl")
    count = generate(tmp, n)
    t = {"v": 0}
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["bench"]}, clock=lambda: t["v"], started="2026-01-01T00:00:00.000000Z")
    dirs = {"c2s": Direction.C2S, "s2c": Direction.S2C}
    with open(tmp, "rb") as fp:
        fp.readline()
        for line in fp:
            r = orjson.loads(line)
            if r["type"] == "message":
                t["v"] = r["t_us"]
                rec.stdio_bytes(dirs[r["dir"]], orjson.dumps(r["json"]) + b"\n")
            elif r["type"] == "eof":
                rec.stdio_eof(dirs[r["dir"]])
    rec.close(exit_code=0)
    tmp.unlink()
    return count


def _fingerprint() -> str:
    sys.path.insert(0, str(ROOT))
    from mcptap.protocol.fingerprint import rules_fingerprint

    return rules_fingerprint()


def generate_chunked(path: Path, n: int, chunk: int = 64 << 10) -> int:
    """A server flood written the way `mcptap record` writes it when analysis
    falls behind: a handshake, then ``n - 3`` notifications server to client,
    forwarded in ``chunk``-byte pieces (cut anywhere, as reads are); the
    recorder annotates one piece in three and stores the others unframed as
    ``chunk`` records (Recorder.stdio_unframed, as the stdio hand-off does
    while more than its bound waits). Returns the message count."""
    sys.path.insert(0, str(ROOT))
    from mcptap.capture.writer import CaptureWriter
    from mcptap.model import Direction
    from mcptap.recorder import Recorder

    t = {"v": 0}
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["bench-flood"]}, clock=lambda: t["v"], started="2026-01-01T00:00:00.000000Z")
    dumps = orjson.dumps
    hello = [(Direction.C2S, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}}),
             (Direction.S2C, {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {"logging": {}},
                                                                     "serverInfo": {"name": "b", "version": "1"}}}),
             (Direction.C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for d, m in hello:
        t["v"] += 50
        rec.stdio_bytes(d, dumps(m) + b"\n")
    buf = bytearray()
    pieces = 0

    def feed(data: bytes) -> None:
        nonlocal pieces
        t["v"] += 500
        if pieces % 3 == 0:
            rec.stdio_bytes(Direction.S2C, data)
        else:
            rec.stdio_unframed(Direction.S2C, data)
        pieces += 1

    for i in range(n - len(hello)):
        buf += dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "flood", "data": f"line {i}"}})
        buf += b"\n"
        while len(buf) >= chunk:
            feed(bytes(buf[:chunk]))
            del buf[:chunk]
    if buf:
        feed(bytes(buf))
    rec.stdio_eof(Direction.C2S)
    rec.stdio_eof(Direction.S2C)
    rec.close(exit_code=0)
    return n


def for_checkout(path: Path, root: Path, env: dict[str, str]) -> Path:
    """``path`` as the checkout ``root`` would have recorded it: when its rules
    fingerprint differs, a copy whose header names that fingerprint (the
    annotations of this traffic, a handshake and tools/call or notifications
    under 2025-06-18, are the same under both), so its `check` reuses them
    too and the comparison is like for like. Removed with the captures."""
    fp = subprocess.run([sys.executable, "-c", "from mcptap.protocol.fingerprint import rules_fingerprint; print(rules_fingerprint())"],
                        cwd=root, env=dict(env, PYTHONPATH=str(root)), capture_output=True, text=True, check=True).stdout.strip()
    with open(path, "rb") as src:
        header = orjson.loads(src.readline())
        if header.get("rules") == fp:
            return path
        out = path.with_name(path.stem + ".before.jsonl")
        if not out.exists():
            with open(out, "wb") as dst:
                dst.write(orjson.dumps(dict(header, rules=fp)) + b"\n")
                while block := src.read(1 << 20):
                    dst.write(block)
    return out


def count_chunks(path: Path) -> int:
    """``chunk`` records in a capture, read in blocks (the file read whole would
    be counted in the peak RSS of every child forked after it)."""
    n, tail = 0, b""
    needle = b'\n{"type":"chunk",'
    with open(path, "rb") as fp:
        while block := fp.read(1 << 20):
            data = tail + block
            n += data.count(needle)
            tail = data[-(len(needle) - 1):]
    return n


#: ``python -m mcptap.cli.main ARGS`` that also writes the CPU seconds of its children (reaped by its exit) to the file
#: $BENCH_CHILD_CPU
CHILD_CPU = ("import atexit, os, resource, runpy, sys\n"
           "def own():\n"
           "    r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "    with open(os.environ['BENCH_CHILD_CPU'], 'w') as f:\n"
           "        f.write(repr(r.ru_utime + r.ru_stime))\n"
           "atexit.register(own)\n"
           "sys.argv[0] = 'mcptap'\n"
           "runpy.run_module('mcptap.cli.main', run_name='__main__', alter_sys=True)\n")


def measure(args: list[str], env: dict[str, str], argv: list[str] | None = None, root: Path = ROOT) -> tuple[float, float, int, int, float | None]:
    """Run ``mcptap ARGS`` (or ``argv``) with stdout to /dev/null, from the
    checkout ``root``: (wall seconds, CPU seconds of it and its children,
    peak RSS KiB, exit status, CPU seconds of the mcptap process's children
    or None: of ``check``'s two processes, the rest is the parent's)."""
    if root != ROOT:
        env = dict(env, PYTHONPATH=str(root))
    child_file = tempfile.NamedTemporaryFile(prefix="bench-cpu-", delete=False)
    child_file.close()
    env = dict(env, BENCH_CHILD_CPU=child_file.name)
    t0 = time.perf_counter()
    try:
        with open(os.devnull, "wb") as null:
            proc = subprocess.Popen(argv or [sys.executable, "-c", CHILD_CPU, *args], stdout=null, cwd=root, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        child = float(Path(child_file.name).read_text() or "nan") if argv is None else None
    finally:
        os.unlink(child_file.name)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status), child


def precompile(root: Path) -> None:
    """The bytecode of ``root``'s mcptap written (``compileall``, into its ignored
    ``__pycache__``), as an installed mcptap has it: with PYTHONDONTWRITEBYTECODE set
    (as on the shared machines) every measured start compiled each module from source
    again, ~0.17 s CPU of a `check` (0.35 against 0.18 s on a 1,000-line capture)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "mcptap")], check=True, stdout=subprocess.DEVNULL)


def recorded_throughput(n: int, keep: str | None, repeat: int, env: dict[str, str], before: Path | None = None) -> int:
    """The --recorded mode (module doc): both captures, baselines, check, check
    --full; ``before``: another checkout (e.g. main) whose check and check --full
    are measured in the same run too."""
    d = Path(keep or tempfile.mkdtemp(prefix="mcptap-bench-"))
    d.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, float, float, float, int, int]] = []
    for root in (ROOT, before) if before is not None else (ROOT,):
        precompile(root)
    try:
        for name, gen in (("plain", generate_recorded), ("chunks", generate_chunked)):
            path = d / f"bench-{name}-{n}.jsonl"
            rules = None
            if path.exists():
                with open(path, "rb") as fp:
                    rules = orjson.loads(fp.readline()).get("rules")
            if rules != _fingerprint():             # recorded by other rules: record it again
                for old in d.glob(f"bench-{name}-{n}.*"):
                    old.unlink()
                t0 = time.perf_counter()
                gen(path, n)
                print(f"generated {name}: {path.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - t0:.1f}s", flush=True)
            chunks = count_chunks(path)
            print(f"{name}: {n:,} messages, {path.stat().st_size / 2**20:.0f} MiB, {chunks:,} chunk records", flush=True)
            cmds = [("wc -l", None, ["wc", "-l", str(path)], ROOT),
                    ("parse", None, [sys.executable, "-c", PARSE, str(path)], ROOT),
                    ("check", ["check", "--fail-on", "never", str(path)], None, ROOT),
                    ("check --full", ["check", "--full", "--fail-on", "never", str(path)], None, ROOT)]
            if before is not None:
                bpath = for_checkout(path, before, env)
                cmds += [(f"{label} (before)", [str(bpath) if a == str(path) else a for a in args or []], None, before)
                         for label, args, argv, _ in cmds[2:]]
            best: dict[str, tuple[float, float, int, int, float | None]] = {}
            for _ in range(repeat):
                for label, args, argv, root in cmds:       # interleaved, so a load change hits all alike
                    r = measure(args or [], env, argv, root)
                    if label not in best or r[0] < best[label][0]:
                        best[label] = r
            base = best["parse"][0]
            for label, _, _, _ in cmds:
                wall, cpu, rss, status, child = best[label]
                rows.append((name, label, wall, cpu, wall / base, rss, status))
                # check's parent and child: wall time is about the slower one's (both cores may be used)
                split = f"  parent/child cpu {cpu - child:5.2f}/{child:5.2f}s" if child is not None else ""
                print(f"  {label:<23} {wall:7.2f}s wall {cpu:7.2f}s cpu  {n / wall:>10,.0f} msg/s  {wall / base:5.2f}x parse "
                      f"(cpu {cpu / best['parse'][1]:5.2f}x)  "
                      f"peak RSS {rss / 1024:5.0f} MiB  exit {status}{split}", flush=True)
    finally:
        if keep is None:
            for p in d.glob("bench-*"):
                p.unlink()
            d.rmdir()
    print()
    for name, label, wall, _, ratio, _, _ in rows:
        if label.removesuffix(" (before)") in TARGETS:
            target = TARGETS[label.removesuffix(" (before)")]
            base = wall / ratio
            verdict = "meets" if n / wall >= target else "BELOW"
            print(f"{name:<7} {label:<23} {n / wall:>10,.0f} msg/s: {verdict} the {target:,} msg/s target; {ratio:.2f}x this run's parse "
                  f"baseline ({base:.2f}s; the target is {n / target / base:.2f}x it)")
    return 0


def profile(n: int, shapes: bool) -> None:
    import cProfile
    import pstats

    from mcptap.check.reannotated import Reannotated
    from mcptap.check.report import check_stream

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.jsonl"
        generate(path, n)
        ra = Reannotated.open(str(path), shapes=shapes)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        check_stream(ra, str(path))
        prof.disable()
        print(f"{n:,} messages in {time.perf_counter() - t0:.1f}s under the profiler (shapes={shapes})")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def profile_full(n: int, shapes: bool) -> None:
    """cProfile of `check --full`'s own path (check/parallel.py: FullScan in
    this process; with shapes, the shape checks' second process is not profiled)
    on an N-message capture written by the real Recorder."""
    import cProfile
    import pstats

    from mcptap.check import parallel

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.jsonl"
        generate_recorded(path, n)
        parallel.check_capture(str(path), reuse=False, shapes=shapes)     # imports and validators built
        prof = cProfile.Profile()
        t0 = time.process_time()
        prof.enable()
        parallel.check_capture(str(path), reuse=False, shapes=shapes)
        prof.disable()
        print(f"{n:,} messages in {time.process_time() - t0:.1f}s CPU under the profiler (shapes={shapes})")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1_000_000, help="messages in the big capture")
    ap.add_argument("--small", type=int, default=100_000, help="messages in the small capture (memory flatness)")
    ap.add_argument("--profile", type=int, metavar="N", help="profile check on an N-message capture and exit")
    ap.add_argument("--profile-full", type=int, metavar="N",
                    help="profile check --full's own path on an N-message capture written by the Recorder and exit")
    ap.add_argument("--no-shapes", action="store_true", help="pass --no-shapes (skip schema shape checks)")
    ap.add_argument("--recorded", action="store_true",
                    help="check and check --full on 1,000,000-message captures written by the real Recorder "
                         "(plain message records; chunk records), against same-run baselines")
    ap.add_argument("--keep", metavar="DIR", help="--recorded: keep (and reuse) the generated captures in DIR")
    ap.add_argument("--repeat", type=int, default=1, help="--recorded: runs per command (the best is shown)")
    ap.add_argument("--before", metavar="CHECKOUT", type=Path,
                    help="--recorded: also measure check and check --full of another checkout (e.g. main) in the same run")
    args = ap.parse_args()
    if args.profile:
        profile(args.profile, not args.no_shapes)
        return 0
    if args.profile_full:
        profile_full(args.profile_full, not args.no_shapes)
        return 0
    env = dict(os.environ, NO_COLOR="1")
    if args.recorded:
        return recorded_throughput(args.n, args.keep, args.repeat, env, args.before)
    extra = ["--no-shapes"] if args.no_shapes else []
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in (args.small, args.n):
            path = Path(d) / f"bench-{n}.jsonl"
            t0 = time.perf_counter()
            count = generate(path, n)
            gen = time.perf_counter() - t0
            size = path.stat().st_size
            print(f"generated {count:,} messages ({size / 2**20:.0f} MiB) in {gen:.1f}s", flush=True)
            for label, cli in (("check", ["check", "--fail-on", "never", *extra, str(path)]),
                               ("show --format json", ["show", "--format", "json", *extra, str(path)]),
                               ("report", ["report", *extra, str(path), "-o", str(Path(d) / "report.html")])):
                secs, _, rss, status, _ = measure(cli, env)
                rows.append((label, count, secs, count / secs, rss))
                print(f"  {label:<20} {secs:7.1f}s  {count / secs:>9,.0f} msg/s  peak RSS {rss / 1024:6.0f} MiB  exit {status}", flush=True)
            path.unlink()
    by = {(label, n): (rate, rss) for label, n, _, rate, rss in rows}
    print()
    for label in ("check", "show --format json", "report"):
        (_rs, ms), (rb, mb) = by[(label, rows[0][1])], by[(label, rows[-1][1])]
        verdict = "flat" if mb < ms * 1.25 + 10 * 1024 else "GROWS"
        speed = "meets" if rb >= TARGET else "BELOW"
        print(f"{label:<20} {rb:>9,.0f} msg/s ({speed} the {TARGET:,} msg/s target); peak RSS {ms / 1024:.0f} -> {mb / 1024:.0f} MiB "
              f"for {rows[0][1]:,} -> {rows[-1][1]:,} messages: memory {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
