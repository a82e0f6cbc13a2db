"""Recorded order among the mock's delayed outputs (trio, level 4).

With ``--latency recorded`` each client message's outputs are released by a task of their own
at their recorded times. A tool that asks the client something and, before the answer, sends a
log or progress (recorded in that order), then more after the answer: a live client that answers
sooner than the recorded one would let the later task overtake the earlier. :class:`InOrder`
holds an output until every output for the same client request (``Out.via``) scheduled before it
has been released (or dropped), so each request's messages keep their recorded order; outputs for
other requests (or none) are not held.

    order = InOrder()
    plan = order.plan(outs)              # when outs are scheduled, in order
    for out, (before, done) in zip(outs, plan):
        ...await its time; await InOrder.turn(before)...; send; order.release(out, done)
"""

from __future__ import annotations

from typing import Any

import trio

from mcptap.serve.core import Out
from mcptap.serve.wire import hkey


class InOrder:
    """Per live session: the latest scheduled output's event, by client request."""

    def __init__(self) -> None:
        self._last: dict[Any, trio.Event] = {}

    def waiting(self, outs: list[Out]) -> bool:
        """Whether some of ``outs`` must wait for an earlier output not yet released."""
        return any(o.via is not None and (e := self._last.get(hkey(o.via))) is not None and not e.is_set() for o in outs)

    def plan(self, outs: list[Out]) -> list[tuple[trio.Event | None, trio.Event]]:
        """For each output: the event of the one before it for the same request (None: no
        wait), and its own, to be set once it is released or dropped."""
        plan = []
        for o in outs:
            done = trio.Event()
            before = None
            if o.via is not None:
                k = hkey(o.via)
                before = self._last.get(k)
                self._last[k] = done
            plan.append((before, done))
        return plan

    @staticmethod
    async def turn(before: trio.Event | None) -> None:
        if before is not None:
            await before.wait()

    def release(self, out: Out, done: trio.Event) -> None:
        """``out`` was sent or dropped: the next output for its request may go."""
        done.set()
        if out.via is not None and self._last.get(hkey(out.via)) is done:
            del self._last[hkey(out.via)]
