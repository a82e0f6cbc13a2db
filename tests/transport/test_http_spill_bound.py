"""The HTTP tap's spill file has a size bound (transport/spill_bound.py): past
it the relay drops whole batches (never waits), counts them in one LOST frame,
and the capture's gap records say how many bytes each way were forwarded but
not recorded; once the recorder read the file back and it was rewound,
batches are set aside (and recorded) again. The recorder is held back with
SIGSTOP: nothing here measures time."""

from __future__ import annotations

import marshal
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.transport import fact_codec as fc
from mcptap.transport import http_recorder, spill_bound
from mcptap.transport.http_recorder import start_recorder
from mcptap.transport.http_recorder_child import Hooks, child_main
from mcptap.transport.spill import FULL

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 2 << 20


class _Counting:
    """An observer that counts and digests forwarded bytes (as HttpObserver) and
    writes one note per batch."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def lost(self, exchanges: set[int] | None, tails: dict[int, bytes] | None = None) -> None:
        """Batches were not recorded (``HttpObserver.lost``): nothing to cut here."""

    def close_out(self) -> None:
        """The facts are over (``HttpObserver.close_out``): no exchange to close here."""

    def handle(self, items: list[Any], flush: bool = True) -> None:
        for it in items:
            if isinstance(it, r.SendClient):
                self.rec.forwarded(Direction.S2C, it.data)
            elif isinstance(it, r.SendUpstream):
                self.rec.forwarded(Direction.C2S, it.data)
        self.rec.note("t", body=items[0].data[:6].decode())


def _start(tmp_path: Path) -> tuple[http_recorder.RecorderLink, list[str]]:
    rec = Recorder(CaptureWriter.open(str(tmp_path / "c.jsonl")), "http", clock=lambda: 0, started="2026-01-01T00:00:00Z")
    said: list[str] = []
    ticks = [0]

    def clock() -> int:
        ticks[0] += 7
        return ticks[0]

    hooks = Hooks(rec, lambda authority: _Counting(rec), lambda: None,    # type: ignore[arg-type,return-value]
                  lambda code, extra: rec.close(exit_code=code, **extra))
    link = start_recorder(lambda f, s, spill: child_main(f, s, spill, hooks), clock, said.append, str(tmp_path))
    link.observer("127.0.0.1:5")
    return link, said


def _batch(i: int, size: int, up: int = 0) -> list[Any]:
    body = b"%06d" % i + b"x" * (size - 6)
    return [r.ResponseBody(i, 1, body), r.SendClient(1, body), *([r.SendUpstream(1, 2, b"u" * up)] if up else [])]


def test_a_flood_past_the_bound_is_dropped_counted_and_recording_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(spill_bound.ENV_LIMIT, raising=False)
    monkeypatch.setattr(spill_bound, "LIMIT", LIMIT)
    link, said = _start(tmp_path)
    assert link._spill.limit == LIMIT
    size = 200 << 10
    sizes: list[int] = []
    os.kill(link.pid, signal.SIGSTOP)                    # the recorder is behind: pipe, memory, spill file, then dropped
    try:
        for i in range(60):
            link.handle(_batch(i, size, up=10))
            sizes.append(os.fstat(link._spill._fd).st_size)
        assert len(link._q) < 30 and link._q[-1][0][0] == fc.LOST              # the drops are one LOST frame
    finally:
        os.kill(link.pid, signal.SIGCONT)
    assert max(sizes) <= LIMIT and sizes[-1] > LIMIT // 2
    dropped = link.lost_bytes
    assert dropped > 4 * size
    while link._q:                                       # the relay's trio task would write these out as the pipe drains
        if not link._drain():
            time.sleep(0.01)
    end = time.monotonic() + 60
    while link._spill._end and time.monotonic() < end:   # hang guard: read back whole, then rewound
        link._read_status_once()
        time.sleep(0.01)
    assert link._spill._end == 0
    os.kill(link.pid, signal.SIGSTOP)                    # behind again: within the bound, nothing is dropped
    try:
        for i in range(60, 75):
            link.handle(_batch(i, size))
    finally:
        os.kill(link.pid, signal.SIGCONT)
    assert link._spill._end > 0 and link.lost_bytes == dropped
    assert link.finish(0) == http_recorder.Outcome()
    assert any(s.startswith("capture incomplete: ") and f"({dropped} forwarded bytes)" in s for s in said), said
    c = read_capture(str(tmp_path / "c.jsonl"))
    got = [int(n["body"]) for n in c.records if n["type"] == "note"]
    assert got == sorted(got) and got[-15:] == list(range(60, 75))          # burst 2 whole
    missing = sorted(set(range(60)) - set(got))
    assert missing and missing == list(range(missing[0], missing[-1] + 1))  # one run of batches, in the middle
    gaps = [x for x in c.records if x["type"] == "gap"]
    assert {g["dir"] for g in gaps} == {"c2s", "s2c"}
    assert all("size bound" in g["reason"] and f"{len(missing)} batch(es)" in g["reason"] for g in gaps)
    by = {g["dir"]: g["bytes"] for g in gaps}
    assert by == {"s2c": len(missing) * size, "c2s": len(missing) * 10} and sum(by.values()) == dropped
    assert c.end is not None and c.end["s2c"]["bytes"] == 75 * size and c.end["c2s"]["bytes"] == 60 * 10
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(tmp_path / "c.jsonl")],
                           capture_output=True, timeout=120, cwd=ROOT)
    codes = {x["code"] for x in orjson.loads(check.stdout)["captures"][0]["codes"]}
    assert check.returncode == 1 and "capture.gap" in codes, check.stdout


def test_forwarded_sizes_reads_every_way_a_write_travels() -> None:
    big = b"B" * (fc.OOB_FROM + 3)
    chunk = b"%x\r\n" % len(big) + big + b"\r\n"
    items = [r.SendUpstream(1, 2, b"abc"), r.ResponseBody(4, 1, big), r.SendClient(1, chunk),
             r.SendClient(1, b"C" * (fc.OOB_FROM + 1)), r.SendClient(1, b"tiny"), r.RequestBody(4, 1, b"q" * 50)]
    enc = fc.encode(items)
    assert enc is not None
    assert fc.forwarded_sizes(enc[0]) == (3, len(chunk) + fc.OOB_FROM + 1 + 4)


def test_a_start_or_end_frame_the_spill_file_cannot_take_waits_in_memory(tmp_path: Path) -> None:
    link, said = _start(tmp_path)
    real = link._spill.append_pieces
    link._spill.append_pieces = lambda bufs: FULL       # type: ignore[method-assign]
    for kind in (fc.START, fc.END):
        frame = fc.frame(kind, 1, marshal.dumps((0, {})))
        assert link._spilled(frame) is frame
    batch = fc.frame(fc.BATCH, 1, *fc.encode(_batch(1, 100)))     # type: ignore[misc]
    lost = link._spilled(batch)
    assert lost is not None and lost[0][0] == fc.LOST
    # a batch, its bytes, c2s, s2c, the bound, the exchange it carried (ResponseBody of exchange 1)
    assert fc.read_lost(lost[1]) == (1, sum(map(len, batch)), 0, 100, 1, [1])
    link._q.append(lost)                                 # queued last: the next drop is counted in it, in place
    other = fc.frame(fc.BATCH, 2, *fc.encode([r.RequestBody(5, 2, b"q" * 9), r.SendUpstream(2, 1, b"u" * 9)]))  # type: ignore[misc]
    assert link._spilled(other) is None
    assert fc.read_lost(lost[1]) == (2, sum(map(len, batch)) + sum(map(len, other)), 9, 100, 1, [1, 5])
    assert fc.HEAD.unpack(lost[0]) == (fc.LOST, 1, len(lost[1]), 0)       # dated by its first batch; its meta's size
    link._q.pop()
    link._spill.append_pieces = real                     # type: ignore[method-assign]
    link.finish(0)


# -- end to end: `mcptap record --upstream` and an SSE flood while the recorder is held back ------

EVENT = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"' + b"x" * 900 + b'"}}\n\n'
PIECE = b"%x\r\n" % (len(EVENT) * 64) + EVENT * 64 + b"\r\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
FLOOD = 24 << 20                                   # read by the client: far past the 4 MiB bound
#: the recorder process (forked from the tap: the patch is inherited) waits while HOLD exists
HELD = ("import os, time, mcptap.relay.http.observe as o\n"
        "real = o.HttpObserver.handle\n"
        "def handle(self, *a, **k):\n"
        "    while os.path.exists(os.environ['HOLD']): time.sleep(0.01)\n"
        "    return real(self, *a, **k)\n"
        "o.HttpObserver.handle = handle\n"
        "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


def _flood(srv: socket.socket) -> None:
    c, _ = srv.accept()
    with c:
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += c.recv(65536)
            c.sendall(HEAD)
            while True:
                c.sendall(PIECE)
        except OSError:
            pass


def _dechunk(raw: bytes) -> bytes:
    """The body in chunked transfer coding ``raw`` (its last chunk may be cut)."""
    out, pos = [], 0
    while True:
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            break
        n = int(raw[pos:eol], 16)
        out.append(raw[eol + 2:eol + 2 + n])
        pos = eol + 4 + n
        if n == 0 or pos > len(raw):
            break
    return b"".join(out)


def _spill_size(pid: int) -> int:
    """The size of the tap's (unlinked) spill file, through its descriptor in /proc."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if ".mcptap-spill-" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                return os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            pass
    return 0


