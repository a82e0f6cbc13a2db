"""The time order of the stdio tap's own events and the relay's copies
(``handoff.Handoff`` keeps one ``CallOrder``, used under its lock).

Time order: a chunk's copy reaches the queue some time after the relay read
it (its copy queue, the copy pipe, a trickle held back), while process
events and stderr from the trio thread are stamped when they happen. So
while a copy reader feeds the queue (``expect_copies``), such a call waits
in a side list until the copies read before it are queued. Only the relay
knows when that is: the call asks it (once per answer), and the relay puts a
THROUGH item stamped then into its stream, after every copy read before it
(``copy_stream``; the stream is in stamp order). That item
(``copies_through``), any later-stamped copy (``chunk``, the copy stream's
own events) or the stream's end (``copies_ended``) moves the call into the
queue. Records then keep both orders: queue order is time order.

Causal order: an event the tap causes (a signal to the server's group) is
stamped before the act, under the queue's lock (``call_caused``): so the
server's EOF or output that the act brings about, read and stamped by the
relay after it, is never queued before it. Stamped after the act (as
``call`` would), the server could die and its EOF be stamped first.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable
from typing import Any

QUEUED = 0                  # a Handoff queue item's state (item[0]) until the recorder takes it


class CallOrder:
    """Calls (``Handoff`` queue items: ``item[4]`` is the stamp, µs) waiting
    for the copies read before them (module docstring). No lock of its own:
    every method runs under the Handoff's."""

    __slots__ = ("ask", "asked", "ordered", "pending")

    def __init__(self) -> None:
        self.ordered = False                   # a copy reader feeds chunks: calls wait for older copies
        self.pending: collections.deque[list[Any]] = collections.deque()   # those calls, in time order
        self.ask: Callable[[], None] | None = None   # asks the relay for a THROUGH item (must not block)
        self.asked = False                     # and it has not answered yet

    def expect(self, ask: Callable[[], None] | None) -> None:
        """Calls wait from now on; ``ask``: None: for a later copy or the end only."""
        self.ordered = True
        self.ask = ask

    def wait(self, item: list[Any]) -> bool:
        """Keep ``item`` back if calls wait (True), asking the relay once."""
        if not self.ordered:
            return False
        self.pending.append(item)
        self._ask()
        return True

    def release(self, t: int | None, q: collections.deque[list[Any]]) -> bool:
        """Move the calls stamped at ``t`` or before (all: None) to ``q``; True if any moved."""
        pending = self.pending
        moved = False
        while pending and (t is None or pending[0][4] <= t):
            q.append(pending.popleft())
            moved = True
        return moved

    def through(self, t: int, q: collections.deque[list[Any]]) -> bool:
        """The relay's answer: every copy read before ``t`` is queued. Returns
        whether calls moved to ``q``; asks again for calls made meanwhile."""
        self.asked = False
        moved = self.release(t, q)
        if self.pending:
            self._ask()
        return moved

    def end(self, q: collections.deque[list[Any]]) -> None:
        """The copy stream ended: every waiting call to ``q``, none waits from now on."""
        self.ordered = False
        self.ask = None
        self.release(None, q)

    def _ask(self) -> None:
        if not self.asked and self.ask is not None:
            self.asked = True
            self.ask()


class OrderedCalls:
    """Mixin of ``handoff.Handoff``: the tap's own events in time and causal
    order with the relay's copies (module docstring). The attributes below are
    the Handoff's; every method takes its lock."""

    _lock: threading.Lock
    _order: CallOrder
    _clock: Callable[[], int]
    _q: collections.deque[list[Any]]
    _idle: bool
    _bell: queue.SimpleQueue[None]
    _put: Callable[[list[Any]], None]

    def call(self, fn: Callable[..., object], *args: Any, **fields: Any) -> None:
        """Queue a call of ``fn(*args, **fields)`` (a Recorder method) for an
        event that happens now: after every chunk read before it."""
        self._stamped([QUEUED, fn, args, fields, None, 0], None)

    def call_caused(self, act: Callable[[], dict[str, Any]], fn: Callable[..., object], *args: Any, **fields: Any) -> None:
        """Do ``act()`` (e.g. send a signal; it must not block) and queue a call
        of ``fn`` for it with the fields ``act`` returns added, stamped before
        ``act`` ran: nothing ``act`` causes is queued before it (causal order)."""
        self._stamped([QUEUED, fn, args, fields, None, 0], act)

    def _stamped(self, item: list[Any], act: Callable[[], dict[str, Any]] | None) -> None:
        with self._lock:          # no copy stamped after now is queued before the item
            item[4] = self._clock()
            if act is not None:
                item[3].update(act())
            waits = self._order.wait(item)
        if not waits:
            self._put(item)

    def call_at(self, t: int, fn: Any, *args: Any, **fields: Any) -> None:
        """Queue a call for an event of the copy stream at ``t`` (µs, the
        Recorder's clock): in the copy stream's order."""
        self._put([QUEUED, fn, args, fields, t, 0])

    def expect_copies(self, ask: Callable[[], None] | None = None) -> None:
        """A copy reader starts feeding chunks: calls wait for the copies read
        before them; ``ask()`` asks the relay for a THROUGH item."""
        with self._lock:
            self._order.expect(ask)

    def stop_asking(self) -> None:
        """``ask`` is not called any more once this returns (its pipe may close)."""
        with self._lock:
            self._order.ask = None

    def copies_through(self, t: int) -> None:
        """Every chunk the relay read before ``t`` (µs, the Recorder's clock)
        is queued (the relay's THROUGH item)."""
        with self._lock:
            ring = self._order.through(t, self._q) and self._idle
            if ring:
                self._idle = False
        if ring:
            self._bell.put(None)

    def copies_ended(self) -> None:
        """The copy stream ended: nothing more comes before a waiting call."""
        with self._lock:
            self._order.end(self._q)
            ring, self._idle = self._idle, False
        if ring:
            self._bell.put(None)
