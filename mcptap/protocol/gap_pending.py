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
requester's direction (``gapped``), a response from its peer that matches no
request is ``capture.request_in_gap`` (info), not ``jsonrpc.unmatched_response``
(an error blamed on the responder).
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


def gapped(seen: set[Direction], direction: Direction | None) -> None:
    """Add to ``seen`` (the directions whose requests a gap may hold) the
    gap's ``direction`` (None: unknown, both)."""
    seen.update((Direction.C2S, Direction.S2C) if direction is None else (direction,))


def request_in_gap(found: list[Finding], requester: Direction, seen: set[Direction]) -> list[Finding]:
    """``found`` (a response's pairing findings, it paired with nothing), with
    ``jsonrpc.unmatched_response`` replaced by ``capture.request_in_gap``
    (info) when a gap covered ``requester``'s direction (``seen``): the
    request it answers may have been forwarded in the hole."""
    if requester not in seen:
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
