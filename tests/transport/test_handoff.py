"""The recorder hand-off of the stdio tap: order, unframed chunks when analysis
falls behind, and their re-annotation (no timing: "behind" is forced)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.records import message_bytes
from mcptap.transport import handoff as handoff_mod
from mcptap.transport.forward import BROKEN, EOF, STOPPED, pump
from mcptap.transport.handoff import Handoff

C2S, S2C = Direction.C2S, Direction.S2C

LINES = [
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}\n',
    b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
    b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":2,"result":{}}\n',
    b'{\n  "jsonrpc": "2.0",\n  "method": "notifications/message",\n  "params": {"level": "info", "data": "pretty"}\n}\n',
    b"a log line on stdout\n",
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\r\n',
    b"\xff\xfe not utf-8\n",
    b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}',          # no newline: completed by the next line
]
DIRS = [C2S, S2C, C2S, C2S, S2C, S2C, S2C, S2C, C2S, C2S]


def _record(tmp: Path, events: list[tuple[Direction, bytes, str]], name: str, long_line: int | None = None) -> Path:
    """Record ``events`` (direction, chunk, how: "frame" | "behind" | "unframed")."""
    path = tmp / name
    w = CaptureWriter.open(str(path))
    t = [0]

    def clock() -> int:
        t[0] += 10
        return t[0]

    rec = Recorder(w, "stdio", target={"argv": ["x"]}, clock=clock, started="2026-01-01T00:00:00.000000Z")
    rec.long_line = long_line
    for d, data, how in events:
        if how == "unframed":
            rec.stdio_unframed(d, data)
        elif how == "lost":
            rec.lost(d, len(data))
        elif how == "cut":
            rec.cut("the relay process ended unexpectedly")
            break
        else:
            rec.stdio_bytes(d, data, behind=(lambda: True) if how == "behind" else None)
    else:
        rec.stdio_eof(C2S)
        rec.stdio_eof(S2C)
    rec.close(exit_code=0)
    return path


def _message_tuples(records: Any) -> list[tuple[str, bytes, str, Any]]:
    return [(r["dir"], message_bytes(r), r["kind"], r.get("id")) for r in records if r["type"] == "message"]


def _stored_messages(path: Path) -> list[tuple[str, bytes, str, Any]]:
    """The message records as the live recorder wrote them."""
    return _message_tuples(read_capture(str(path)).records)


def _messages(path: Path) -> list[tuple[str, bytes, str, Any]]:
    """The message records as re-annotation gives them."""
    cap = read_capture(str(path))
    return _message_tuples(reannotate(cap.header, cap.records, shapes=False, reuse=False))


def _stream(path: Path, d: str) -> bytes:
    """A direction's bytes rebuilt from message and chunk records as stored."""
    out = b""
    for r in read_capture(str(path)).records:
        if r.get("dir") != d:
            continue
        if r["type"] == "chunk":
            out += decode_bytes(r, "data")
        elif r["type"] == "message":
            out += message_bytes(r)
    return out


@st.composite
def chunked(draw: Any) -> list[tuple[Direction, bytes, str]]:
    """The LINES cut into chunks at random points, each chunk recorded one of
    three ways."""
    events = []
    for line, d in zip(LINES * 2, DIRS * 2, strict=True):
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(line) - 1)), max_size=3)))
        prev = 0
        for c in [*cuts, len(line)]:
            if c > prev:
                events.append((d, line[prev:c], draw(st.sampled_from(["frame", "frame", "behind", "unframed"]))))
                prev = c
    return events


def _assert_true_offsets(path: Path, events: list[tuple[Direction, bytes, str]]) -> None:
    """Every message and chunk record's offset is its true stream offset
    (lost bytes counted), live and re-annotated."""
    full = {d: b"".join(b for dd, b, how in events if dd.value == d and how != "cut") for d in ("c2s", "s2c")}
    cap = read_capture(str(path))
    for recs in (cap.records, list(reannotate(cap.header, cap.records, shapes=False, reuse=False))):
        for r in recs:
            if r["type"] in ("message", "chunk"):
                raw = decode_bytes(r, "data") if r["type"] == "chunk" else message_bytes(r)
                assert raw is not None
                assert full[r["dir"]][r["offset"]:r["offset"] + len(raw)] == raw, (r, recs is cap.records)


