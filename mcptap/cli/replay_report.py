"""What ``mcptap replay`` reports (cli/replay.py): the rows and the JSON report.

* :func:`surface_of` — the server surface (tools, prompts, resources… as
  diff/surface.py reads them) of the recorded session or of the live one;
* :func:`by_session` — the exchange rows grouped by recorded session;
* ``_line`` — one text row of an exchange (``#SEQ  LABEL  STATUS  DETAIL``,
  styled by status), ``_counts`` — rows per status, ``_part`` — the recorded
  session (index into ``plan.sessions``) of a row, None for a server request;
* :func:`report_json` — the ``--format json`` report (a dict: capture, era,
  revision, counts, durations in seconds, server exit (and the signal replay
  ended it with, when it did), exchanges, surface,
  new error findings, server notification changes, and per session counts
  when there are several).

Pure: nothing here prints or raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcptap.cli.output import Style
from mcptap.compare.mask import Masker
from mcptap.compare.verdict import CHANGED, ERROR_CHANGED, MATCH, MISSING, NEW, SKIPPED, describe_verdict
from mcptap.diff.surface import SURFACE_METHODS, Surface
from mcptap.escape import escape_name, shown
from mcptap.replay.compare import ExchangeResult
from mcptap.replay.plan import Plan
from mcptap.replay.runner import ReplayResult


def surface_of(plan: Plan, responses: dict[int, Any] | None, masker: Masker | None = None) -> Surface:
    """The server surface seen in the original session (``responses`` None)
    or in the live one (step index -> live response); ``masker``: the ``--ignore``
    paths, taken out as diff takes them out (``Surface.feed``)."""
    s = Surface()
    for step in plan.steps:
        if step.method not in SURFACE_METHODS:
            continue
        resp = step.response if responses is None else responses.get(step.index)
        if isinstance(resp, dict) and isinstance(resp.get("result"), dict):
            s.feed(step.method, step.params, resp["result"], masker)
    s.note_revision(plan.revision)
    return s


def _ms(us: int | None) -> str:
    return "-" if us is None else f"{us / 1000:.1f} ms"


def _line(r: ExchangeResult, style: Style | None = None) -> str:
    where = f"#{r.seq}" if r.seq is not None else "new"
    text = f"  {where:>7}  {r.label[:44]:<44}  {r.status:<13}"
    detail = ""
    if r.verdict is not None and r.verdict.paths and r.status in (CHANGED, ERROR_CHANGED):
        detail = describe_verdict(r.verdict)       # as diff prints the same change
    elif r.note:
        detail = r.note
    elif r.status == MATCH and r.latency_b_us is not None:
        detail = f"{_ms(r.latency_b_us)} (was {_ms(r.latency_a_us)})"
    line = shown(f"{text}  {detail}".rstrip())
    return style(line, r.status) if style is not None else line


def _part(plan: Plan, r: ExchangeResult) -> int | None:
    return plan.steps[r.step].part if r.step is not None else None


def by_session(plan: Plan, rows: list[ExchangeResult]) -> list[ExchangeResult]:
    """``rows`` grouped by recorded session (recorded order within each;
    server requests, which belong to no step, last)."""
    def key(r: ExchangeResult) -> int:
        part = _part(plan, r)
        return len(plan.sessions) if part is None else part

    return sorted(rows, key=key)


def _counts(rows: list[ExchangeResult]) -> dict[str, int]:
    counts = {k: 0 for k in (MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW, SKIPPED)}
    for r in rows:
        counts[r.status] += 1
    return counts


def report_json(result: ReplayResult, rows: list[ExchangeResult], surface_items: list[Any], capture: str | None,
                fresh: Sequence[tuple[str, int]] = (), notifications: Sequence[Any] = ()) -> dict[str, Any]:
    plan = result.plan
    exchanges = []
    for r in rows:
        d = r.to_json()
        if len(plan.sessions) > 1 and _part(plan, r) is not None:
            d["session"] = _part(plan, r)
        exchanges.append(d)
    out = {"capture": escape_name(capture) if capture is not None else None, "era": plan.era, "revision": plan.revision, "counts": _counts(rows),
           "duration_s": round(result.duration_s, 6), "original_duration_s": plan.duration_us / 1e6,
           "server_exit": result.exit_code, "server_ended_by_replay": result.ended_by, "error": result.error,
           "exchanges": exchanges, "surface": [it.to_json() for it in surface_items],
           "new_errors": [{"code": code, "count": n} for code, n in fresh],
           "notifications": [it.to_json() for it in notifications]}
    if len(plan.sessions) > 1:
        out["sessions"] = [{"index": i, "recorded": key, "counts": _counts([r for r in rows if _part(plan, r) == i])}
                           for i, key in enumerate(plan.sessions)]
    return out
