"""The hand-off from the stdio forward path to the recorder (threads, no trio).

    forward threads ──chunk()──►┐
    trio thread ─────call()────►├─ one ordered queue ─► recorder thread ─► Recorder ─► capture
                                ┘   (bounded)

The forward threads (``forward.pump``) and the trio thread (process events,
stderr) append to one queue under a lock, stamping the time as they do: the
queue order is the record order, and since a chunk is queued before it is
written on, it precedes everything caused by it (causal order). One recorder
thread alone calls the Recorder, so framing, annotation and disk writes never
run on the forward path.

When analysis falls behind: while more than ``SPILL_BYTES`` of chunks wait,
chunks are stored unframed and unannotated (``Recorder.stdio_unframed``:
``chunk`` records, re-annotated by ``check``/``show``) until the queue is
empty again, so the queue stays near that bound and nothing is lost. Only if
even that cannot keep up (a disk slower than the relay) and ``LOSE_BYTES``
wait, chunks are not queued: their size is, as a ``gap`` record in order
(principle 3: the capture says so). Forwarding never waits for any of this.

The recorder thread holds the GIL only between blocking calls, and the
forward threads need it only for a few bytecodes per chunk;
``sys.setswitchinterval`` is lowered while the tap runs so a forward thread
that wakes while the recorder is busy gets the GIL within ~50 µs, not 5 ms.
"""

from __future__ import annotations

import collections
import queue
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from mcptap.model import Direction, Finding, Message

SPILL_BYTES = 2 << 20
LOSE_BYTES = 16 << 20
SWITCH_INTERVAL = 50e-6     # s; CPython's default 5 ms would stall a forward thread behind analysis

QUEUED, TAKEN, WITHDRAWN = 0, 1, 2
_CHUNK, _LOST, _STOP = object(), object(), object()


class TapRecorder(Protocol):
    """What the stdio tap calls on its recorder (``mcptap.recorder.Recorder``),
    typed: the tap names methods, never strings. ``clock``: µs since the
    capture started; the hand-off replaces it while its thread runs."""

    clock: Callable[[], int]

    def stdio_bytes(self, direction: Direction, data: bytes, extra: Iterable[Finding] = (),
                    behind: Callable[[], bool] | None = None) -> list[Message]: ...

    def stdio_unframed(self, direction: Direction, data: bytes) -> None: ...

    def lost(self, direction: Direction, nbytes: int) -> None: ...

    def stdio_eof(self, direction: Direction) -> list[Message]: ...

    def stderr(self, data: bytes) -> None: ...

    def process(self, event: str, findings: Iterable[Finding] = (), **fields: Any) -> int: ...

    def exit(self, code: int | None = None, signal: int | None = None, **fields: Any) -> int: ...

    def record(self, type: str, findings: Iterable[Finding] = (), **fields: Any) -> int: ...


class Handoff:
    """The ordered, bounded queue to one recorder thread (module docstring).

    ``rec``: the Recorder (its ``clock`` is replaced while the thread runs so
    every record carries the time its event was queued). ``on_error``: called
    from the recorder thread with a one-line reason when the Recorder raised
    (recording stops; the relay goes on)."""

    def __init__(self, rec: TapRecorder, on_error: Callable[[str], None]) -> None:
        self.rec = rec
        self.error: str | None = None
        self.spills = 0                       # times analysis fell behind
        self.lost_bytes = 0
        self._on_error = on_error
        self._lock = threading.Lock()
        self._q: collections.deque[list[Any]] = collections.deque()
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._idle = False
        self._queued = 0                      # chunk bytes queued and not yet taken
        self._spilling = False
        self._clock: Callable[[], int] = rec.clock
        self._now = 0
        self._thread: threading.Thread | None = None
        self._switch = sys.getswitchinterval()

    def start(self) -> None:
        self.rec.clock = lambda: self._now
        sys.setswitchinterval(min(self._switch, SWITCH_INTERVAL))
        self._thread = threading.Thread(target=self._run, name="mcptap-recorder", daemon=True)
        self._thread.start()

    # -- producers (any thread) ------------------------------------------------
    def chunk(self, direction: Direction, data: bytes) -> list[Any] | None:
        """Queue a chunk just read in ``direction`` (before it is written on).
        Returns a token for ``withdraw``."""
        n = len(data)
        with self._lock:
            t = self._clock()
            if self._queued > LOSE_BYTES:
                last = self._q[-1] if self._q else None
                if last is not None and last[1] is _LOST and last[2] is direction:
                    last[3] += n
                else:
                    self._q.append([QUEUED, _LOST, direction, n, t, 0])
                self.lost_bytes += n
                return None
            item = [QUEUED, _CHUNK, direction, data, t, n]
            self._q.append(item)
            self._queued += n
            ring, self._idle = self._idle, False
        if ring:
            self._bell.put(None)
        return item

    def call(self, fn: Callable[..., object], *args: Any, **fields: Any) -> None:
        """Queue a call of ``fn(*args, **fields)`` (a Recorder method) in order."""
        self._put([QUEUED, fn, args, fields, 0, 0])

    def _put(self, item: list[Any]) -> None:
        with self._lock:
            item[4] = self._clock()
            self._q.append(item)
            ring, self._idle = self._idle, False
        if ring:
            self._bell.put(None)

    def withdraw(self, token: list[Any] | None) -> bool:
        """Take a queued chunk back (its write failed); False if the recorder
        already took it."""
        if token is None:
            return False
        with self._lock:
            if token[0] != QUEUED:
                return False
            token[0] = WITHDRAWN
            self._queued -= token[5]
            return True

    def stop(self) -> None:
        """Process everything queued, then end the recorder thread (blocking);
        restores the Recorder's clock and the switch interval."""
        if self._thread is not None:
            self._put([QUEUED, _STOP, (), {}, 0, 0])
            self._thread.join()
            self._thread = None
        self.rec.clock = self._clock
        sys.setswitchinterval(self._switch)

    # -- the recorder thread ---------------------------------------------------------
    def _behind(self) -> bool:
        if self._queued > SPILL_BYTES:
            if not self._spilling:
                self.spills += 1
            self._spilling = True
        return self._spilling

    def _run(self) -> None:
        lock, q, rec = self._lock, self._q, self.rec
        while True:
            with lock:
                if q:
                    item = q.popleft()
                    state, item[0] = item[0], TAKEN
                    if state == QUEUED:
                        self._queued -= item[5]
                    last = not q
                else:
                    self._idle = True
                    item = None
            if item is None:
                self._bell.get()
                continue
            if state == WITHDRAWN:
                continue
            kind = item[1]
            if kind is _STOP:
                return
            self._now = item[4]
            if self.error is not None:
                continue
            try:
                if kind is _CHUNK:
                    if self._spilling and last:
                        self._spilling = False        # caught up: annotate again
                    if self._behind():
                        rec.stdio_unframed(item[2], item[3])
                    else:
                        rec.stdio_bytes(item[2], item[3], behind=self._behind)
                elif kind is _LOST:
                    rec.lost(item[2], item[3])
                else:
                    kind(*item[2], **item[3])
            except Exception as exc:  # noqa: BLE001 - a recorder bug must not kill the relay
                self.error = f"{type(exc).__name__}: {exc}"
                try:
                    rec.record("gap", reason=f"recorder failed: {self.error}")
                except Exception:  # noqa: BLE001
                    pass
                self._on_error(self.error)