@st.composite
def chunked_with_losses(draw: Any) -> list[tuple[Direction, bytes, str]]:
    """``chunked`` with some chunks lost (forwarded, never queued) and
    perhaps a cut (the relay died) at the end."""
    events = [(d, b, draw(st.sampled_from(["frame", "frame", "frame", "lost"]))) for d, b, _ in draw(chunked())]
    if draw(st.booleans()):
        events.insert(draw(st.integers(1, len(events))), (C2S, b"", "cut"))
    return events


@settings(max_examples=80, deadline=None)
@given(chunked_with_losses())
def test_after_a_gap_reannotation_frames_what_the_recorder_framed(tmp_path_factory: Any, events: list[tuple[Direction, bytes, str]]) -> None:
    # the partial line before a directed gap is a chunk, framing resumes at the next
    # line start: re-annotation must not splice the two sides of the gap into a line
    path = _record(tmp_path_factory.mktemp("lost"), events, "lost.jsonl")
    assert _messages(path) == _stored_messages(path)
    _assert_true_offsets(path, events)
    cap = read_capture(str(path))
    codes = {f["code"] for r in cap.records for f in r.get("findings", ())}
    if any(how == "cut" for _, _, how in events):
        assert "framing.unterminated_line" not in codes        # mcptap stopped reading: not the peer's fault
        assert any(r["type"] == "gap" for r in cap.records)


def _reannotated_codes(path: Path) -> set[str]:
    cap = read_capture(str(path))
    out: set[str] = set()
    for r in reannotate(cap.header, cap.records, shapes=False, reuse=False):
        if r["type"] == "end":
            out |= set(r.get("codes", {}))
    return out


@settings(max_examples=60, deadline=None)
@given(chunked(), st.data())
def test_a_cut_reannotates_the_same_whether_the_chunks_were_framed_or_stored_unframed(
        tmp_path_factory: Any, events: list[tuple[Direction, bytes, str]], data: Any) -> None:
    at = data.draw(st.integers(1, len(events)))
    cut = [*events[:at], (C2S, b"", "cut")]
    tmp = tmp_path_factory.mktemp("cut")
    plain = _record(tmp, [(d, b, "frame" if how != "cut" else how) for d, b, how in cut], "plain.jsonl")
    mixed = _record(tmp, cut, "mixed.jsonl")
    assert _messages(mixed) == _messages(plain)
    for path in (plain, mixed):
        assert "framing.unterminated_line" not in _reannotated_codes(path)   # mcptap stopped reading


@settings(max_examples=60, deadline=None)
@given(chunked())
def test_unframed_chunks_reannotate_to_the_same_messages(tmp_path_factory: Any, events: list[tuple[Direction, bytes, str]]) -> None:
    tmp = tmp_path_factory.mktemp("spill")
    plain = _record(tmp, [(d, b, "frame") for d, b, _ in events], "plain.jsonl")
    spilled = _record(tmp, events, "spilled.jsonl")
    for d in ("c2s", "s2c"):
        sent = b"".join(b for dd, b, _ in events if dd.value == d)
        assert _stream(spilled, d) == sent                       # nothing lost, nothing doubled, in order
        end = read_capture(str(spilled)).end
        assert end[d]["sha256"] == hashlib.sha256(sent).hexdigest()
    assert _messages(spilled) == _messages(plain)
    _assert_true_offsets(spilled, events)


