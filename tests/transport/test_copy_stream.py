"""The relay's copy stream: big reads, chunks copied only when they must wait,
and a reader that completes a chunk spanning many pipe reads (issue 13)."""

from __future__ import annotations

import fcntl
import itertools
import os
import select
import threading
from typing import Any

import pytest

from mcptap.transport.copy_queue import SENT, CopyQueue
from mcptap.transport.copy_stream import C2S, CHUNK, END, HEADER, S2C, read_items
from mcptap.transport.forward import CHUNK as READ_SIZE
from mcptap.transport.forward import EOF, MAX_CHUNK, pump
from mcptap.transport.spill import SpillFile

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _grown_pipe(size: int) -> tuple[int, int]:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, size)
    except OSError:
        os.close(r)
        os.close(w)
        pytest.skip("this system refuses a 1 MiB pipe")
    return r, w


def test_pump_takes_bigger_bites_once_a_read_fills_its_buffer() -> None:
    src_r, src_w = _grown_pipe(MAX_CHUNK)
    dst_r, dst_w = os.pipe()
    data = os.urandom(MAX_CHUNK)
    assert os.write(src_w, data) == MAX_CHUNK
    os.close(src_w)
    sizes: list[int] = []
    got: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(dst_r, 1 << 20):
            got.append(chunk)

    t = threading.Thread(target=drain)
    t.start()
    assert pump(src_r, dst_w, lambda view: sizes.append(len(view))) == (EOF, None, 0)
    os.close(dst_w)
    t.join(10)
    assert sizes == [READ_SIZE, MAX_CHUNK - READ_SIZE]      # 64 KiB, then the rest in one read
    assert b"".join(got) == data
    for fd in (src_r, dst_r):
        os.close(fd)


