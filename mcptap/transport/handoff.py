"""The hand-off from the stdio forward path to the recorder (threads, no trio).

    relay process ──copy pipe──► copy reader thread ──chunk()──►┐
    trio thread ─────────────────────────────────────call()────►├─ one ordered queue ─► recorder thread ─► Recorder
                                                                ┘   (bounded)

The relay process (``relay_child``) forwards and sends a copy of every chunk,
in read order, stamped with the Recorder's clock; the trio thread adds process
events and stderr. One recorder thread alone calls the Recorder, in queue
order, so framing, annotation and disk writes never run on the forward path.

When analysis falls behind: while more than ``SPILL_BYTES`` of chunks wait,
chunks are stored unframed and unannotated (``Recorder.stdio_unframed``:
``chunk`` records, re-annotated by ``check``/``show``) until the queue is
empty again, so the queue stays near that bound and nothing is lost. Only if
even that cannot keep up (a disk slower than the relay) and ``LOSE_BYTES``
wait, chunks are not queued: their size is, as a ``gap`` record in order
(principle 3: the capture says so). Forwarding never waits for any of this.

The recorder thread runs at idle CPU priority (``priority``), so it never delays the relay,
the server or the host, in short runs (``priority.Pacer``: Linux may still pick an idle
thread over a woken normal one until its next tick), and writes its records with one
``write`` per batch (when the queue is empty, and every ``FLUSH_ITEMS`` records /
``FLUSH_BYTES``), not one per record; after each it publishes what the capture file holds
(``spill.Recorded``: the relay rewinds its spill file once that covers every entry). When
the session ends (``boost``) it goes back to normal priority, or, where that is not
allowed, hands the queue to a fresh normal-priority thread; ``hurry`` (mcptap was asked
to stop) stores everything still queued unframed, so the end record is written at once.

Time order: the tap's own events (``call``) wait for the copies the relay
read before them, and what the tap causes (a signal it sends, ``call_caused``)
is queued before its effects (``call_order``).

``sys.setswitchinterval`` is lowered while the tap runs so the copy reader
gets the GIL promptly while the recorder annotates (it then drains the copy
pipe 1 MiB at a time).
"""

from __future__ import annotations

import collections
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

from mcptap.model import Direction
from mcptap.transport import priority
from mcptap.transport.call_order import QUEUED, CallOrder, OrderedCalls
from mcptap.transport.spill import Recorded, SpillFile
from mcptap.transport.tap_recorder import TapRecorder

SPILL_BYTES = 1 << 20
#: what a queued chunk costs beyond its bytes (list, bytes object): the bounds
#: are memory bounds, also for a stream of tiny chunks (round trips)
ITEM_COST = 256
LOSE_BYTES = 16 << 20
FLUSH_ITEMS = 64            # records the recorder thread writes with one write() at most
FLUSH_BYTES = 256 << 10     # and chunk bytes
SWITCH_INTERVAL = 5e-4      # s; CPython's default 5 ms would let the recorder starve the copy reader

TAKEN, WITHDRAWN = 1, 2                  # item states after QUEUED
_CHUNK, _LOST, _SPILLED, _STOP = object(), object(), object(), object()
#: the gap record's reason for bytes the relay dropped with its spill file at its bound
SPILL_FULL = ("the relay's spill file was at its size bound (MCPTAP_SPILL_LIMIT, or half the free disk space) while "
              "analysis was behind: bytes forwarded but not recorded")


def _data_size(item: list[Any]) -> int:
    """Bytes of peer data an item puts in records (bounds what a batch holds)."""
    kind = item[1]
    if kind is _CHUNK:
        return int(item[5])
    if kind is _SPILLED:
        return int(item[3][1])
    if kind is _LOST or kind is _STOP:
        return 0
    return sum(len(a) for a in item[2] if isinstance(a, (bytes, bytearray, memoryview)))   # stderr chunks


