"""Requests whose answers may be in a recording gap (pure).

A ``gap`` record says mcptap forwarded bytes it could not record (the relay's
spill file at its bound, a full disk, the tap stopped). A request that was
open while a gap covered the direction its answer travels may have been
answered in the hole: the peer did nothing wrong that the capture can show.
So such a request (``Pending.in_gap``) is never judged unanswered
(``jsonrpc.unanswered_request``, ``lifecycle.eof_with_pending_requests``,
``process.exit``'s pending count); the end of the capture reports them
together as ``capture.answers_in_gap`` (info). A request sent after the gap
is judged as usual; an answer that does arrive after the gap still pairs.

The converse: a request forwarded in the hole is not in the capture, so its
answer, when it comes, matches nothing the capture holds. Once a gap covered a
requester's direction (``Holes``), a response from its peer that matches no
request is ``capture.request_in_gap`` (info), not ``jsonrpc.unmatched_response``
(an error blamed on the responder), but only as often as the holes can hold
requests (an answer can come at any time later, so no clock bounds it):

- each request gets one answer, so each excuse uses up one request the holes
  may hold: a gap that says how many bytes it lost in that direction holds at
  most ``bytes // MIN_REQUEST + 2`` (whole requests of at least ``MIN_REQUEST``
  bytes with their separator, and one cut at each edge); a gap without
  ``bytes`` (or without ``dir``) sets no bound;
- an id excused once (per session) is not excused again until a later gap: a
  request in the hole was answered by the first such response, and a request
  reusing its id could only be sent after that answer, so in the capture.

Past that, an unmatched response is the responder's error again, however long
after the gap. Live recording and re-annotation (``check``, ``check --full``)
feed the same gap records and responses in the same order, so they agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.model import Direction, Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.pairing import Pending, report_once


def mark_gap(pending: Iterable[Pending], direction: Direction | None) -> None:
    """A gap in ``direction`` (None: unknown, both): each of ``pending`` (the
    open requests) whose answer travels that way may be answered in it."""
    for p in pending:
        if direction is None or p.direction is direction.peer:
            p.in_gap = True


#: the shortest line a (lenient) peer may take for a request, its separator
#: included: ``{"id":0,"method":""}`` and a newline (or a batch's comma)
MIN_REQUEST = 21


class Holes:
    """What the recording gaps so far may hold, per requester direction: how
    many requests at most (``room``; None: no bound) and the (session, id
    key)s of the responses already excused since that direction's last gap.
    Falsy while no gap was seen (the annotator's fast path)."""

    __slots__ = ("room", "excused")

    def __init__(self) -> None:
        self.room: dict[Direction, int | None] = {}
        self.excused: dict[Direction, set[Any]] = {}

    def __bool__(self) -> bool:
        return bool(self.room)

    def add(self, direction: Direction | None, nbytes: int | None) -> None:
        """A gap in ``direction`` (None: unknown, both) that lost ``nbytes``
        forwarded that way (None: unknown, no bound)."""
        more = None if nbytes is None or direction is None else nbytes // MIN_REQUEST + 2
        for d in (Direction.C2S, Direction.S2C) if direction is None else (direction,):
            had = self.room.get(d, 0)
            self.room[d] = None if had is None or more is None else had + more
            self.excused[d] = set()

    def excuse(self, requester: Direction, key: Any) -> bool:
        """Whether a response matching no request from ``requester``, with
        ``key`` ((session, id key)), may answer a request in a hole; if so it
        uses up one of the requests the holes may hold."""
        room = self.room.get(requester, 0)
        seen = self.excused.get(requester)
        if room == 0 or seen is None or key in seen:
            return False
        seen.add(key)
        if room is not None:
            self.room[requester] = room - 1
        return True


def request_in_gap(found: list[Finding], requester: Direction, holes: Holes, key: Any) -> list[Finding]:
    """``found`` (a response's pairing findings, it paired with nothing), with
    ``jsonrpc.unmatched_response`` replaced by ``capture.request_in_gap``
    (info) when a gap covered ``requester``'s direction and may still hold the
    request it answers (``Holes.excuse`` of ``key``, (session, id key))."""
    if not any(f.code == "jsonrpc.unmatched_response" for f in found) or not holes.excuse(requester, key):
        return found
    return [finding("capture.request_in_gap", f.message.replace("matches no request the", "matches no request in the capture from the")
                    + f", but a recording gap covered the {requester.value} direction before it: its request may be in the gap")
            if f.code == "jsonrpc.unmatched_response" else f for f in found]


def answers_in_gap(pending: Iterable[Pending]) -> list[Finding]:
    """End of capture: one ``capture.answers_in_gap`` (info) naming the
    requests of ``pending`` (still open, oldest first) that a gap covered and
    that are neither cancelled nor reported yet; they are marked reported, so
    ``Pairing.never_answered`` does not judge them again."""
    left = [p for p in pending if p.in_gap and not p.reported and not p.cancelled]
    return report_once(left, "capture.answers_in_gap",
                       f"{len(left)} request(s) have no answer in the capture, but a recording gap covered their answers' direction "
                       "while they were open: the answers may be in the gap (not judged unanswered): ")


def gap_finding(rec: dict[str, Any]) -> Finding:
    """The ``capture.gap`` finding a ``gap`` record (dict) stands for (check, exports)."""
    lost = f" ({rec['dropped_records']} records lost)" if rec.get("dropped_records") else ""
    return finding("capture.gap", f"part of the traffic was not recorded: {rec.get('reason', 'no reason given')}{lost}")


def counted_findings(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings (JSON) a record counts for in an end record's ``severities`` and
    ``codes``, as ``check`` reports them: its own ``findings``, or for a ``gap`` record
    without any the ``capture.gap`` it stands for (the recorder counts one per gap record
    it writes, ``recorder_gaps``; no gap record carries it). [] for anything else."""
    fs = rec.get("findings")
    if rec.get("type") == "gap" and not fs:
        return [gap_finding(rec).to_json()]
    return [f for f in fs if isinstance(f, dict)] if isinstance(fs, list) else []