def test_an_sse_flood_past_the_bound_is_forwarded_whole_and_the_capture_says_what_it_dropped(tmp_path: Path) -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_flood, args=(srv,), daemon=True).start()
    cap, hold = tmp_path / "c.jsonl", tmp_path / "hold"
    hold.touch()
    proc = subprocess.Popen([sys.executable, "-c", HELD, "record", "--upstream", f"http://127.0.0.1:{srv.getsockname()[1]}/mcp",
                             "-o", str(cap), "--strict-capture"], stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "HOLD": str(hold), spill_bound.ENV_LIMIT: "4M"})
    sizes: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            sizes.append(_spill_size(proc.pid))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        assert proc.stderr is not None
        authority = proc.stderr.readline().split()[3].split("/")[2]
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'
        got = bytearray()
        with socket.create_connection(tuple(authority.split(":"))) as cl:   # type: ignore[arg-type]
            cl.sendall(b"POST /mcp HTTP/1.1\r\nHost: " + authority.encode() + b"\r\nContent-Type: application/json\r\n"
                       b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            while len(got) < FLOOD:                # forwarding never waits for the held recorder
                d = cl.recv(1 << 20)
                assert d, "the tap closed the stream"
                got += d
        hold.unlink()
        for _ in range(3000):                      # hang guard: the recorder caught up to the drop
            if cap.exists() and b'"type":"gap"' in cap.read_bytes():
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 74                # --strict-capture: the capture is incomplete
        err = proc.stderr.read()
    finally:
        hold.unlink(missing_ok=True)
        stop.set()
        sampler.join()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        srv.close()
    head, _, rest = bytes(got).partition(b"\r\n\r\n")
    data = _dechunk(rest)
    assert head.startswith(b"HTTP/1.1 200 ") and len(data) > FLOOD // 2
    assert data == (EVENT * (len(data) // len(EVENT) + 1))[:len(data)]        # the upstream's body, byte-exact
    assert max(sizes) <= 4 << 20 and max(sizes) > 0, max(sizes)
    c = read_capture(str(cap))
    gaps = [x for x in c.records if x["type"] == "gap"]
    assert gaps and all("size bound" in g["reason"] for g in gaps), gaps
    lost = sum(g["bytes"] for g in gaps if g.get("dir") == "s2c")
    assert lost > 8 << 20                          # most of the flood, counted
    assert "capture incomplete: " in err and f"({lost} forwarded bytes)" in err, err
    assert c.end is not None and c.end["s2c"]["bytes"] >= len(got)
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(cap)],
                           capture_output=True, timeout=120, cwd=ROOT)
    codes = {x["code"] for x in orjson.loads(check.stdout)["captures"][0]["codes"]}
    assert check.returncode == 1 and "capture.gap" in codes, codes
