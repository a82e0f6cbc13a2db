"""Protocol errors new in a replay (pure, level 3; reads captures by streaming).

The recorder annotates the replayed session like any capture, so a live
server that breaks the protocol (answers a request twice, sends malformed
JSON-RPC) carries error-severity findings there that the recorded session did
not: ``replay`` reports those as it reports a changed answer, and they fail it.

``plan_and_errors(path, …) -> (Plan, Counter[code])``: the replay plan and the
original capture's error-severity findings by code, in one pass (the capture
may be standard input, read once); ``errors_of(path) -> Counter[code]``: the
same count for the new capture (and, given ``notes``, its server notifications
by method, as diff counts them); ``new_errors(original, live) -> [(code, n)]``:
codes the live session has and the original does not, by code;
``notification_changes(plan, live) -> [Item]``: the server notification methods
the live session never sent or sent new, as diff reports them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from mcptap.capture.reader import CaptureStream
from mcptap.compare.mask import Masker
from mcptap.diff.notified import notification_items, notified
from mcptap.diff.surface import Item
from mcptap.reannotate_views import annotated
from mcptap.replay.plan import Plan, build_plan


def _counted(records: Iterable[dict[str, Any]], into: Counter[str],
             notes: Counter[tuple[Any, Any]] | None = None) -> Iterator[dict[str, Any]]:
    """``records`` unchanged, counting their error-severity findings (an end
    record's in ``unanswered``) into ``into``, and their server notifications
    by (direction, method) into ``notes`` when given."""
    for rec in records:
        if notes is not None and rec.get("dir") == "s2c" and rec.get("type") == "message":
            notes.update(notified(rec))
        fs = rec.get("unanswered") if rec.get("type") == "end" else rec.get("findings")
        for f in fs or ():
            if isinstance(f, dict) and f.get("severity") == "error":
                into[str(f.get("code"))] += 1
        yield rec


def plan_and_errors(path: str, allow_side_effects: bool = False, masker: Masker | None = None) -> tuple[Plan, Counter[str]]:
    """``plan_from_path`` and the capture's error findings by code. Raises CaptureReadError."""
    stream = CaptureStream(path)
    errors: Counter[str] = Counter()
    plan = build_plan(stream.header, _counted(annotated(stream), errors), allow_side_effects, masker)
    return plan, errors


def errors_of(path: str, notes: Counter[tuple[Any, Any]] | None = None) -> Counter[str]:
    """The error findings by code of the capture at ``path`` (its server
    notifications counted into ``notes`` when given). Raises CaptureReadError."""
    errors: Counter[str] = Counter()
    for _ in _counted(annotated(CaptureStream(path)), errors, notes):
        pass
    return errors


def notification_changes(plan: Plan, live: Counter[tuple[Any, Any]]) -> list[Item]:
    """The server notification methods the recording has and the live session
    (``live``: counts by ``("s2c", method)``, ``errors_of``) never sent, and
    those only the live session sent: ``diff``'s items. A method the recording
    sent only while skipped requests alone were in flight (their progress) is
    not expected live, nor new when it comes."""
    recorded: Counter[tuple[Any, Any]] = Counter()
    for n in plan.notified:
        key = ("s2c", n.method)
        recorded[key] += n.expected if n.expected or not live.get(key) else n.total
    return notification_items(recorded, live, ("the recording", "the live session"))


def new_errors(original: Counter[str], live: Counter[str]) -> list[tuple[str, int]]:
    """(code, count in the live session) for each error code the original
    session never had, sorted by code."""
    return sorted((code, n) for code, n in live.items() if n and not original.get(code))
