"""The exact names in ``check``'s kept places (level 3).

Analysis reads a method or tool name with a lone UTF-16 surrogate escape
(``"tools/x\\ud800"``) as U+FFFD, so a finding's message quotes ``tools/x\ufffd``
and a place's method is ``tools/x\ufffd``. :func:`exact_places` puts the names
the peer sent back into the kept places (``show/lone.py``'s
:class:`~mcptap.show.lone.LoneNames`, learnt from the records up to the last
such place), after the scan: a message, text in every format, quotes them in
escape form (``tools/x\\ud800``, ``escape.escape_surrogates``), and so does a
place's ``method``: JSON, SARIF and JUnit outputs stay strict (a lone surrogate
escape is refused by strict readers such as orjson, serde, and SARIF uploads),
at the cost of a peer's literal backslash looking alike. Only a
capture with a kept place holding U+FFFD is read again (rare: the scan's own
path is unchanged); standard input cannot be read twice and keeps U+FFFD.
"""

from __future__ import annotations

from mcptap.check.reannotated import Reannotated
from mcptap.check.report import CaptureReport, CheckReport, Place
from mcptap.escape import escape_surrogates
from mcptap.show.lone import LoneNames
from mcptap.show.tracker import Tracker


def _lossy(p: Place) -> bool:
    return "\ufffd" in p.message or (p.method is not None and "\ufffd" in p.method)


def exact_places(report: CheckReport) -> None:
    """Give every kept place of ``report`` whose message or method holds
    U+FFFD the exact names (in place). Raises CaptureReadError only if a
    capture read fine before does not now (it changed in between)."""
    for cap in report.captures:
        places = [p for g in cap.groups.values() for p in g.places if _lossy(p)]
        if places and cap.error is None and cap.path != "-":
            _fix(cap, places)


def _fix(cap: CaptureReport, places: list[Place]) -> None:
    lines = [p.line for p in places]
    last = None if None in lines else max(n for n in lines if n is not None)
    names = LoneNames()
    tracker = Tracker()         # (for a batch's member views)
    ra = Reannotated.open(cap.path, shapes=False)
    for rec in ra:      # (a break closes the file: the generator goes with this frame)
        tracker.feed(rec)
        names.feed(rec, tracker.members)
        if last is not None and ra.line is not None and ra.line >= last:
            break       # a place quotes names of its own record or earlier ones
    for p in places:
        p.message = escape_surrogates(names.text(p.message))        # text (every format's own rules apply after)
        if p.method is not None:
            p.method = escape_surrogates(names.names.get(p.method, p.method))