def _items(raw: bytes, pieces: int) -> tuple[list[tuple[int, int, bytes]], list[tuple[int, ...]], bool]:
    """Feed ``raw`` to read_items through a pipe in ``pieces`` writes."""
    r, w = os.pipe()
    chunks: list[tuple[int, int, bytes]] = []
    events: list[tuple[int, ...]] = []
    done: list[bool] = []
    t = threading.Thread(target=lambda: done.append(read_items(r, lambda d, t, b: chunks.append((d, t, b)),
                                                               lambda *e: events.append(e))))
    t.start()
    step = -(-len(raw) // pieces)
    for i in range(0, len(raw), step):
        os.write(w, raw[i:i + step])
    os.close(w)
    t.join(30)
    os.close(r)
    return chunks, events, done == [True]


def test_reader_completes_a_big_chunk_that_spans_many_reads() -> None:
    big = os.urandom(3 * MAX_CHUNK // 2)
    small = b'{"jsonrpc":"2.0","method":"x"}\n'
    raw = (HEADER.pack(CHUNK, S2C, 0, 7, len(small)) + small + HEADER.pack(CHUNK, S2C, 0, 8, len(big)) + big
           + HEADER.pack(CHUNK, S2C, 0, 9, len(small)) + small + HEADER.pack(END, S2C, 0, 10, 0))
    for pieces in (1, 7, 300):
        chunks, events, eof = _items(raw, pieces)
        assert chunks == [(S2C, 7, small), (S2C, 8, big), (S2C, 9, small)], pieces
        assert events == [(END, S2C, 0, 10, 0)] and eof


def test_reader_drops_a_chunk_cut_by_the_relays_end() -> None:
    big = os.urandom(MAX_CHUNK)
    raw = HEADER.pack(CHUNK, S2C, 0, 1, len(big)) + big[: len(big) // 2]
    chunks, events, eof = _items(raw, 5)
    assert chunks == [] and events == [] and eof


def test_a_chunk_that_must_wait_is_copied_out_of_the_pumps_buffer(tmp_path: Any) -> None:
    copy_r, copy_w = os.pipe()
    os.set_blocking(copy_w, False)
    filler = 0
    try:
        while True:                                  # the copy pipe is full: mcptap is behind
            filler += os.write(copy_w, b"\0" * 4096)
    except BlockingIOError:
        pass
    q = CopyQueue(lambda: 5, copy_w, SpillFile(None, str(tmp_path)))
    buf = bytearray(b"first chunk\n")
    assert q.chunk(S2C, memoryview(buf)) is not None     # queued, not sent
    buf[:] = b"XXXXXXXXXXXX"                              # the pump reads the next chunk into its buffer
    q.close()
    feeder = threading.Thread(target=q.feed)
    feeder.start()
    left = filler
    while left:
        left -= len(os.read(copy_r, left))
    feeder.join(10)
    os.close(copy_w)
    chunks: list[tuple[int, int, bytes]] = []
    assert read_items(copy_r, lambda d, t, b: chunks.append((d, t, b)), lambda *e: None)
    os.close(copy_r)
    assert chunks == [(S2C, 5, b"first chunk\n")]


# -- copies sent after the write, in read order (tickets) ----------------------------

def _stream(q: CopyQueue, copy_r: int, copy_w: int) -> tuple[list[Any], list[Any]]:
    q.close()
    q.feed()
    os.close(copy_w)
    chunks: list[Any] = []
    events: list[Any] = []
    assert read_items(copy_r, lambda d, t, b: chunks.append((d, t, b)), lambda *e: events.append(e))
    os.close(copy_r)
    return chunks, events


def test_copies_sent_after_their_writes_keep_the_read_order(tmp_path: Any) -> None:
    # the request's pump is still writing it (its ticket open) when the answer
    # is read, written and put: the stream still holds the request first,
    # sent from the request pump's buffer, and its own put finds it sent
    copy_r, copy_w = os.pipe()
    clock = iter(range(1, 100))
    q = CopyQueue(lambda: next(clock), copy_w, SpillFile(None, str(tmp_path)))
    request, answer = bytearray(b'{"id":1,"method":"ping"}\n'), bytearray(b'{"id":1,"result":{}}\n')
    a = q.take(C2S, memoryview(request))
    b = q.take(S2C, memoryview(answer))
    assert q.put(b, len(answer)) is False
    assert q.put(a, len(request)) is True                 # already in the stream, whole
    later = q.take(C2S, memoryview(bytearray(b"next\n")))
    q.event(END, S2C)                                      # an event sends the open chunk first too
    assert q.put(later, 5) is True
    chunks, events = _stream(q, copy_r, copy_w)
    assert chunks == [(C2S, 1, bytes(request)), (S2C, 2, bytes(answer)), (C2S, 3, b"next\n")]
    assert [e[:2] for e in events] == [(END, S2C)]


def test_a_failed_write_copies_what_was_written(tmp_path: Any) -> None:
    copy_r, copy_w = os.pipe()
    q = CopyQueue(lambda: 7, copy_w, SpillFile(None, str(tmp_path)))
    buf = bytearray(b"0123456789")
    assert q.put(q.take(C2S, memoryview(buf)), 4) is False
    assert q.put(q.take(C2S, memoryview(buf)), 0) is False
    chunks, _ = _stream(q, copy_r, copy_w)
    assert chunks == [(C2S, 7, b"0123")]


def test_an_open_aux_pipe_ticket_is_sent_from_the_pipe_by_a_later_put(tmp_path: Any) -> None:
    copy_r, copy_w = os.pipe()
    aux_r, aux_w = os.pipe()
    q = CopyQueue(lambda: 3, copy_w, SpillFile(None, str(tmp_path)))
    big = os.urandom(20_000)
    os.write(aux_w, big)
    tee_ticket = q.take_from(S2C, aux_r, len(big))
    other = q.take(C2S, memoryview(bytearray(b"x\n")))
    assert q.put(other, 2) is False                        # sends the aux pipe's bytes first
    assert select.select([aux_r], [], [], 0)[0] == []      # taken out of the aux pipe
    assert q.put(tee_ticket, len(big)) is True
    chunks, _ = _stream(q, copy_r, copy_w)
    assert chunks == [(S2C, 3, big), (C2S, 3, b"x\n")]
    os.close(aux_r)
    os.close(aux_w)


def test_pump_calls_after_once_the_chunk_was_written() -> None:
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    os.write(src_w, b"hello\n")
    os.close(src_w)
    log: list[Any] = []

    def after(token: Any, sent: int) -> None:
        log.append((token, sent, os.read(dst_r, 100)))       # the bytes are there already

    assert pump(src_r, dst_w, lambda view: log.append(bytes(view)) or "tok", after=after) == (EOF, None, 0)
    assert log == [b"hello\n", ("tok", 6, b"hello\n")]
    os.close(dst_w)
    os.close(dst_r)
    os.close(src_r)


def test_closing_the_stream_sends_a_place_still_open(tmp_path: Any) -> None:
    # the relay ends while a pump is blocked writing to a server stdin that a
    # leftover process never reads: what it read is in the capture all the same
    copy_r, copy_w = os.pipe()
    q = CopyQueue(lambda: 4, copy_w, SpillFile(None, str(tmp_path)))
    ticket = q.take(C2S, memoryview(bytearray(b"stuck request\n")))
    chunks, _ = _stream(q, copy_r, copy_w)
    assert chunks == [(C2S, 4, b"stuck request\n")]
    assert ticket[0] == SENT


# -- a trickle of copies waits for a pause of the session (transport.trickle) -------

class _Traffic:
    """Stands in for ``time`` in transport.trickle: each sleep of the reader is a
    moment in which the relay sends ``per_wait`` more items, until ``items``
    were sent; after that the session pauses (nothing comes)."""

    def __init__(self, w: int, items: int, per_wait: int = 1) -> None:
        self.w, self.left, self.per_wait = w, items, per_wait
        self.sent = 0
        self.now = 0.0
        self.seen_at_delivery: list[int] = []

    def send(self) -> None:
        for _ in range(min(self.per_wait, self.left)):
            body = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % self.sent
            os.write(self.w, HEADER.pack(CHUNK, C2S, 0, self.sent, len(body)) + body)
            self.sent += 1
            self.left -= 1
        if not self.left:
            os.close(self.w)
            self.left = -1

    def sleep(self, s: float) -> None:
        self.now += s
        if self.left > 0:
            self.send()

    def monotonic(self) -> float:
        return self.now


def _read_trickle(monkeypatch: pytest.MonkeyPatch, items: int, hold: Any = None,
                  **bounds: Any) -> tuple[_Traffic, list[int]]:
    import mcptap.transport.copy_stream as cs
    import mcptap.transport.trickle as tr

    for name, value in bounds.items():
        monkeypatch.setattr(tr, name, value)
    r, w = os.pipe()
    traffic = _Traffic(w, items)
    monkeypatch.setattr(tr, "time", traffic)
    real_read = cs._read

    def read(fd: int, n: int) -> bytes:
        if traffic.left > 0 and not select.select([fd], [], [], 0)[0]:
            traffic.send()                               # the relay goes on while the reader blocks
        return real_read(fd, n)

    monkeypatch.setattr(cs, "_read", read)
    traffic.send()                                       # the first item is there when the reader starts
    batches: list[int] = []                              # items sent so far, at each delivery

    def on_chunk(d: int, t: int, b: bytes) -> None:
        assert b.startswith(b'{"jsonrpc"') and d == C2S
        batches.append(traffic.sent)

    assert read_items(r, on_chunk, lambda *e: None, hold=hold)
    os.close(r)
    assert len(batches) == items
    return traffic, batches


def test_a_trickle_is_held_back_until_the_session_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    # round trips going on: every wait of the reader brings another copy; the
    # reader hands none over before the traffic paused, then all at once, in order
    _, batches = _read_trickle(monkeypatch, 40)
    assert batches == [40] * 40


def test_a_held_trickle_is_handed_over_at_the_byte_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    item = HEADER.size + len(b'{"jsonrpc":"2.0","id":10,"method":"ping"}\n')
    _, batches = _read_trickle(monkeypatch, 40, HOLD_BYTES=10 * item)
    assert batches[0] < 40 and batches == sorted(batches)   # delivered before the pause, in batches
    marks = sorted(set(batches))                            # items sent when each batch was handed over
    assert all(b - a <= 11 for a, b in itertools.pairwise([0, *marks]))


def test_a_held_trickle_is_handed_over_at_the_time_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcptap.transport.trickle as tr

    _, batches = _read_trickle(monkeypatch, 40, HOLD_MAX=5 * tr.WAIT)
    assert batches[0] <= 7 and len(set(batches)) >= 5


def test_no_holding_once_hold_turns_false(monkeypatch: pytest.MonkeyPatch) -> None:
    # the session ends (Handoff.boost): the reader no longer waits for a pause
    _, batches = _read_trickle(monkeypatch, 10, hold=lambda: False)
    assert batches[0] <= 2


def test_pump_waits_out_eagain_of_a_non_blocking_source(monkeypatch: pytest.MonkeyPatch) -> None:
    # a host may hand us a non-blocking stdin: an empty read is no EOF; the bytes
    # come while the pump waits (its first read found the pipe empty, for certain)
    import mcptap.transport.forward as forward

    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    os.set_blocking(src_r, False)
    waits: list[int] = []
    real_wait = forward._wait

    def wait(fd: int, events: int) -> None:
        waits.append(fd)
        if len(waits) == 1:
            os.write(src_w, b"first\n")
            os.close(src_w)
        real_wait(fd, events)

    monkeypatch.setattr(forward, "_wait", wait)
    seen: list[bytes] = []
    assert pump(src_r, dst_w, lambda view: seen.append(bytes(view))) == (EOF, None, 0)
    assert seen == [b"first\n"] and waits == [src_r]
    assert os.read(dst_r, 100) == b"first\n"
    for fd in (src_r, dst_r, dst_w):
        os.close(fd)
