"""Semantic diff of two captures (pure, level 3; reads capture files by streaming).

``diff_captures(a, b, ignore=(), latency_threshold=None) -> DiffReport``

1. Each capture is streamed once (``CaptureStream``) into a ``Side``
   (:mod:`mcptap.diff.side`): per-exchange summaries in compact arrays (key hash of direction, method,
   tool/prompt/resource name and masked params; outcome hash of the masked
   result or error; error code; record seqs), the server surface
   (``diff_surface.Surface``), finding counts, notification methods and
   latencies per method. Whole messages are not kept.
2. The two exchange-key sequences are aligned (:mod:`mcptap.diff.align`:
   requests that were in flight together first put in a canonical order (by
   label and key) so their send order does not matter, then common prefix and suffix, then ``difflib`` on a small middle or a windowed
   re-synchronisation on a large one), so inserted/removed exchanges and stray
   non-JSON lines do not shift everything after them.
3. Aligned exchanges whose outcome hashes differ, and unaligned ones, are
   re-read (second streaming pass over only those seqs, at most
   ``DETAIL_LIMIT``) and compared with :mod:`mcptap.compare` to get JSON paths.

This module compares the two Sides and builds the :class:`~mcptap.diff.report.DiffReport`;
``render_text`` (:mod:`mcptap.diff.render`) prints it.

Exit semantics for the CLI: ``report.different`` -> 1, else 0.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from mcptap.capture.reader import CaptureStream
from mcptap.compare.mask import Masker
from mcptap.compare.paths import PathChange, describe, json_diff, short
from mcptap.compare.verdict import CHANGED, ERROR_CHANGED, MATCH, MISSING, NEW, compare_responses, describe_verdict
from mcptap.diff import align as diff_align
from mcptap.diff.align import DIFFLIB_LIMIT, WINDOW
from mcptap.diff.notified import notification_items
from mcptap.diff.report import DiffReport
from mcptap.diff.scrubbed import KEYS_NOTE, by_kind, key_ids, keys_differ, needs_key, scrub_plan
from mcptap.diff.side import ERROR, NAMED, Side, fetch, request_and_response, summarize
from mcptap.diff.surface import Item, compare_surface
from mcptap.redact.keyed import Keyer

DETAIL_LIMIT = 200          # exchanges re-read for JSON paths / shown as missing or new
MIN_LATENCY_SHIFT_US = 1000  # shifts smaller than 1 ms are noise, whatever the percentage


def align(a: Sequence[int], b: Sequence[int], coarse_a: Sequence[Any] | None = None,
          coarse_b: Sequence[Any] | None = None) -> Iterator[tuple[int | None, int | None]]:
    """``diff_align.align`` with this module's ``DIFFLIB_LIMIT`` and ``WINDOW``
    (read at call time, so tuning them here still takes effect)."""
    return diff_align.align(a, b, DIFFLIB_LIMIT, WINDOW, coarse_a, coarse_b)


def _pct(values: array[int], p: float) -> int:
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def diff_captures(a_path: str, b_path: str, ignore: Iterable[str] = (), latency_threshold: float | None = None,
                  sources: tuple[str | None, str | None] = (None, None),
                  keyer: Callable[[], Keyer | None] | None = None) -> DiffReport:
    """Diff two captures (paths; ``-`` is standard input). ``sources``: the
    files to read A and B from when not their paths: stdin must be spooled to
    a file by the caller, since differing exchanges are read a second time.
    ``keyer``: the user's redaction key (asked only when one capture is
    scrubbed and the other not: the one in clear is then scrubbed as it is
    read, ``diff/scrubbed.py``; both scrubbed with different keys: placeholders compared by
    kind, ``report.notes`` says so). Raises CaptureReadError (unreadable
    capture), ScrubMismatch (that scrub cannot be redone: no key, another key;
    a McptapError) and ValueError (bad ignore path)."""
    masker = Masker(ignore)
    ha, hb = _header(a_path, sources[0]), _header(b_path, sources[1])
    scrub_a, scrub_b = scrub_plan(ha, hb, keyer() if keyer is not None and needs_key(ha, hb) else None, (a_path, b_path))
    notes = []
    if keys_differ(ha, hb):
        # the same secret has another placeholder on each side: compared by kind, and said so
        scrub_a = scrub_b = by_kind
        notes.append(KEYS_NOTE.format(a=", ".join(key_ids(ha)), b=", ".join(key_ids(hb))))
    a = summarize(a_path, masker, sources[0], scrub_a)
    b = summarize(b_path, masker, sources[1], scrub_b)
    report = DiffReport(a_path, b_path, notes=notes)
    report.stats = {name: {"messages": s.messages, "exchanges": len(s), "stray_lines": s.stray, "complete": s.complete,
                           "truncated": s.truncated, "revision": s.surface.revision,
                           "not_compared": len(s.dropped)}
                    for name, s in (("a", a), ("b", b))}
    report.items.extend(compare_surface(a.surface, b.surface))
    _exchanges(a, b, masker, report)
    _findings(a, b, report)
    report.items.extend(notification_items(a.notifications, b.notifications))
    if latency_threshold is not None:
        _latency(a, b, latency_threshold, report)
    return report


def _header(path: str, source: str | None) -> dict[str, Any]:
    stream = CaptureStream(source or path, path)
    stream.close()
    return stream.header


def _exchanges(a: Side, b: Side, masker: Masker, report: DiffReport) -> None:
    counts = dict.fromkeys((MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW), 0)
    detail: list[tuple[int | None, int | None]] = []
    dismissed = 0                           # nominated by the hashes, equal in the full compare
    ga, gb = in_flight(a), in_flight(b)
    pa, pb = canonical_order(a, ga), canonical_order(b, gb)
    if a.dropped or b.dropped:
        # no exchange with the server (refused by the tap; answered at HTTP level and sent again): not compared
        pa = array("q", (x for x in pa if x not in a.dropped))
        pb = array("q", (x for x in pb if x not in b.dropped))
    # coarse keys (method and tool/prompt/resource name) pair the same call with changed arguments
    coarse_a = [a.labels[a.label[x]] for x in pa]
    coarse_b = [b.labels[b.label[x]] for x in pb]
    aligned = ((pa[i] if i is not None else None, pb[j] if j is not None else None)
               for i, j in align([a.key[x] for x in pa], [b.key[x] for x in pb], coarse_a, coarse_b))
    for i, j in diff_align.pair_in_flight(aligned, a.key, b.key, lambda k: a.group[k] in ga, lambda k: b.group[k] in gb,
                                          lambda k: a.labels[a.label[k]], lambda k: b.labels[b.label[k]]):
        if i is None:
            counts[NEW] += 1
        elif j is None:
            counts[MISSING] += 1
        elif a.key[i] != b.key[j]:
            counts[CHANGED] += 1             # the request itself changed (arguments)
        elif a.status[i] == b.status[j] and a.out[i] == b.out[j]:
            counts[MATCH] += 1
            continue
        else:
            counts[_hashed_status(a, b, i, j)] += 1
        if len(detail) < DETAIL_LIMIT:
            detail.append((i, j))
    report.counts = counts
    if not detail:
        return
    want_a = {s for i, _ in detail if i is not None for s in (a.req_seq[i], a.resp_seq[i]) if s >= 0}
    want_b = {s for _, j in detail if j is not None for s in (b.req_seq[j], b.resp_seq[j]) if s >= 0}
    ma, mb = fetch(a, want_a), fetch(b, want_b)
    for i, j in detail:
        side, k = (a, i) if i is not None else (b, j)
        assert k is not None                # align() never pairs None with None
        lab, method = side.labels[side.label[k]], side.label_methods[side.label[k]]
        ra = request_and_response(a, i, ma) if i is not None else (None, None)
        rb = request_and_response(b, j, mb) if j is not None else (None, None)
        where = {"a_seq": a.req_seq[i] if i is not None else None, "b_seq": b.req_seq[j] if j is not None else None}
        if i is None:
            report.items.append(Item("exchanges", "new", lab, f"{lab}{_brief(method, rb[0])}: only in B (#{where['b_seq']})", False,
                                     {**where, "params": _params(rb[0])}))
            continue
        if j is None:
            report.items.append(Item("exchanges", "removed", lab, f"{lab}{_brief(method, ra[0])}: only in A (#{where['a_seq']})", False,
                                     {**where, "params": _params(ra[0])}))
            continue
        v = compare_responses(ra[1], rb[1], method, masker)
        req: list[PathChange] = []
        if a.key[i] != b.key[j]:
            pa, pb = _params(ra[0]), _params(rb[0])
            req = json_diff(masker.mask(pa, method, "params", other=pb), masker.mask(pb, method, "params", other=pa), "params")
        # the summaries' hashes only nominated this exchange: the full compare decides, and the counts follow it
        # (3 vs 3.0, the same JSON number, hash apart but are equal)
        counted = CHANGED if req or a.key[i] != b.key[j] else _hashed_status(a, b, i, j)
        verdict = CHANGED if req else v.status
        counts[counted] -= 1
        counts[verdict] += 1
        if verdict == MATCH:
            dismissed += 1
            continue
        if req:
            text = f"{lab}: request " + describe(req, 6)
            if v.status != MATCH:
                text += "; response " + (describe_verdict(v) or v.status.lower())
            report.items.append(Item("exchanges", "changed", lab, text, False,
                                     {**where, "request_paths": [p.to_json() for p in req], **v.to_json()}))
            continue
        text = f"{lab}: {describe_verdict(v)}"
        report.items.append(Item("exchanges", "changed", lab, text, False, {**where, **v.to_json()}))
    shown = len(detail) - dismissed
    total = counts[CHANGED] + counts[ERROR_CHANGED] + counts[MISSING] + counts[NEW]
    if total > shown:
        report.items.append(Item("exchanges", "changed", "…", f"{total - shown} more differing exchanges not shown", False,
                                 {"not_shown": total - shown}))


def _hashed_status(a: Side, b: Side, i: int, j: int) -> str:
    """The verdict the summaries gave exchange pair (i, j) of equal requests
    and different outcome hashes (as counted in ``_exchanges``)."""
    if a.status[i] != b.status[j] or a.status[i] == ERROR and a.code[i] != b.code[j]:
        return ERROR_CHANGED
    return CHANGED


def in_flight(side: Side) -> dict[int, list[int]]:
    """``side``'s in-flight groups of more than one exchange (``Side.group``:
    requests sent before any of them was answered): group -> exchange indices.
    Memory in proportion to the concurrent exchanges, not to all."""
    group = side.group
    # a group is named by its first member: it has others when a later exchange names it
    members: dict[int, list[int]] = {g: [] for idx, g in enumerate(group) if g != idx}
    for idx, g in enumerate(group):
        if g in members:
            members[g].append(idx)
    return members


def canonical_order(side: Side, groups: dict[int, list[int]]) -> array[int]:
    """``side``'s exchange indices in request order, except that the members
    of each of ``groups`` (``in_flight``) take their group's positions sorted
    by label and key: two clients that send the same concurrent requests in
    another order align."""
    order = array("q", range(len(side)))
    for idxs in groups.values():
        for pos, idx in zip(idxs, sorted(idxs, key=lambda k: (side.labels[side.label[k]], side.key[k])), strict=True):
            order[pos] = idx
    return order


def _brief(method: str, req: Any) -> str:
    """The arguments of a request, briefly (`` {"a":1}``; ``""`` when none),
    so that exchanges with the same label tell apart: the label already names
    the tool, prompt or resource; ``_meta`` is left out."""
    params = _params(req)
    if not isinstance(params, dict):
        return "" if params is None else " " + short(params, 60)
    rest = {k: v for k, v in params.items() if k != NAMED.get(method) and k != "_meta"}
    if set(rest) == {"arguments"}:
        rest = rest["arguments"]
    return " " + short(rest, 60) if rest else ""


def _params(req: Any) -> Any:
    return req.get("params") if isinstance(req, dict) else None


def _findings(a: Side, b: Side, report: DiffReport) -> None:
    for key in sorted(set(a.findings) | set(b.findings), key=str):
        na, nb = a.findings.get(key, 0), b.findings.get(key, 0)
        code, where = key
        if na and not nb:
            report.items.append(Item("findings", "resolved", code, f"{code} ({where}): {na} in A, none in B", False, {"a": na, "b": 0, "where": where}))
        elif nb and not na:
            report.items.append(Item("findings", "new", code, f"{code} ({where}): {nb} new in B", False, {"a": 0, "b": nb, "where": where}))


def _latency(a: Side, b: Side, threshold: float, report: DiffReport) -> None:
    """One item per method whose p50/p90/p99 moved by more than ``threshold``
    percent (and 1 ms); p90/p99 only with at least 10 samples on both sides."""
    for lab, lid in a.label_ids.items():
        la = a.latency.get(lid)
        lb_id = b.label_ids.get(lab)
        lb = b.latency.get(lb_id) if lb_id is not None else None
        if not la or not lb:
            continue
        shifts = []
        for p in (50, 90, 99) if min(len(la), len(lb)) >= 10 else (50,):
            va, vb = _pct(la, p), _pct(lb, p)
            if abs(vb - va) < MIN_LATENCY_SHIFT_US or va <= 0:
                continue
            pct = (vb - va) * 100.0 / va
            if abs(pct) > threshold:
                shifts.append({"percentile": p, "a_us": va, "b_us": vb, "percent": round(pct, 1)})
        if shifts:
            text = ", ".join(f"p{s['percentile']} {s['a_us'] / 1000:.1f} -> {s['b_us'] / 1000:.1f} ms ({s['percent']:+.0f}%)" for s in shifts)
            report.items.append(Item("latency", "shift", lab, f"{lab} latency: {text}", False,
                                     {"shifts": shifts, "samples": [len(la), len(lb)]}))
