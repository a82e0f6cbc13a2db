#!/usr/bin/env python3
"""Peak memory of the sans-IO HTTP tap (relay core, observer, recorder, capture
write; tests/sansio_tap.py) for one large SSE event over many ``data:`` lines.

    .venv/bin/python scripts/bench_sse_lines.py ROOT LINE_BYTES EOL MIB [single]

ROOT: the checkout whose ``mcptap`` is measured (run a baseline clone and this
one in the same run, ``PYTHONPATH=ROOT``); LINE_BYTES: bytes of each data line
(its value a JSON string of an array); EOL: ``\n`` or ``\r\n``; MIB: the
event's size; ``single``: the same JSON on one data line. The input is made
piece by piece (never held); printed: the peak RSS over the start (VmHWM, reset
through /proc/self/clear_refs) as a multiple of the event, and the CPU time.
"""

import gc
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from tests.sansio_tap import SansIoTap, post

MIB = 1 << 20
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'


def hwm() -> int:
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM"))


class Counted:
    def __init__(self) -> None:
        self.n = 0

    def __iadd__(self, d: bytes) -> "Counted":
        self.n += len(d)
        return self


line = int(sys.argv[2])
eol = sys.argv[3].encode().decode("unicode_escape").encode()
size = int(sys.argv[4]) * MIB
one = b"data: " + json.dumps("y" * max(min(line, 1 << 16) - 9, 1)).encode() + b"," + eol
count = size // len(one)
event_len = len(b"id: 1" + eol + b"data: [" + eol) + count * len(one) + len(b'data: ""]' + eol + eol)
single = line >= size or len(sys.argv) > 5
if single:
    event_len = len(b"id: 1" + eol + b"data: [" + eol) - len(eol) + count * (len(one) - len(eol) - 6) + len(b'""]' + eol + eol)
def event_pieces():
    if single:
        yield b"id: 1" + eol + b"data: ["
        o = one[6:-len(eol)]
        group = max(1, (256 << 10) // len(o))
        k = 0
        while k < count:
            m = min(group, count - k)
            yield o * m
            k += m
        yield b'""]' + eol + eol
        return
    yield b"id: 1" + eol + b"data: [" + eol
    group = max(1, (256 << 10) // len(one))
    k = 0
    while k < count:
        m = min(group, count - k)
        yield one * m
        k += m
    yield b'data: ""]' + eol + eol
def reads():
    yield SSE_HEAD
    yield b"%x\r\n" % event_len
    yield from event_pieces()
    yield b"\r\n0\r\n\r\n"
with tempfile.TemporaryDirectory() as d:
    t = SansIoTap(Path(d) / "c.jsonl")
    t.to_client = Counted()
    t.client(post(b"/mcp", CALL))
    gc.collect()
    rss0 = hwm()
    open('/proc/self/clear_refs', 'w').write('5')
    rss0 = hwm()
    c0 = time.process_time()
    for data in reads():
        t.upstream(data)
    c1 = time.process_time()
    real = hwm() - rss0
    recs = [r for r in t.records() if r.get("type") == "message" and r.get("dir") == "s2c"]
    assert len(recs) == 1, len(recs)
    print(f"lines {count + 2} event {event_len / MIB:.1f} MiB: peak +{real / MIB:.1f} MiB = {real / event_len:.2f}x, cpu {1e3 * (c1 - c0):.0f} ms")
