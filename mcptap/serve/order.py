"""Recorded order among the mock's delayed outputs (trio, level 4).

With ``--latency recorded`` each client message's outputs are released by a task of their own
at their recorded times, each delay counted from when the live message came. Two orders the
recording shows are kept whatever the live client's timing:

* within one client request (``Out.via``): a tool that asks the client something and, before
  the answer, sends a log or progress, then more after the answer: a live client that answers
  sooner than the recorded one would let the later task overtake the earlier;
* across client messages: what the recorded server sent before a client message arrived
  (``Out.seq`` below that message's ``Out.cause``) comes out before anything sent because of
  that message. A client faster than the recorded one (it sends its next request before the
  delay of an earlier answer has passed) would otherwise get the later request's answer first,
  or the first answers before the messages the server wrote at start. Outputs of requests that
  were open together in the recording keep no order among them: each goes at its own time, as
  a real server answers requests it works on at once.

:class:`InOrder` holds an output until those outputs have been released (or dropped).

    order = InOrder()
    plan = order.plan(outs)              # when outs are scheduled, in order
    for out, (before, done) in zip(outs, plan):
        ...await its time; await InOrder.turn(before)...; send; order.release(out, done)
"""

from __future__ import annotations

from typing import Any

import trio

from mcptap.serve.live import Out
from mcptap.serve.wire import hkey


class InOrder:
    """Per live session: the latest scheduled output's event, by client request, and the
    outputs scheduled and not released yet with their recorded seqs."""

    def __init__(self) -> None:
        self._last: dict[Any, trio.Event] = {}
        self._held: dict[int, tuple[int, trio.Event]] = {}     # id(done) -> (recorded seq, done)

    def _earlier(self, outs: list[Out]) -> list[trio.Event]:
        """The events of held outputs the recording shows sent before the client message ``outs`` follow."""
        cause = next((o.cause for o in outs if o.cause is not None), None)
        if cause is None:
            return []
        return [done for seq, done in self._held.values() if seq < cause and not done.is_set()]

    def waiting(self, outs: list[Out]) -> bool:
        """Whether some of ``outs`` must wait for an earlier output not yet released."""
        return bool(self._earlier(outs)) or any(
            o.via is not None and (e := self._last.get(hkey(o.via))) is not None and not e.is_set() for o in outs)

    def plan(self, outs: list[Out]) -> list[tuple[list[trio.Event], trio.Event]]:
        """For each output: the events to wait for first (the earlier outputs it must follow;
        the first output of ``outs`` carries the other messages' ones, the rest follow it), and
        its own, to be set once it is released or dropped."""
        plan = []
        earlier = self._earlier(outs)
        for o in outs:
            done = trio.Event()
            before, earlier = earlier, []
            if o.via is not None:
                k = hkey(o.via)
                last = self._last.get(k)
                if last is not None:
                    before.append(last)
                self._last[k] = done
            if o.seq is not None:
                self._held[id(done)] = (o.seq, done)
            plan.append((before, done))
        return plan

    @staticmethod
    async def turn(before: list[trio.Event]) -> None:
        for e in before:
            await e.wait()

    def release(self, out: Out, done: trio.Event) -> None:
        """``out`` was sent or dropped: the outputs that follow it may go."""
        done.set()
        self._held.pop(id(done), None)
        if out.via is not None and self._last.get(hkey(out.via)) is done:
            del self._last[hkey(out.via)]
