"""Protocol errors new in a replay (pure, level 3; reads captures by streaming).

The recorder annotates the replayed session like any capture, so a live
server that breaks the protocol (answers a request twice, sends malformed
JSON-RPC) carries error-severity findings there that the recorded session did
not: ``replay`` reports those as it reports a changed answer, and they fail it.

``plan_and_errors(path, …) -> (Plan, Counter[code])``: the replay plan and the
original capture's error-severity findings by code, in one pass (the capture
may be standard input, read once); ``errors_of(path) -> Counter[code]``: the
same count for the new capture; ``new_errors(original, live) -> [(code, n)]``:
codes the live session has and the original does not, by code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from mcptap.capture.reader import CaptureStream
from mcptap.compare.mask import Masker
from mcptap.reannotate_views import annotated
from mcptap.replay.plan import Plan, build_plan


def _counted(records: Iterable[dict[str, Any]], into: Counter[str]) -> Iterator[dict[str, Any]]:
    """``records`` unchanged, counting their error-severity findings (an end
    record's in ``unanswered``) into ``into``."""
    for rec in records:
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


def errors_of(path: str) -> Counter[str]:
    """The error findings by code of the capture at ``path``. Raises CaptureReadError."""
    errors: Counter[str] = Counter()
    for _ in _counted(annotated(CaptureStream(path)), errors):
        pass
    return errors


def new_errors(original: Counter[str], live: Counter[str]) -> list[tuple[str, int]]:
    """(code, count in the live session) for each error code the original
    session never had, sorted by code."""
    return sorted((code, n) for code, n in live.items() if n and not original.get(code))
