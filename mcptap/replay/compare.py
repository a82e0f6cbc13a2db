"""The verdicts of a whole replay (pure, level 3): each planned exchange's
original answer against the live one, plus requests the new server sent.

``compare_replay(plan, live, live_server_requests, notes, masker) -> list[ExchangeResult]``;
the per-exchange comparison is :mod:`mcptap.compare.verdict`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcptap.compare.mask import Masker
from mcptap.compare.verdict import MATCH, MISSING, NEW, SKIPPED, Verdict, compare_responses
from mcptap.replay.steps import read_id


@dataclass(slots=True)
class ExchangeResult:
    """One line of the replay report. ``step``: plan step index (None for a
    server request); ``seq``: the original record seq (None for NEW);
    latencies in µs; ``note``: why it was skipped / not answered;
    ``live_id``: the JSON-RPC id the request was sent with (the recorded one, or fresh)."""

    label: str
    status: str
    step: int | None = None
    seq: int | None = None
    verdict: Verdict | None = None
    latency_a_us: int | None = None
    latency_b_us: int | None = None
    note: str | None = None
    live_id: Any = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"label": self.label, "status": self.status, "step": self.step, "seq": self.seq}
        if self.live_id is not None:
            d["live_id"] = self.live_id
        if self.verdict is not None and self.verdict.paths:
            d["paths"] = [p.to_json() for p in self.verdict.paths]
        if self.verdict is not None and (self.verdict.code_a is not None or self.verdict.code_b is not None):
            d["error_codes"] = [self.verdict.code_a, self.verdict.code_b]
        if self.latency_a_us is not None or self.latency_b_us is not None:
            d["latency_us"] = [self.latency_a_us, self.latency_b_us]
        if self.note:
            d["note"] = self.note
        return d


def _by_id(responses: Any) -> dict[Any, Any]:
    return {repr(r.get("id")): r for r in responses or () if isinstance(r, dict)}


def compare_replay(plan: Any, live: dict[int, Any], live_server_requests: Sequence[Any], notes: dict[int, str],
                   masker: Masker | None = None) -> list[ExchangeResult]:
    """Verdicts for a replay: one per c2s request (and batch member) of
    ``plan`` in order, then one per server request (original matched with live
    by method and masked params, in order). ``live``: step index -> live
    response object (None: unanswered; a step absent: not sent), each with
    ``response`` and ``latency_us`` attributes; ``live_server_requests``:
    objects with ``method`` and ``params``."""
    masker = masker or Masker()
    out: list[ExchangeResult] = []
    for step in plan.steps:
        if step.kind == "notification" and not (step.skip and step.method == "tools/call"):
            continue                        # (a tool call without an id the policy skipped is reported: SKIPPED)
        lv = live.get(step.index)
        note = notes.get(step.index)
        if step.skip and step.dropped:
            out.extend(_dropped(step, step.message))
            continue
        if step.skip:
            out.append(ExchangeResult(step.label, SKIPPED, step.index, step.seq, note=step.skip))
            continue
        if lv is None:
            out.append(ExchangeResult(step.label, MISSING, step.index, step.seq, Verdict(MISSING), step.latency_us, None, note or "not sent"))
            continue
        response = step.response            # (parsed anew at each read: plan.Step)
        if step.kind == "batch":
            orig, new = _by_id(response), _by_id(lv.response)
            message = step.message
            dropped = step.dropped or {}
            for i, item in enumerate(message if isinstance(message, list) else ()):
                if i in dropped:
                    out.extend(_dropped(step, [item], i))
                    continue
                if not isinstance(item, dict) or "method" not in item or "id" not in item:
                    continue
                k = repr(read_id(item["id"]))          # (a recorded literal: steps.literal)
                v = compare_responses(orig.get(k), new.get(k), item.get("method"), masker)
                out.append(ExchangeResult(f"batch {item.get('method')}", v.status, step.index, step.seq, v, None, lv.latency_us,
                                          note if v.status in (MISSING, NEW) else None))
            continue
        v = compare_responses(response, lv.response, step.method, masker)
        if response is None and lv.response is None:
            note = "unanswered in both sessions"
        out.append(ExchangeResult(step.label, v.status, step.index, step.seq, v, step.latency_us, lv.latency_us,
                                  note if v.status in (MISSING, NEW) or lv.response is None else None, lv.live_id))
    out.extend(_server_requests(plan, live_server_requests, masker))
    return out


def _dropped(step: Any, items: list[Any], first: int = 0) -> list[ExchangeResult]:
    """SKIPPED rows for the members of batch ``step`` not sent (``Step.dropped``)
    among ``items`` (its members from index ``first``), with or without an id."""
    return [ExchangeResult(f"batch {item.get('method') if isinstance(item, dict) else '?'}", SKIPPED, step.index, step.seq,
                           note=step.dropped[i])
            for i, item in enumerate(items, first) if i in step.dropped]


def _skipped_cause(plan: Any, srv: Any) -> str | None:
    """Why a recorded server request is not expected live: every client
    request in flight when it was made (``srv.in_flight`` of them, the first
    in ``srv.during``) was skipped, so none was sent to cause it. None when
    one was sent, or none was in flight."""
    if not srv.only_skipped or not srv.during:
        return None
    seqs = ", ".join(f"#{plan.steps[i].seq}" for i in srv.during[:3]) + (" …" if srv.in_flight > 3 else "")
    return f"asked during skipped {seqs}: not expected live"


def _server_requests(plan: Any, live_server_requests: Sequence[Any], masker: Masker) -> list[ExchangeResult]:
    """One verdict per server request of the original session (legacy s2c
    requests and 2026-07-28 input requests, in order), matched with the live
    ones by method and masked params; then the live ones left over (NEW).
    A request only a skipped step can have caused is SKIPPED when the live
    server did not make it (and it takes a live one only after every other has)."""
    orig: list[tuple[str, Any, Any, str | None]] = [(r.method, r.params, r.seq, _skipped_cause(plan, r))
                                                    for r in plan.server_requests]
    for step in plan.steps:                           # 2026-07-28 input requests of the original session
        held = getattr(step, "packed_response", None)
        if type(held) is bytes and b"input_required" not in held:
            continue                                  # (most steps: no need to parse the answer)
        response = step.response
        res = response.get("result") if isinstance(response, dict) else None
        if isinstance(res, dict) and res.get("resultType") == "input_required" and isinstance(res.get("inputRequests"), dict):
            cause = f"asked in the answer to skipped #{step.seq}: not expected live" if step.skip else None
            for req in res["inputRequests"].values():
                if isinstance(req, dict):
                    orig.append((str(req.get("method")), req.get("params"), step.response_seq, cause))
    pool: dict[tuple[str, int], list[Any]] = {}
    for r in live_server_requests:
        pool.setdefault((r.method, masker.fingerprint(r.params, r.method, "params")), []).append(r)
    rows: list[ExchangeResult | None] = [None] * len(orig)
    for expected in (True, False):                    # the requests expected live take theirs first
        for i, (method, params, seq, cause) in enumerate(orig):
            if (cause is None) != expected:
                continue
            key = (method, masker.fingerprint(params, method, "params"))
            if pool.get(key):
                pool[key].pop(0)
                rows[i] = ExchangeResult(f"s2c {method}", MATCH, None, seq)
            elif cause is not None:
                rows[i] = ExchangeResult(f"s2c {method}", SKIPPED, None, seq, note=cause)
            else:
                rows[i] = ExchangeResult(f"s2c {method}", MISSING, None, seq, Verdict(MISSING), note="the live server did not make this request")
    out = [r for r in rows if r is not None]
    for entries in pool.values():
        for r in entries:
            out.append(ExchangeResult(f"s2c {r.method}", NEW, None, None, Verdict(NEW), note=f"answered: {r.how}"))
    return out
