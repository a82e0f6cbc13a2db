"""The HTTP tap's recorder process (transport/http_recorder*.py, fact_codec.py):
batches arrive whole, in relay order, stamped with the relay's clock, through
a full pipe and the spill file; the end record is written on END only."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.transport import fact_codec as fc
from mcptap.transport import http_recorder
from mcptap.transport.http_recorder import start_recorder
from mcptap.transport.http_recorder_child import Hooks, child_main
from mcptap.transport.spill import ENTRY

BIG = b"\x00\xff" * (fc.OOB_FROM // 2 + 7)
H = [(b"Host", b"127.0.0.1:1"), (b"content-type", b"application/json")]
ALL_FACTS = [
    r.ClientOpened(1, "127.0.0.1:9"),
    r.RequestStarted(4, 1, "POST", "/mcp?x=1", "1.1", H, True, False, "prm"),
    r.RequestBody(4, 1, b'{"id":1}'),
    r.RequestEnded(4, 1),
    r.OpenUpstream(1, 2, r.Upstream("http", "h", 80)),
    r.SendUpstream(1, 2, b"POST /mcp HTTP/1.1\r\n\r\n"),
    r.ResponseStarted(4, 1, 200, "OK", H, informational=False),
    r.ResponseBody(4, 1, BIG),
    r.SendClient(1, BIG),
    r.EndpointRewritten(4, 1, "http://a/x", "http://b/x"),
    r.AuthRewritten(4, 1, "prm", "o", "n", (("c", "m"),)),
    r.ResponseEnded(4, 1, "complete", "d\u00e9tail", True, True, False),
    r.ConnClosed(1, "client", False, "reset"),
    r.CloseClient(1, True),
    r.CloseUpstream(1, 2),
]


def test_codec_round_trip_sends_what_the_observer_reads_and_big_bodies_once() -> None:
    enc = fc.encode(ALL_FACTS)
    assert enc is not None
    meta, bodies = enc
    assert bodies == [BIG] and bodies[0] is BIG and BIG not in meta     # out of line, once for two facts
    parts = iter(bodies)
    got = fc.decode(meta, lambda n: next(parts))
    want = [it for it in ALL_FACTS if not isinstance(it, (r.ClientOpened, r.OpenUpstream, r.CloseClient, r.CloseUpstream))]
    assert [type(x) for x in got] == [type(x) for x in want]
    for g, w in zip(got, want, strict=True):
        if isinstance(w, (r.SendClient, r.SendUpstream)):
            assert g.data == w.data       # only the bytes: the observer counts and digests them
        else:
            assert g == w
    assert fc.encode([r.ClientOpened(1), r.CloseClient(1)]) is None


def test_a_body_forwarded_as_a_chunk_crosses_the_pipe_once() -> None:
    other = bytes(range(256)) * 40
    chunk = b"%x\r\n" % len(BIG) + BIG + b"\r\n"
    near = b"%x\r\n" % len(BIG) + BIG[:-1] + b"!\r\n"          # not the body: sent as it is
    items = [r.ResponseBody(4, 1, BIG), r.ResponseBody(4, 1, other), r.SendClient(1, chunk), r.SendClient(1, near)]
    enc = fc.encode(items)
    assert enc is not None
    meta, bodies = enc
    assert bodies[:2] == [BIG, other] and len(bodies) == 3 and bodies[2] is near
    parts = iter(bodies)
    assert [x.data for x in fc.decode(meta, lambda n: next(parts))] == [BIG, other, chunk, near]


class _Notes:
    """An observer writing one note per batch: its clock and what it holds."""

    def __init__(self, rec: Recorder, boom_at: int | None = None) -> None:
        self.rec = rec
        self.boom_at = boom_at

    def lost(self, exchanges: set[int] | None, tails: dict[int, bytes] | None = None) -> None:
        """Batches were not recorded (``HttpObserver.lost``): nothing to cut here."""

    def close_out(self) -> None:
        """The facts are over (``HttpObserver.close_out``): no exchange to close here."""

    def handle(self, items: list[Any], flush: bool = True) -> None:
        body = items[0].data
        if self.boom_at is not None and body == str(self.boom_at).encode():
            raise RuntimeError("boom")
        self.rec.note("t", clock=self.rec.clock(), n=len(items), body=body[:20].decode(), size=len(body))


def _start(tmp_path: Path, boom_at: int | None = None, slow: float = 0.0) -> tuple[http_recorder.RecorderLink, list[str], list[int]]:
    rec = Recorder(CaptureWriter.open(str(tmp_path / "c.jsonl")), "http", clock=lambda: 0, started="2026-01-01T00:00:00Z")
    said: list[str] = []
    ticks = [0]

    def clock() -> int:
        ticks[0] += 7
        return ticks[0]

    def start() -> None:
        time.sleep(slow)          # the recorder is behind from the start: the pipe fills, then the spill file

    hooks = Hooks(rec, lambda authority: _Notes(rec, boom_at), start,    # type: ignore[arg-type,return-value]
                  lambda code, extra: rec.close(exit_code=code, **extra))
    link = start_recorder(lambda f, s, spill: child_main(f, s, spill, hooks), clock, said.append, str(tmp_path))
    link.observer("127.0.0.1:5")
    return link, said, ticks


def _notes(path: Path) -> list[dict[str, Any]]:
    return [x for x in read_capture(str(path)).records if x["type"] == "note"]


def test_batches_arrive_in_order_with_the_relays_clock_through_a_full_pipe_and_the_spill_file(tmp_path: Path) -> None:
    link, said, ticks = _start(tmp_path, slow=1.0)
    sent = []
    for i in range(120):
        body = str(i).encode() + (b"x" * (200 << 10) if i % 3 == 0 else b"")
        link.handle([r.ResponseBody(i, 1, body), r.SendClient(1, body)])
        sent.append((ticks[0], len(body)))
    assert link._queued <= http_recorder.SPILL_BYTES + (256 << 10)        # memory stays bounded meanwhile
    spilled = os.fstat(link._spill._fd).st_size
    out = link.finish(3, {"tap": {"502": 1}})
    assert out == http_recorder.Outcome()
    assert set(said) <= {"finishing the capture: the recorder is behind the relay; waiting for it"}    # said once it takes > 1 s
    assert spilled > 1 << 20                                              # the flood went through the spill file
    notes = _notes(tmp_path / "c.jsonl")
    assert [(n["clock"], n["size"]) for n in notes] == sent
    assert [n["body"][:3].rstrip("x") for n in notes] == [str(i) for i in range(120)]
    end = read_capture(str(tmp_path / "c.jsonl")).end
    assert end is not None and end["exit_code"] == 3 and end["tap"] == {"502": 1} and end["t_us"] == ticks[0]


def test_a_batch_the_spill_file_cannot_take_is_a_gap_dated_when_it_happened(tmp_path: Path) -> None:
    link, said, ticks = _start(tmp_path, slow=1.0)
    real = link._spill.append_pieces
    lost: list[int] = []
    for i in range(60):
        if i == 40:                                # the disk is full from here on
            link._spill.append_pieces = lambda bufs: -1      # type: ignore[method-assign]
        body = str(i).encode() + b"x" * (100 << 10)
        link.handle([r.ResponseBody(i, 1, body), r.SendClient(1, body)])
        if i >= 40 and link._q and link._q[-1][0][0] == fc.LOST:
            lost.append(ticks[0])
    link._spill.append_pieces = real               # type: ignore[method-assign]
    link.finish(0, {})
    recs = read_capture(str(tmp_path / "c.jsonl")).records
    gaps = [x for x in recs if x["type"] == "gap"]
    # the batches dropped one after the other are one LOST frame (memory stays bounded): one gap,
    # dated when the first of them happened (not t=0), with the bytes they forwarded
    assert len(lost) == 20 and [g["t_us"] for g in gaps] == lost[:1]
    assert gaps[0]["dir"] == "s2c" and gaps[0]["bytes"] == sum(len(str(i)) + (100 << 10) for i in range(40, 60))
    assert "20 batch(es)" in gaps[0]["reason"] and "fell behind" in gaps[0]["reason"]
    times = [x["t_us"] for x in recs]
    assert times == sorted(times)


def test_an_observer_error_stops_recording_once_and_the_end_is_still_written(tmp_path: Path) -> None:
    link, said, _ = _start(tmp_path, boom_at=2)
    for i in range(5):
        link.handle([r.SendClient(1, str(i).encode())])
        time.sleep(0.05)
    link._read_status_once()
    out = link.finish(0)
    assert said == ["recording stopped after an internal error: RuntimeError('boom') (the relay goes on)"]
    assert out.ended is None
    assert [n["body"] for n in _notes(tmp_path / "c.jsonl")] == ["0", "1"]
    assert read_capture(str(tmp_path / "c.jsonl")).end is not None


def test_mcptap_gone_without_an_end_leaves_what_arrived_and_no_end_record(tmp_path: Path) -> None:
    link, said, _ = _start(tmp_path)
    for i in range(3):
        link.handle([r.SendClient(1, str(i).encode())])
    os.close(link._fd)                       # as when mcptap is killed: EOF, no END
    _, status = os.waitpid(link.pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    cap = read_capture(str(tmp_path / "c.jsonl"))
    assert cap.end is None and [n["body"] for n in _notes(tmp_path / "c.jsonl")] == ["0", "1", "2"]


def test_a_dead_recorder_never_stops_the_relay(tmp_path: Path) -> None:
    link, said, _ = _start(tmp_path)
    os.kill(link.pid, 9)
    time.sleep(0.2)
    for i in range(3):
        link.handle([r.SendClient(1, str(i).encode() * 100_000)])      # EPIPE once the pipe is gone: no raise
    out = link.finish(0)
    assert out.ended == "the recorder process was killed by signal 9"
    assert said == ["recording stopped: the recorder process was killed by signal 9 (the relay goes on)"]


def _read_status_until(link: http_recorder.RecorderLink, done: Any, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not done() and time.monotonic() < end:
        link._read_status_once()
        time.sleep(0.01)


def test_the_spill_file_is_rewound_once_the_recorder_read_it_back_and_nothing_is_lost(tmp_path: Path) -> None:
    """A long session's backlogs reuse the spill file: its size is the largest backlog,
    not every byte ever set aside, and the capture still gets every batch in order."""
    link, said, ticks = _start(tmp_path, slow=0.5)
    sent = []

    def burst(first: int) -> None:
        for i in range(first, first + 40):
            body = str(i).encode() + b"x" * (200 << 10)
            link.handle([r.ResponseBody(i, 1, body), r.SendClient(1, body)])
            sent.append((ticks[0], len(body)))

    burst(0)
    while link._q:                                 # the relay's trio task would write these out as the pipe drains
        if not link._drain():
            time.sleep(0.01)
    size = os.fstat(link._spill._fd).st_size
    assert size > 4 << 20 and link._spill._end > 0                       # the first backlog went through the spill file
    _read_status_until(link, lambda: link._spill._end == 0)
    assert link._spill._end == 0                                          # read back whole: rewound
    offsets: list[int] = []
    link._spill.append_pieces = _count(link._spill.append_pieces, offsets)  # type: ignore[method-assign]
    os.kill(link.pid, 19)                                                 # SIGSTOP: the recorder falls behind again
    try:
        burst(40)
    finally:
        os.kill(link.pid, 18)                                             # SIGCONT
    assert offsets and offsets[0] == ENTRY.size                   # the second backlog starts at the start
    out = link.finish(0)
    assert out == http_recorder.Outcome()
    notes = _notes(tmp_path / "c.jsonl")
    assert [(n["clock"], n["size"]) for n in notes] == sent
    assert [n["body"][:3].rstrip("x") for n in notes] == [str(i) for i in range(80)]


def _count(real: Callable[[list[Any]], int], offsets: list[int]) -> Callable[[list[Any]], int]:
    def append_pieces(bufs: list[Any]) -> int:
        at = real(bufs)
        offsets.append(at)
        return at

    return append_pieces



def test_frames_queued_behind_a_full_pipe_go_out_in_one_writev(tmp_path: Path) -> None:
    link, _, _ = _start(tmp_path)
    real = link._write
    link._write = lambda bufs: 0          # type: ignore[method-assign,assignment,return-value]   # the pipe is full
    for i in range(10):
        link.handle([r.SendClient(1, str(i).encode())])
    assert len(link._q) == 10
    writes: list[int] = []

    def counted(bufs: list[Any]) -> int | None:
        writes.append(len(bufs))
        return real(bufs)

    link._write = counted                 # type: ignore[method-assign]
    assert link._drain() and not link._q and link._queued == 0
    assert len(writes) == 1               # each write wakes the recorder process: one for the backlog
    link.finish(0)
    assert [n["body"] for n in _notes(tmp_path / "c.jsonl")] == [str(i) for i in range(10)]
