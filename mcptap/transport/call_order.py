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
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any


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
