"""The copy reader thread of the stdio tap: the relay process's copy stream
(``copy_stream``) into the recorder's hand-off queue (``handoff``), in order.

It runs at idle CPU priority in a thread of its own while the session runs
(never competing with the relay, the server or the host; ``priority.Pacer``
keeps its runs short), and at normal priority once the session ends, when it
must not wait for the CPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcptap.model import Direction
from mcptap.protocol.codes import closed_finding
from mcptap.transport import copy_stream, priority
from mcptap.transport.handoff import Handoff
from mcptap.transport.tap_recorder import TapRecorder

#: queued copies above which the copy reader pauses (the relay then spills to its file);
#: 1.5 MiB measured 1.1-3.6 MiB more tap peak RSS in 3M-notification floods (4 same-run pairs)
READER_PAUSE_BYTES = 1 << 20


def read_copies(copy_r: int, h: Handoff, rec: TapRecorder, stdout_done: Callable[[], None]) -> None:
    """The copy reader thread: feed the relay process's copy stream
    (``copy_stream``) to ``h`` in order until it ends; ``stdout_done()`` once
    the end of the server's stdout (or the host closing ours) is queued. Pauses while more than
    ``READER_PAUSE_BYTES`` wait in ``h`` (back-pressure to the relay's spill file).
    Idle priority during the session, normal once it ends (``Handoff.boost``):
    at the end it must not wait for the CPU. The relay's THROUGH items let the
    tap's own events (``Handoff.call``) follow the copies read before them."""
    dirs = (Direction.C2S, Direction.S2C)
    paced: list[Any] = [None, None]          # the idle reader thread's ident and its Pacer

    def on_chunk(d: int, t: int, data: bytes) -> None:
        if h.queued_bytes > READER_PAUSE_BYTES:
            h.wait_below(READER_PAUSE_BYTES)       # woken by the recorder thread as it takes the queue
        h.chunk(dirs[d], data, t)
        if paced[0] == threading.get_ident():
            paced[1]()

    def on_event(kind: int, d: int, flag: int, t: int, n: int) -> None:
        direction = dirs[d]
        if kind == copy_stream.SPILLED:
            h.spilled(direction, flag, n, t)
            return
        if kind == copy_stream.LOST:
            h.lost(direction, n, t, past_bound=bool(flag))
            return
        if kind == copy_stream.THROUGH:
            h.copies_through(t)
            return
        if kind == copy_stream.FAILED:
            event = "stdin_closed_by_server" if direction is Direction.C2S else "stdout_closed_by_host"
            h.call_at(t, rec.process, event, [closed_finding(event, n, bool(flag))], undelivered_bytes=n, recorded_anyway=bool(flag))
        if direction is Direction.C2S:
            h.call_at(t, rec.stdio_eof, Direction.C2S)
        else:
            if kind == copy_stream.END:
                h.call_at(t, rec.stdio_eof, Direction.S2C)
            stdout_done()

    # at idle priority in a thread of its own while the session runs (never
    # competing with the relay), then, once the session ends, at normal
    # priority: this thread (trio's worker) takes the stream over where the
    # OS will not let the idle thread back (the lowered thread is never trio's)
    cursor = copy_stream.CopyCursor()
    nice = priority.process_nice()

    def low() -> None:
        if h.boosted or not priority.idle():
            return
        paced[:] = [threading.get_ident(), priority.Pacer()]
        left = [False]

        def yield_when() -> bool:
            if not h.boosted or left[0]:
                return False
            left[0] = priority.restore(nice)
            if left[0]:
                paced[0] = None
            return not left[0]

        copy_stream.read_items(copy_r, on_chunk, on_event, cursor, yield_when, hold=lambda: not h.boosted)

    try:
        t = threading.Thread(target=low, name="mcptap-copy-reader", daemon=True)
        t.start()
        t.join()
        copy_stream.read_items(copy_r, on_chunk, on_event, cursor)
    finally:
        h.copies_ended()
