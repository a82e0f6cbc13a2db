"""The replay plan (pure, level 3): from a capture, the client side as a script
(the record-by-record work is ``replay/builder.py``'s, the parts ``replay/steps.py``'s).

``build_plan(header, records, allow_side_effects=False) -> Plan``;
``plan_from_path(path, ...)`` streams a capture file.

A :class:`Plan` holds, in original order, one :class:`Step` per c2s request,
notification or batch, with:

* ``waits`` — steps whose responses the original client had received before it
  sent this one (record order). The runner waits for their live responses
  first; requests that overlapped in the original are sent without waiting and
  so overlap again. ``group`` numbers the runs of steps sent back to back.
* ``carry`` — values the server minted in an earlier answer and the client
  echoed here (``nextCursor`` → ``cursor``, ``requestState``, ``taskId``…):
  the JSON path here, the source step, and the path in its response. The runner
  substitutes the live server's value.
* ``retry_of`` — 2026-07-28 input-required rounds: the step whose
  ``input_required`` result this request answers. The runner rebuilds
  ``inputResponses`` from the live ``inputRequests`` (answered from the
  capture's answers, by method and params).
* ``skip`` — why the step is not sent: a ``tools/call`` (with an id or
  without) of a tool that the recorded ``tools/list`` does not mark
  ``readOnlyHint: true``, or marks ``destructiveHint: true`` (unknown tools
  count as side-effecting), unless ``allow_side_effects`` (a batch's such
  members are its ``dropped`` ones, not sent; the batch is skipped when no
  member is left); a request the tap refused itself (it never reached
  the server); a request the HTTP layer answered without a JSON-RPC response
  (refused 401/403/407…, redirected) that the client then sent again with the
  same id ("refused 403 in the recording; re-sent as #76": the re-send is the
  exchange, ``compare/resent.py``); and every round or cancel that belongs to a
  skipped request.

Planning reads the capture once and keeps no record: a step holds its message
and its recorded response as the JSON bytes orjson writes for them (a few
hundred bytes for a typical call, where the parsed objects took kilobytes;
``Step.message``/``Step.response`` parse them again when read). The tool
policy, which needs tools listed after a call too, is applied once the
records have ended. A 200,000-message capture of small calls
(scripts/bench_replay.py's) plans at 137 MB peak RSS, where holding its
records and parsed steps took 414 MB. The steps themselves are still one per
c2s message: memory grows with the capture, only ~3 times more slowly.

``Plan.notified`` counts the server's notifications by method (and HTTP
session), with how many of them a live server is expected to send too (not
those sent while only skipped requests were in flight): ``replay/findings.py``
compares them as ``diff`` does.

The :class:`AnswerBook` holds the client's answers to server requests
(``sampling/createMessage``, ``elicitation/create``, ``roots/list``, ``ping``),
legacy JSON-RPC responses and 2026-07-28 ``inputResponses`` alike, to answer
the live server's requests matched by method and masked params (then by
method alone, first come first served).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.capture.fields import message_value
from mcptap.capture.reader import CaptureStream
from mcptap.compare.mask import Masker
from mcptap.reannotate_views import annotated
from mcptap.records.events import TAP_REFUSED
from mcptap.replay.builder import CARRY_KEYS, PlanBuilder, tool_is_safe
from mcptap.replay.steps import AnswerBook, Carry, Plan, ServerRequest, Step

__all__ = ["CARRY_KEYS", "AnswerBook", "Carry", "Plan", "ServerRequest", "Step", "build_plan", "plan_from_path", "tool_is_safe"]


def _non_finite(findings: Any) -> bool:
    return isinstance(findings, list) and any(isinstance(f, dict) and f.get("code") == "jsonrpc.non_finite_number" for f in findings)


def build_plan(header: dict[str, Any], records: Iterable[dict[str, Any]], allow_side_effects: bool = False,
               masker: Masker | None = None) -> Plan:
    """Plan the replay of a capture (its header and the records after it),
    in one pass that keeps no record (module docstring): the side-effect
    policy, which needs every recorded ``tools/list`` (a client may call a
    tool it listed in an earlier session, or list after calling), is applied
    when the records have ended."""
    masker = masker or Masker()
    http_get = legacy_sse = False
    b = PlanBuilder(header, allow_side_effects, masker)
    last_t = 0
    for r in records:
        typ = r.get("type")
        if typ == "message":
            v = message_value(r)
            # orjson read it (a payload with a number beyond any double was read exactly: ±inf)
            exact = "json" in r and v is r["json"] and not ("findings" in r and _non_finite(r["findings"]))
            last_t = max(last_t, r.get("t_us", 0) or 0)
            if r.get("dir") == "c2s":
                n = len(b.plan.steps)
                b.c2s(r, v, exact)
                ex = r["transport"].get("exchange") if isinstance(r.get("transport"), dict) else None
                if isinstance(ex, int) and len(b.plan.steps) > n:
                    b.plan.steps[-1].exchange = ex
            else:
                b.s2c(r, v, exact)
        elif typ == "http" and r.get("event") == "request" and r.get("method") == "GET":
            http_get = True
        elif typ == "http" and r.get("event") == "sse" and isinstance(r.get("endpoint"), dict):
            legacy_sse = True
        elif typ == "http" and r.get("event") == "end":
            if r.get("how") in TAP_REFUSED and isinstance(r.get("exchange"), int):
                b.refused[r["exchange"]] = r["how"]
            if "findings" in r:
                b.http_answered(r)
    b.finish()
    plan = b.plan
    plan.http_get, plan.legacy_sse = http_get, legacy_sse
    first = plan.steps[0].t_us if plan.steps else 0
    plan.duration_us = max(0, last_t - first)
    return plan


def plan_from_path(path: str, allow_side_effects: bool = False, masker: Masker | None = None) -> Plan:
    """Plan the replay of the capture at ``path``. Raises CaptureReadError."""
    stream = CaptureStream(path)
    return build_plan(stream.header, annotated(stream), allow_side_effects, masker)