def test_chunk_records_are_counted_and_offsets_exact(tmp_path: Path) -> None:
    path = _record(tmp_path, [(S2C, LINES[1][:20], "frame"), (S2C, LINES[1][20:] + LINES[4], "unframed"),
                              (S2C, LINES[4][:5], "unframed"), (S2C, LINES[4][5:] + LINES[4], "frame")], "c.jsonl")
    cap = read_capture(str(path))
    chunks = [r for r in cap.records if r["type"] == "chunk"]
    # the held partial line goes first, then the unframed chunks, then the rest of the cut line
    assert [decode_bytes(c, "data") for c in chunks] == [LINES[1] + LINES[4], LINES[4][:5], LINES[4][5:]]
    assert [c["offset"] for c in chunks] == [0, len(LINES[1]) + len(LINES[4]), len(LINES[1]) + len(LINES[4]) + 5]
    msgs = [r for r in cap.records if r["type"] == "message"]
    assert len(msgs) == 1 and msgs[0]["offset"] == len(LINES[1]) + 2 * len(LINES[4])
    assert cap.end["chunks"] == {"records": 3, "bytes": len(LINES[1]) + 2 * len(LINES[4])}


class _Log:
    """A recorder stand-in that logs calls (the order is what is tested)."""

    def __init__(self) -> None:
        self.clock = lambda: 0
        self.calls: list[tuple[str, Any]] = []
        self.hold_flush = False

    def flush(self) -> None:
        pass

    def stdio_bytes(self, d: Direction, data: bytes, behind: Any = None) -> None:
        self.calls.append(("bytes", (d, data)))

    def stdio_unframed(self, d: Direction, data: bytes) -> None:
        self.calls.append(("unframed", (d, data)))

    def process(self, event: str, **fields: Any) -> None:
        self.calls.append(("process", event))

    def gap(self, reason: str, direction: Direction | None = None, nbytes: int | None = None) -> None:
        self.calls.append(("record", "gap"))


def test_handoff_keeps_queue_order_and_withdraws() -> None:
    log = _Log()
    h = Handoff(log, lambda reason: None)
    gate = threading.Event()
    log.process = lambda event, **f: (gate.wait(5), log.calls.append(("process", event)))  # type: ignore[method-assign]
    h.start()
    h.call(log.process, "spawn")               # the recorder thread waits here: the rest queues up
    a = h.chunk(C2S, b"req\n")
    b = h.chunk(S2C, b"resp\n")
    assert h.withdraw(b)
    assert not h.withdraw(b)
    gate.set()
    h.stop()
    assert log.calls == [("process", "spawn"), ("bytes", (C2S, b"req\n"))]
    assert not h.withdraw(a)


def test_handoff_stores_unframed_while_behind_and_resumes(monkeypatch: Any) -> None:
    monkeypatch.setattr(handoff_mod, "SPILL_BYTES", 10)
    log = _Log()
    h = Handoff(log, lambda reason: None)
    gate = threading.Event()
    log.process = lambda event, **f: (gate.wait(5), log.calls.append(("process", event)))  # type: ignore[method-assign]
    h.start()
    h.call(log.process, "spawn")
    for i in range(4):
        h.chunk(S2C, b"0123456789\n%d" % i)        # 48 bytes queued > 10: behind
    gate.set()
    for _ in range(500):                           # hang guard, not a timing assertion
        if len(log.calls) == 5:
            break
        threading.Event().wait(0.01)
    h.chunk(S2C, b"next\n")                        # the queue had emptied: annotated again
    h.stop()
    kinds = [c[0] for c in log.calls[1:]]
    assert kinds == ["unframed"] * 3 + ["bytes", "bytes"]       # the last queued chunk is annotated: caught up
    assert h.spills == 1


def test_handoff_recorder_failure_stops_recording_only() -> None:
    log = _Log()
    errors: list[str] = []

    def boom(d: Direction, data: bytes, behind: Any = None) -> None:
        raise ValueError("bug")

    log.stdio_bytes = boom  # type: ignore[method-assign]
    h = Handoff(log, errors.append)
    h.start()
    h.chunk(C2S, b"x\n")
    h.chunk(C2S, b"y\n")
    h.stop()
    assert errors == ["ValueError: bug"]
    assert log.calls == [("record", "gap")]


