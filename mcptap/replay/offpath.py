"""A replay link's recording, off its write and read paths (trio + one worker
thread, level 4), as ``mcptap record`` keeps analysis off the relay
(``transport/handoff.py``).

    off = OffPath(rec)                  # rec: the link's Recorder
    nursery.start_soon(off.run)         # the worker: makes the queued calls, in order
    off.call(rec.stdio_bytes, C2S, line, size=len(line))   # stamped now, made later
    with off.writing(): await stdin.send_all(line)          # the worker waits meanwhile
    await off.room()                    # a reader waits while HELD_BYTES of chunks wait
    await off.drain()                   # every call made; the Recorder's clock given back

Why: annotating a message (framing, parsing, schema checks: a second for an
80 MiB request, tens of ms to build a tool's validators) used to run on the
trio thread before the request was written and before an answer was handed
to the runner, so replay reported its own analysis time as the server's
latency. Now a link takes a request's place in the capture and its time
(``call``: the stamp, µs on the Recorder's clock) *before* writing it, so its
record precedes the answer's (causal order) and its ``t_us`` is the send
time; the worker makes the Recorder calls in that order on a thread, each
with its stamp as the Recorder's clock, while the trio thread writes and reads.
While a link writes (``writing``) the worker waits (up to ``WRITE_WAIT`` s at a
time, and not while more than ``HELD_BYTES`` wait): the analysis of the very
request being written (parsing 80 MiB holds the GIL) would slow its write.

Every Recorder call of a link goes through ``call`` while the worker runs (the
Recorder is then touched by that thread only); before it starts and after
``drain`` a call is made at once. If the worker is cancelled (Ctrl-C), the
calls still queued are made on the trio thread before it ends, so the
capture is never silently incomplete.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

#: bytes of queued chunks above which ``room`` makes a reader wait (memory stays bounded in a flood)
HELD_BYTES = 64 << 20
#: s; while the worker runs (CPython's default 5 ms: each syscall of the trio thread, a read,
#: a write, an epoll, could wait that long for the GIL, and a round trip makes several)
SWITCH_INTERVAL = 2e-4
#: s; how long the worker waits at a time for a link's write to end
WRITE_WAIT = 0.25


class OffPath:
    """The ordered Recorder calls of one link (module docstring)."""

    def __init__(self, rec: Any, held_bytes: int = HELD_BYTES) -> None:
        self.rec = rec
        self.clock: Callable[[], int] = rec.clock       # the Recorder's own clock: the stamps
        self.held_bytes = held_bytes
        self._now = 0
        self._items: list[tuple[int, Callable[..., Any], tuple[Any, ...], dict[str, Any], int]] = []
        self._held = 0
        self._wake = trio.Event()
        self._room = trio.Event()
        self._running = False
        self._closing = False
        self._stopped = trio.Event()
        self._writing = 0
        self._written = trio.Event()

    def call(self, fn: Callable[..., Any], *args: Any, size: int = 0, **kwargs: Any) -> None:
        """Stamp now and queue ``fn(*args, **kwargs)`` (a Recorder method);
        ``size``: bytes it holds (a chunk), for ``room``. Made at once when
        the worker is not running and nothing waits."""
        t = self.clock()
        if not self._running and not self._items:
            fn(*args, **kwargs)
            return
        self._items.append((t, fn, args, kwargs, size))
        self._held += size
        self._wake.set()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Around a write to the server: the worker makes no call meanwhile (module docstring)."""
        self._writing += 1
        try:
            yield
        finally:
            self._writing -= 1
            if not self._writing:
                self._written.set()

    async def room(self) -> None:
        """Wait while more than ``held_bytes`` of queued chunks wait for the worker."""
        while self._running and self._held > self.held_bytes:
            self._room = trio.Event()
            await self._room.wait()

    def _make(self, batch: list[tuple[int, Callable[..., Any], tuple[Any, ...], dict[str, Any], int]]) -> None:
        for t, fn, args, kwargs, _ in batch:
            self._now = t
            fn(*args, **kwargs)

    async def run(self) -> None:
        """The worker: make the queued calls in order, a batch at a time on a
        thread, until ``drain``; the Recorder's clock reads the call's stamp meanwhile."""
        self.rec.clock = lambda: self._now
        self._running = True
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
        try:
            while self._items or not self._closing:
                if not self._items:
                    await self._wake.wait()
                    self._wake = trio.Event()
                    continue
                if self._writing and self._held <= self.held_bytes and not self._closing:
                    self._written = trio.Event()
                    with trio.move_on_after(WRITE_WAIT):
                        await self._written.wait()
                    if self._writing:
                        continue
                batch, self._items = self._items, []
                try:
                    await trio.to_thread.run_sync(self._make, batch)
                finally:
                    self._held -= sum(item[4] for item in batch)
                    self._room.set()
        finally:
            # cancelled (Ctrl-C, the link's nursery): what is still queued is recorded here
            batch, self._items = self._items, []
            try:
                self._make(batch)
            finally:
                self.rec.clock = self.clock
                sys.setswitchinterval(switch)
                self._running = False
                self._room.set()
                self._stopped.set()

    async def drain(self) -> None:
        """Make every queued call, stop the worker and give the Recorder its clock back."""
        if not self._running:
            return
        self._closing = True
        self._wake.set()
        await self._stopped.wait()
