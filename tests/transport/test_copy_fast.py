"""The round trip's closures over the relay's copy queue (``copy_fast.ends``) send
the same copy stream as the queue's own ``take`` and ``put``, whatever the pipe's
room: a property test of the fast path against the path it shortcuts."""

from __future__ import annotations

import fcntl
import itertools
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.transport.copy_fast import ends
from mcptap.transport.copy_queue import CopyQueue
from mcptap.transport.copy_stream import C2S, CHUNK, END, HEADER, S2C
from mcptap.transport.spill import SpillFile

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)

_step = st.one_of(
    st.tuples(st.just("take"), st.sampled_from([C2S, S2C]), st.integers(1, 40_000)),
    st.tuples(st.just("put"), st.integers(0, 3), st.sampled_from(["all", "some", "none"])),
    st.tuples(st.just("event"), st.sampled_from([C2S, S2C]), st.just(0)),
    st.tuples(st.just("drain"), st.just(0), st.just(0)),
)


def _run(steps: list[tuple[str, int, Any]], fast: bool, spill_dir: str) -> tuple[Any, ...]:
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)            # the smallest pipe: full and partly taken writes happen
    os.set_blocking(r, False)
    clock = itertools.count(1)
    q = CopyQueue(lambda: next(clock), w, SpillFile(None, spill_dir))
    pair = {d: ends(q, d) if fast else (lambda data, d=d: q.take(d, data), q.put) for d in (C2S, S2C)}
    out = bytearray()
    results: list[Any] = []
    open_: list[tuple[list[Any], int, int, bytearray]] = []
    fill = itertools.count()

    def drain() -> None:
        while True:
            try:
                data = os.read(r, 1 << 16)
            except BlockingIOError:
                return
            out.extend(data)

    for op, a, b in steps:
        if op == "take":
            buf = bytearray(bytes([next(fill) % 251]) * b)
            open_.append((pair[a][0](memoryview(buf)), a, b, buf))
        elif op == "put" and open_:
            ticket, d, n, _buf = open_.pop(a % len(open_))
            sent = n if b == "all" else n // 2 if b == "some" else 0
            results.append(pair[d][1](ticket, sent))
        elif op == "event":
            q.event(END, a)
        elif op == "drain":
            drain()
    for ticket, d, n, _buf in open_:
        results.append(pair[d][1](ticket, n))
    drain()
    queued = [(k, d, f, t, n, bytes(x) if not isinstance(x, int) else x) for k, d, f, t, n, x in q._q]
    os.close(r)
    os.close(w)
    return bytes(out), queued, q._queued, results, list(q._streamed)


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, max_size=40))
def test_the_fast_path_sends_the_stream_of_take_and_put(tmp_path_factory: Any, steps: list[tuple[str, int, Any]]) -> None:
    spill = str(tmp_path_factory.mktemp("spill"))
    assert _run(steps, True, spill) == _run(steps, False, spill)


def test_a_round_trip_is_one_write_a_chunk(tmp_path: Any) -> None:
    r, w = os.pipe()
    q = CopyQueue(lambda: 9, w, SpillFile(None, str(tmp_path)))
    take, put = ends(q, C2S)
    data = bytearray(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert put(take(memoryview(data)), len(data)) is False
    assert not q._q and not q._open
    got = os.read(r, 1 << 16)
    assert got == HEADER.pack(CHUNK, C2S, 0, 9, len(data)) + bytes(data)
    os.close(r)
    os.close(w)