def test_pump_forwards_in_order_and_reports_how_it_ended() -> None:
    import os

    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    stop_r, stop_w = os.pipe()
    seen: list[bytes] = []
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(pump(src_r, dst_w, lambda d: seen.append(bytes(d)) or len(seen), stop_r)))
    t.start()
    os.write(src_w, b"hello\n")
    assert os.read(dst_r, 100) == b"hello\n"
    os.write(stop_w, b"x")
    t.join(10)
    assert result == [(STOPPED, None, 0)] and seen == [b"hello\n"]
    os.close(src_w)
    result.clear()
    assert pump(src_r, dst_w, lambda d: seen.append(bytes(d))) == (EOF, None, 0)
    os.close(dst_r)
    w2r, w2w = os.pipe()
    os.write(w2w, b"lost\n")
    os.close(w2w)
    assert pump(w2r, dst_w, lambda d: "tok")[0:2] == (BROKEN, "tok")
    for fd in (src_r, dst_w, stop_r, stop_w, w2r):
        os.close(fd)


def test_handoff_boost_hands_over_to_a_normal_thread_where_idle_cannot_be_left(monkeypatch: Any) -> None:
    from mcptap.transport import priority

    monkeypatch.setattr(priority, "idle", lambda: "idle")           # as if SCHED_IDLE took
    monkeypatch.setattr(priority, "restore", lambda nice=0: False)  # unprivileged: no way back
    log = _Log()
    threads: list[threading.Thread] = []
    h = Handoff(log, lambda reason: None)
    gate, entered = threading.Event(), threading.Event()

    def process(event: str, **f: Any) -> None:
        entered.set()
        gate.wait(5)
        threads.append(threading.current_thread())
        log.calls.append(("process", event))

    log.process = process  # type: ignore[method-assign]
    h.start()
    h.call(log.process, "spawn")
    h.chunk(C2S, b"req\n")
    entered.wait(5)                                                 # the idle thread is busy when boosted
    h.boost()
    h.call(log.process, "exit")
    gate.set()
    h.stop()
    assert log.calls == [("process", "spawn"), ("unframed", (C2S, b"req\n")), ("process", "exit")] or \
        log.calls == [("process", "spawn"), ("bytes", (C2S, b"req\n")), ("process", "exit")]
    assert threads[0] is not threads[1], "the idle thread ends; a normal-priority one takes over the queue"


def test_handoff_hurry_stores_the_rest_unframed() -> None:
    log = _Log()
    h = Handoff(log, lambda reason: None)
    gate = threading.Event()
    log.process = lambda event, **f: (gate.wait(5), log.calls.append(("process", event)))  # type: ignore[method-assign]
    h.start()
    h.call(log.process, "spawn")
    h.chunk(S2C, b"one\n")
    h.chunk(S2C, b"two\n")
    h.hurry()
    gate.set()
    h.stop()
    assert log.calls == [("process", "spawn"), ("unframed", (S2C, b"one\n")), ("unframed", (S2C, b"two\n"))]
    assert h.hurried


def test_a_huge_line_is_stored_as_it_streams_and_reframed_the_same(tmp_path: Path) -> None:
    big = b'{"jsonrpc":"2.0","id":2,"result":{"blob":"' + b"x" * 5000 + b'"}}\n'
    lines = [LINES[0], LINES[1], LINES[2], LINES[3], big, LINES[7]]
    dirs = [C2S, S2C, C2S, C2S, S2C, S2C]
    events = [(d, line[i:i + 700], "frame") for d, line in zip(dirs, lines, strict=True) for i in range(0, len(line), 700)]
    plain = _record(tmp_path, events, "plain.jsonl")
    streamed = _record(tmp_path, events, "streamed.jsonl", long_line=1000)
    chunks = [r for r in read_capture(str(streamed)).records if r["type"] == "chunk"]
    assert chunks and all(len(decode_bytes(c, "data") or b"") <= 1000 + 700 for c in chunks)   # never the whole line
    assert not [r for r in read_capture(str(plain)).records if r["type"] == "chunk"]
    for d in ("c2s", "s2c"):
        assert _stream(streamed, d) == b"".join(b for dd, b, _ in events if dd.value == d)
    assert _messages(streamed) == _messages(plain)