class Handoff(OrderedCalls):
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
        #: the copy reader waits here while too much is queued (``wait_below``); -1: no waiter, else its bound
        self._room = threading.Condition(self._lock)
        self._room_at = -1
        #: times the copy reader waited for room (back-pressure to the relay's spill file)
        self.reader_waits = 0
        self._q: collections.deque[list[Any]] = collections.deque()
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._idle = False
        self._queued = 0                      # chunk bytes queued and not yet taken (+ ITEM_COST each)
        self._set_aside = 0                   # queued chunks the relay had to put in its spill file
        self._spilling = False
        self._clock: Callable[[], int] = rec.clock
        self._now = 0
        self._thread: threading.Thread | None = None
        self._started = False
        self.spill: SpillFile | None = None
        self.recorded: Recorded | None = None   # set: what the capture holds is published there
        #: items taken by the recorder so far (the tap's end waits while it moves)
        self.progress = 0
        self._switch = sys.getswitchinterval()
        self._boost = False                   # the session is ending: normal CPU priority
        self._low_ident: int | None = None   # the recorder thread at idle priority (threading ident)
        self._handed_over = False             # it could not leave it: a fresh thread took over
        self._hurry = False                   # mcptap must stop: store the rest unframed
        self._nice = priority.process_nice()
        self._order = CallOrder()             # calls waiting for the copies read before them

    def start(self) -> None:
        self._started = True
        self.rec.clock = lambda: self._now
        sys.setswitchinterval(min(self._switch, SWITCH_INTERVAL))
        self._thread = threading.Thread(target=self._run_low, name="mcptap-recorder", daemon=True)
        self._thread.start()

    def boost(self) -> None:
        """The session is ending: analysis runs at normal priority from now on
        (a host kills a server that lingers), in the recorder thread itself
        if the OS allows it, else in a fresh thread started here (call it from
        a normal-priority thread). Idempotent."""
        with self._lock:
            if self._boost or self._thread is None:
                self._boost = True
                return
            self._boost = True
            old = self._thread

        def take_over() -> None:
            old.join()
            if self._handed_over:
                self._run()

        self._bell.put(None)                  # an idle recorder thread wakes up and sees it
        self._thread = threading.Thread(target=take_over, name="mcptap-recorder", daemon=True)
        self._thread.start()

    boosted = property(lambda self: self._boost)
    hurried = property(lambda self: self._hurry)

    def hurry(self) -> None:
        """mcptap was asked to stop (a host's SIGTERM): everything still
        queued is stored unframed (``chunk`` records, annotated later by
        check/show), so the end record follows at once; also ``boost``."""
        self._hurry = True
        self.boost()

    # -- producers (any thread) ------------------------------------------------
    @property
    def clock(self) -> Callable[[], int]:
        """The Recorder's own clock (µs since capture start)."""
        return self._clock

    def chunk(self, direction: Direction, data: bytes, t: int | None = None) -> list[Any] | None:
        """Queue a chunk read in ``direction`` (before it is written on) at
        ``t`` (µs, the Recorder's clock; default now). Returns a token for
        ``withdraw``."""
        n = len(data)
        with self._lock:
            if t is None:
                t = self._clock()
            if self._order.pending:
                self._order.release(t, self._q)
            if self._queued > LOSE_BYTES:
                last = self._q[-1] if self._q else None
                if last is not None and last[1] is _LOST and last[2] is direction and last[6] is None:
                    last[3] += n
                else:
                    self._q.append([QUEUED, _LOST, direction, n, t, 0, None])
                self.lost_bytes += n
                item = None
            else:
                item = [QUEUED, _CHUNK, direction, data, t, n + ITEM_COST]
                self._q.append(item)
                self._queued += n + ITEM_COST
            ring, self._idle = self._idle, False
        if ring:
            self._bell.put(None)
        return item

    @property
    def queued_bytes(self) -> int:
        return self._queued

    def wait_below(self, limit: int) -> None:
        """Block until at most ``limit`` chunk bytes (+ ``ITEM_COST`` each) are
        queued: the copy reader's back-pressure. Woken by the recorder thread
        when it takes enough (no polling: a paused reader costs no CPU and
        resumes at once); the recorder pays one comparison per item only while
        a reader waits."""
        with self._lock:
            if self._queued <= limit:
                return
            self.reader_waits += 1
            self._room_at = limit
            while self._queued > limit:
                self._room.wait()
            self._room_at = -1

    def spilled(self, direction: Direction, offset: int, nbytes: int, t: int) -> None:
        """A chunk the relay wrote to the spill file (``spill``) at file offset
        ``offset``: analysis is behind until it has taken it."""
        with self._lock:
            self._set_aside += 1
        self._put([QUEUED, _SPILLED, direction, (offset, nbytes), t, 0])

    def lost(self, direction: Direction, nbytes: int, t: int, past_bound: bool = False) -> None:
        """``nbytes`` forwarded in ``direction`` were never queued (a ``gap``);
        ``past_bound``: the relay's spill file was at its bound (``spill_bound``),
        else it could not be written (disk full)."""
        with self._lock:
            self.lost_bytes += nbytes
        self._put([QUEUED, _LOST, direction, nbytes, t, 0, SPILL_FULL if past_bound else None])

    def _put(self, item: list[Any]) -> None:
        with self._lock:
            if item[4] is None:
                item[4] = self._clock()
            elif self._order.pending:
                self._order.release(item[4], self._q)
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
            if 0 <= self._room_at and self._queued <= self._room_at:
                self._room.notify()
            return True

    def stop(self) -> None:
        """Process everything queued, then end the recorder thread (blocking);
        restores the Recorder's clock and the switch interval."""
        if not self._started:
            self.start()
        with self._lock:
            self._order.end(self._q)
        if self._thread is not None:
            self._put([QUEUED, _STOP, (), {}, 0, 0])
            self._thread.join()
            self._thread = None
        self.rec.clock = self._clock
        sys.setswitchinterval(self._switch)

    # -- the recorder thread ---------------------------------------------------------
    def _behind(self) -> bool:
        if self._boost and self._low_ident == threading.get_ident() and not self._leave_idle():
            self._start_spilling()                # finish the chunk fast: the next thread takes over
        if self._hurry or self._queued > SPILL_BYTES or self._set_aside:
            self._start_spilling()
        return self._spilling

    def _start_spilling(self) -> None:
        if not self._spilling:
            self.spills += 1
        self._spilling = True

    def _leave_idle(self) -> bool:
        """In the idle recorder thread, once boosted: back to normal priority
        (True), or False: the thread must end and a fresh one take over."""
        if priority.restore(self._nice):
            self._low_ident = None
            return True
        return False

    def _run_low(self) -> None:
        if not self._boost and priority.idle():
            self._low_ident = threading.get_ident()
        self._run()

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._flush()

    def _flush(self) -> None:
        """Write the records held, then publish what the capture file holds
        (``spill.Recorded``: the relay may rewind its spill file up to it)."""
        self.rec.hold_flush = False
        self.rec.flush()
        if self.recorded is not None and self.error is None and (ends := self.rec.stored_ends()) is not None:
            self.recorded.publish(*ends)

    def _loop(self) -> None:
        lock, q, rec = self._lock, self._q, self.rec
        me = threading.get_ident()
        pace = priority.Pacer()
        held = held_bytes = 0                     # records written but not flushed (items, chunk bytes)
        while True:
            if self._low_ident == me:
                if self._boost and not self._leave_idle():
                    self._low_ident = None
                    self._handed_over = True
                    return                        # take_over() goes on in a normal thread
                pace()
            with lock:
                if q:
                    item = q.popleft()
                    state, item[0] = item[0], TAKEN
                    self.progress += 1
                    if state == QUEUED:
                        self._queued -= item[5]
                        if 0 <= self._room_at and self._queued <= self._room_at:
                            self._room.notify()      # the copy reader waits for room (wait_below)
                    if item[1] is _SPILLED:
                        self._set_aside -= 1
                    last = not q
                else:
                    self._idle = True
                    item = None
            if item is None:
                if held:                          # caught up: what was recorded goes to disk now
                    self._flush()
                    held = held_bytes = 0
                self._bell.get()
                pace.rested()
                continue
            if state == WITHDRAWN:
                continue
            kind = item[1]
            if kind is _STOP:
                return
            self._now = item[4]
            if self.error is not None:
                continue
            # one write per batch of records instead of one per record: flushed when
            # the queue is empty, before FLUSH_ITEMS records or FLUSH_BYTES of data
            # are held, and at once after an item that large on its own
            cost = _data_size(item)
            if held and (held >= FLUSH_ITEMS or held_bytes + cost > FLUSH_BYTES):
                self._flush()
                held = held_bytes = 0
            held += 1
            held_bytes += cost
            rec.hold_flush = cost < FLUSH_BYTES
            try:
                if kind is _CHUNK:
                    if self._spilling and last and not self._hurry:
                        self._spilling = False        # caught up: annotate again
                    if self._behind():
                        rec.stdio_unframed(item[2], item[3])
                    else:
                        rec.stdio_bytes(item[2], item[3], behind=self._behind)
                elif kind is _SPILLED:
                    self._start_spilling()
                    offset, n = item[3]
                    assert self.spill is not None
                    rec.stdio_unframed(item[2], self.spill.read(offset, n))
                elif kind is _LOST:
                    rec.lost(item[2], item[3], item[6])
                else:
                    kind(*item[2], **item[3])
            except Exception as exc:  # noqa: BLE001 - a recorder bug must not kill the relay
                self.error = f"{type(exc).__name__}: {exc}"
                try:
                    rec.gap(f"recorder failed: {self.error}")
                except Exception:  # noqa: BLE001
                    pass
                self._on_error(self.error)
