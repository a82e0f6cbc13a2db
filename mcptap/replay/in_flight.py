"""Which client requests were in flight when the server asked (pure, level 3):
what may have caused each recorded server request, so that one only skipped
steps can have caused is SKIPPED on replay, not MISSING (``replay/compare.py``).

    log = InFlightLog()
    log.sent(step)          # a request step (each member request of a batch: once per member)
    log.answered(step)      # its answer (a batch member's)
    log.asked(r)            # server request r (index in Plan.server_requests)
    log.resolve(steps, server_requests, by_session)    # once every step's skip is known

Why a log: whether a step is skipped is known only once the capture has ended
(the tool policy reads listings made after a call), and holding every server
request's whole in-flight set (as a tuple) grows as requests × in-flight —
so it used to be held only up to 64 requests in flight, and past that the
cause was lost and a correct server blamed. The log holds one 8-byte entry per
event (bounded by the capture, not by a constant); ``resolve`` plays it back
with the skips known, keeping per session the steps in flight in send order (a
linked list: O(1) a step) and how many of them are sent, so each server
request gets its exact count, whether only skipped steps were in flight, and
the first few of them (for the report) in O(1).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

_SENT, _ANSWERED, _ASKED, _NOTIFIED = 0, 1, 2, 3
#: in-flight steps kept per server request for the report (it names three, then "…")
SHOWN = 4


class _Order:
    """Steps in flight in send order (their indices increase), as a linked
    list: add at the end, remove anywhere, the first few, all in O(1)."""

    __slots__ = ("links", "head", "tail", "sent")

    def __init__(self) -> None:
        self.links: dict[int, list[int]] = {}   # step -> [previous, next] (-1: none)
        self.head = self.tail = -1
        self.sent = 0                           # how many of them are not skipped

    def add(self, i: int, skipped: bool) -> None:
        self.links[i] = [self.tail, -1]
        if self.tail >= 0:
            self.links[self.tail][1] = i
        else:
            self.head = i
        self.tail = i
        self.sent += not skipped

    def remove(self, i: int, skipped: bool) -> None:
        prev, nxt = self.links.pop(i)
        if prev >= 0:
            self.links[prev][1] = nxt
        else:
            self.head = nxt
        if nxt >= 0:
            self.links[nxt][0] = prev
        else:
            self.tail = prev
        self.sent -= not skipped

    def first(self, n: int) -> list[int]:
        out: list[int] = []
        i = self.head
        while i >= 0 and len(out) < n:
            out.append(i)
            i = self.links[i][1]
        return out


class InFlightLog:
    """The order of sends, answers and server requests of one capture (module docstring)."""

    def __init__(self) -> None:
        self._events = array("q")

    def sent(self, step: int) -> None:
        self._events.append(step << 2 | _SENT)

    def answered(self, step: int) -> None:
        self._events.append(step << 2 | _ANSWERED)

    def asked(self, r: int) -> None:
        self._events.append(r << 2 | _ASKED)

    def notified(self, k: int) -> None:
        """A server notification counted by ``notes[k]`` (``resolve``)."""
        self._events.append(k << 2 | _NOTIFIED)

    def resolve(self, steps: Sequence[Any], server_requests: Sequence[Any], by_session: bool, notes: Sequence[Any] = ()) -> None:
        """Set ``in_flight`` (how many client requests were in flight),
        ``only_skipped`` (each of them skipped) and ``during`` (the first
        ``SHOWN`` of them, plan step indices in send order) on each server
        request. ``by_session``: (HTTP) a server request of a session was
        caused by that session's requests or sessionless ones; else by any.
        ``notes``: per kind of server notification (``steps.Notified``), its
        ``total`` and ``expected`` count (those not sent while only skipped
        requests were in flight) are added up."""
        everywhere = _Order()
        sessions: dict[Any, _Order] = {}
        count: dict[int, int] = {}              # step -> its requests in flight (a batch: several)

        def in_flight(session: Any) -> list[_Order]:
            session = session if by_session else None
            return [everywhere] if session is None else [o for o in (sessions.get(session), sessions.get(None)) if o is not None]

        for ev in self._events:
            n, kind = ev >> 2, ev & 3
            if kind == _NOTIFIED:
                note = notes[n]
                orders = in_flight(note.session)
                note.total += 1
                note.expected += not (any(o.links for o in orders) and not any(o.sent for o in orders))
                continue
            if kind == _ASKED:
                srv = server_requests[n]
                orders = in_flight(srv.session)
                size = sum(len(o.links) for o in orders)
                srv.in_flight = size
                srv.only_skipped = size > 0 and not any(o.sent for o in orders)
                srv.during = tuple(sorted(i for o in orders for i in o.first(SHOWN))[:SHOWN])
                continue
            step = steps[n]
            skipped = bool(step.skip)
            if kind == _SENT:
                count[n] = count.get(n, 0) + 1
                if count[n] == 1:
                    everywhere.add(n, skipped)
                    sessions.setdefault(step.session, _Order()).add(n, skipped)
            elif count.get(n):
                count[n] -= 1
                if not count[n]:
                    del count[n]
                    everywhere.remove(n, skipped)
                    sessions[step.session].remove(n, skipped)
        self._events = array("q")