def test_recorder_thread_writes_a_batch_of_records_with_one_write(tmp_path: Path, monkeypatch: Any) -> None:
    w = CaptureWriter.open(str(tmp_path / "cap.jsonl"))
    rec = Recorder(w, "stdio", target={"argv": ["x"]}, clock=lambda: 0, started="2026-01-01T00:00:00.000000Z")
    writes: list[int] = []
    real = w._write_all
    monkeypatch.setattr(w, "_write_all", lambda data: (writes.append(data.count(b"\n")), real(data))[1])
    h = Handoff(rec, lambda reason: None)
    gate = threading.Event()
    h.start()
    h.call(gate.wait, 5)                          # the recorder thread waits: ten requests queue up
    for i in range(10):
        h.chunk(C2S, b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i)
    gate.set()
    h.stop()
    assert writes == [10]                         # one write for the batch, not one per record
    rec.close(exit_code=0)
    cap = read_capture(str(tmp_path / "cap.jsonl"))
    assert [r["json"]["id"] for r in cap.records if r["type"] == "message"] == list(range(10))


def test_recorder_thread_flushes_a_long_batch_in_bounded_pieces(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(handoff_mod, "FLUSH_ITEMS", 4)
    w = CaptureWriter.open(str(tmp_path / "cap.jsonl"))
    rec = Recorder(w, "stdio", target={"argv": ["x"]}, clock=lambda: 0, started="2026-01-01T00:00:00.000000Z")
    writes: list[int] = []
    real = w._write_all
    monkeypatch.setattr(w, "_write_all", lambda data: (writes.append(data.count(b"\n")), real(data))[1])
    h = Handoff(rec, lambda reason: None)
    gate = threading.Event()
    h.start()
    h.call(gate.wait, 5)
    for i in range(10):
        h.chunk(S2C, b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}\n' % i)
    gate.set()
    h.stop()
    assert sum(writes) == 10 and max(writes) <= 4   # memory held by unwritten records stays bounded


def test_pacer_sleeps_only_after_a_burst(monkeypatch: Any) -> None:
    from mcptap.transport import priority

    slept: list[float] = []
    monkeypatch.setattr(priority.time, "sleep", slept.append)
    pace = priority.Pacer()
    pace.since = priority.time.perf_counter() + 60   # a burst has just begun
    pace()
    assert slept == []
    pace.since -= 120                                 # it ran a whole burst
    before = priority.time.perf_counter()
    pace()
    assert slept == [priority.PAUSE] and pace.since >= before   # paused, and a new burst begins


def test_chunks_queued_while_the_relay_spills_are_stored_unframed(tmp_path: Path) -> None:
    from mcptap.transport.spill import SpillFile

    log = _Log()
    h = Handoff(log, lambda reason: None)
    h.spill = SpillFile(None, str(tmp_path))
    at = h.spill.append(1, 0, 5, b"late\n")
    gate = threading.Event()
    log.process = lambda event, **f: (gate.wait(5), log.calls.append(("process", event)))  # type: ignore[method-assign]
    h.start()
    h.call(log.process, "spawn")
    h.chunk(S2C, b"first\n")                      # a small chunk: not behind by its size...
    h.spilled(S2C, at, 5, 0)                      # ...but the relay had to set the next one aside
    gate.set()
    h.stop()
    assert [c[0] for c in log.calls[1:]] == ["unframed", "unframed"]
    h.spill.close()


def test_a_batch_of_records_holds_at_most_flush_bytes_of_data_spilled_chunks_too(tmp_path: Path, monkeypatch: Any) -> None:
    from mcptap.transport.spill import SpillFile

    monkeypatch.setattr(handoff_mod, "FLUSH_BYTES", 100)
    w = CaptureWriter.open(str(tmp_path / "cap.jsonl"))
    rec = Recorder(w, "stdio", target={"argv": ["x"]}, clock=lambda: 0, started="2026-01-01T00:00:00.000000Z")
    writes: list[int] = []
    real = w._write_all
    monkeypatch.setattr(w, "_write_all", lambda data: (writes.append(data.count(b"\n")), real(data))[1])
    h = Handoff(rec, lambda reason: None)
    h.spill = SpillFile(None, str(tmp_path))
    gate = threading.Event()
    h.start()
    h.call(gate.wait, 5)
    line = b'{"jsonrpc":"2.0","method":"n","params":{"pad":"%s"}}\n' % (b"x" * 30)
    for i in range(3):                             # three chunks the relay set aside, 80 bytes each
        h.spilled(S2C, h.spill.append(1, 0, i * len(line), line), len(line), 0)
    gate.set()
    h.stop()
    assert writes == [1, 1, 1]                     # 2 x 80 > 100: each written before the next is held
    rec.close(exit_code=0)
    h.spill.close()


class _Clock:
    """A settable Recorder clock (µs)."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _wait_for(cond: Any) -> None:
    for _ in range(500):                           # hang guard, not a timing assertion
        if cond():
            return
        threading.Event().wait(0.01)


def test_a_call_waits_for_the_copies_read_before_it() -> None:
    # stderr at t=100 arrives before the copy of stdout the relay read at t=50:
    # the records keep time order (queue order is time order)
    log, clock = _Log(), _Clock()
    log.clock = clock
    h = Handoff(log, lambda reason: None)
    h.start()
    h.expect_copies()
    clock.now = 100
    h.call(log.process, "stderr")
    h.chunk(S2C, b"early\n", 50)
    h.chunk(S2C, b"late\n", 150)
    h.stop()
    assert log.calls == [("bytes", (S2C, b"early\n")), ("process", "stderr"), ("bytes", (S2C, b"late\n"))]


def test_a_waiting_call_asks_the_relay_once_and_its_through_item_releases_it() -> None:
    log, clock = _Log(), _Clock()
    log.clock = clock
    asked: list[int] = []
    h = Handoff(log, lambda reason: None)
    h.start()
    h.expect_copies(lambda: asked.append(clock.now))
    clock.now = 100
    h.call(log.process, "first")
    h.call_at(120, log.process, "eof")             # a copy stream event after it
    clock.now = 200
    h.call(log.process, "second")
    assert asked == [100]                          # one question until it is answered
    h.copies_through(150)                          # the relay's answer: "second" still waits
    _wait_for(lambda: len(log.calls) == 2)
    assert log.calls == [("process", "first"), ("process", "eof")]
    assert asked == [100, 200]                     # and asks again for it
    h.copies_through(250)
    _wait_for(lambda: len(log.calls) == 3)
    assert log.calls[-1] == ("process", "second") and asked == [100, 200]
    clock.now = 300
    h.call(log.process, "last")
    h.stop_asking()
    h.copies_ended()                               # the copy stream ended: nothing can come before it
    _wait_for(lambda: len(log.calls) == 4)
    assert log.calls[-1] == ("process", "last") and asked == [100, 200, 300]
    h.stop()


def _burst_with_calls(tmp_path: Path, name: str) -> list[int]:
    """500 copies of 8 KB through the real copy queue and reader with a call
    every 50 (``ask`` answered as the relay does); the times of the records
    in the order the recorder got them (µs)."""
    import os
    import time

    from mcptap.transport import copy_stream
    from mcptap.transport.copy_queue import CopyQueue
    from mcptap.transport.forward import grow_pipe
    from mcptap.transport.spill import SpillFile

    base = time.monotonic_ns() // 1000

    def clock() -> int:
        return time.monotonic_ns() // 1000 - base

    log = _Log()
    log.clock = clock
    times: list[int] = []
    h = Handoff(log, lambda reason: None)
    log.stdio_bytes = lambda d, data, behind=None: times.append(h._now)  # type: ignore[method-assign]
    log.stdio_unframed = lambda d, data: times.append(h._now)            # type: ignore[method-assign]
    log.process = lambda event, **f: times.append(h._now)                # type: ignore[method-assign]
    r, w = os.pipe()
    grow_pipe(w, 1 << 20)
    q = CopyQueue(clock, w, SpillFile(str(tmp_path / f"{name}.spill")))
    h.spill = q._spill
    h.start()
    h.expect_copies(lambda: q.event(copy_stream.THROUGH, 0))
    feeder = threading.Thread(target=q.feed)
    feeder.start()

    def on_event(kind: int, d: int, flag: int, t: int, n: int) -> None:
        if kind == copy_stream.SPILLED:
            h.spilled(S2C, flag, n, t)
        elif kind == copy_stream.THROUGH:
            h.copies_through(t)

    reader = threading.Thread(target=copy_stream.read_items, args=(r, lambda d, t, data: h.chunk(S2C, data, t), on_event))
    reader.start()
    for i in range(500):
        q.chunk(copy_stream.S2C, b"x" * 8000)
        if i % 50 == 25:
            h.call(log.process, "stderr")
    q.close()
    feeder.join(30)
    os.close(w)
    reader.join(30)
    h.copies_ended()
    h.stop()
    os.close(r)
    return times


def test_calls_keep_time_order_with_a_relay_backlog_of_copies(tmp_path: Path) -> None:
    # a burst of copies waits in the relay (its memory, its spill file) while calls
    # are made; a call goes in only after the relay's THROUGH item, which follows
    # every copy read before it
    for round_ in range(4):
        times = _burst_with_calls(tmp_path, f"r{round_}")
        assert len(times) == 510
        assert times == sorted(times), round_


def test_without_a_copy_reader_calls_are_queued_at_once() -> None:
    log, clock = _Log(), _Clock()
    log.clock = clock
    h = Handoff(log, lambda reason: None)
    h.start()
    h.call(log.process, "spawn")
    _wait_for(lambda: log.calls)
    assert log.calls == [("process", "spawn")]
    h.stop()


def test_a_paused_copy_reader_waits_to_be_woken_not_polling(monkeypatch: Any) -> None:
    """Past ``READER_PAUSE_BYTES`` queued the copy reader waits for the recorder
    thread to take the queue (``Handoff.wait_below``): woken when there is room,
    never a 1 ms sleep loop (it polled, waking a thousand times a second for as
    long as analysis was behind). The chunks still arrive whole and in order."""
    import os
    import time

    from mcptap.transport import copy_reader, copy_stream

    monkeypatch.setattr(copy_reader, "READER_PAUSE_BYTES", 10)
    polls: list[float] = []
    real_sleep = time.sleep

    def sleep(s: float) -> None:
        if s == 0.001:
            polls.append(s)
        real_sleep(s)

    monkeypatch.setattr(time, "sleep", sleep)
    gate = threading.Event()

    class Held(_Log):
        def stdio_bytes(self, d: Direction, data: bytes, behind: Any = None) -> None:
            gate.wait(60)               # analysis behind: the recorder thread holds the first chunk
            super().stdio_bytes(d, data, behind)

        def stdio_eof(self, d: Direction) -> None:
            self.calls.append(("eof", d))

    log = Held()
    h = Handoff(log, lambda reason: None)
    h.start()
    chunks = [bytes([65 + i]) * 100 for i in range(3)]
    r, w = os.pipe()
    os.write(w, b"".join(copy_stream.HEADER.pack(copy_stream.CHUNK, 0, 0, i, len(c)) + c for i, c in enumerate(chunks))
             + copy_stream.HEADER.pack(copy_stream.END, 0, 0, 9, 0) + copy_stream.HEADER.pack(copy_stream.END, 1, 0, 9, 0))
    os.close(w)
    done = threading.Event()
    reader = threading.Thread(target=lambda: (copy_reader.read_copies(r, h, log, lambda: None), done.set()), daemon=True)
    reader.start()
    for _ in range(6000):               # hang guard, not a timing assertion: until the reader is paused
        if getattr(h, "reader_waits", 0) or polls:
            break
        threading.Event().wait(0.01)
    assert not done.is_set()            # paused: the third chunk waits for room
    gate.set()
    assert done.wait(60)
    reader.join()
    os.close(r)
    h.stop()
    assert polls == []
    assert h.reader_waits == 1
    assert [c for k, c in log.calls if k == "bytes"] == [(C2S, c) for c in chunks]
