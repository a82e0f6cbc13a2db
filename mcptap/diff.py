"""Semantic diff of two captures (pure, level 3; reads capture files by streaming).

``diff_captures(a, b, ignore=(), latency_threshold=None) -> DiffReport``

1. Each capture is streamed once (``CaptureStream``) into a :class:`Side`:
   per-exchange summaries in compact arrays (key hash of direction, method,
   tool/prompt/resource name and masked params; outcome hash of the masked
   result or error; error code; record seqs), the server surface
   (``diff_surface.Surface``), finding counts, notification methods and
   latencies per method. Whole messages are not kept.
2. The two exchange-key sequences are aligned (common prefix and suffix, then
   ``difflib`` on a small middle or a windowed re-synchronisation on a large
   one), so inserted/removed exchanges and stray non-JSON lines do not shift
   everything after them.
3. Aligned exchanges whose outcome hashes differ, and unaligned ones, are
   re-read (second streaming pass over only those seqs, at most
   ``DETAIL_LIMIT``) and compared with ``replay.compare`` to get JSON paths.

Exit semantics for the CLI: ``report.different`` -> 1, else 0.
"""

from __future__ import annotations

import difflib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcptap.capture import CaptureStream
from mcptap.diff_surface import SURFACE_METHODS, Item, Surface, compare_surface
from mcptap.protocol.framing import parse_json
from mcptap.replay.compare import CHANGED, ERROR_CHANGED, MATCH, MISSING, NEW, Masker, compare_responses

DETAIL_LIMIT = 200          # exchanges re-read for JSON paths / shown as missing or new
DIFFLIB_LIMIT = 2000        # middle section size up to which difflib aligns
WINDOW = 256                # re-synchronisation window of the large-middle aligner
MIN_LATENCY_SHIFT_US = 1000  # shifts smaller than 1 ms are noise, whatever the percentage
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "resources/subscribe": "uri",
         "resources/unsubscribe": "uri"}
_NO_ANSWER, _RESULT, _ERROR = 0, 1, 2


def _label(direction: str, method: str, params: Any) -> str:
    key = NAMED.get(method)
    if key and isinstance(params, dict) and isinstance(params.get(key), str):
        return f"{method} {params[key]}" if direction == "c2s" else f"s2c {method} {params[key]}"
    return method if direction == "c2s" else f"s2c {method}"


def _json(rec: dict[str, Any]) -> Any:
    if "json" in rec:
        return rec["json"]
    raw = rec.get("raw")
    if isinstance(raw, str):
        return parse_json(raw.encode("utf-8"))[0]
    return None


@dataclass
class Side:
    """Summary of one capture (see module docstring). Arrays are indexed by
    exchange number, in request order."""

    path: str
    header: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    label_methods: list[str] = field(default_factory=list)
    label_ids: dict[str, int] = field(default_factory=dict)
    label: array = field(default_factory=lambda: array("l"))
    key: array = field(default_factory=lambda: array("q"))
    out: array = field(default_factory=lambda: array("q"))
    status: array = field(default_factory=lambda: array("b"))
    code: array = field(default_factory=lambda: array("q"))
    req_seq: array = field(default_factory=lambda: array("q"))
    resp_seq: array = field(default_factory=lambda: array("q"))
    batch_member: dict[int, int] = field(default_factory=dict)
    latency: dict[int, array] = field(default_factory=dict)
    surface: Surface = field(default_factory=Surface)
    findings: Counter = field(default_factory=Counter)
    notifications: Counter = field(default_factory=Counter)
    messages: int = 0
    stray: int = 0
    truncated: bool = False
    complete: bool = True

    def __len__(self) -> int:
        return len(self.key)


def summarize(path: str, masker: Masker) -> Side:
    """Stream one capture into a Side. Raises CaptureReadError."""
    stream = CaptureStream(path)
    side = Side(path, stream.header)
    pending: dict[Any, int] = {}
    surface_params: dict[int, Any] = {}
    fp = masker.fingerprint
    label_ids, labels = side.label_ids, side.labels
    a_label, a_key, a_out, a_status, a_code, a_req, a_resp = (side.label, side.key, side.out, side.status, side.code,
                                                              side.req_seq, side.resp_seq)
    findings, notes = side.findings, side.notifications

    def add_request(seq: int, d: str, value: Any, member: int | None) -> None:
        method = value.get("method")
        params = value.get("params")
        lab = _label(d, method, params)
        lid = label_ids.get(lab)
        if lid is None:
            lid = label_ids[lab] = len(labels)
            labels.append(lab)
            side.label_methods.append(method if isinstance(method, str) else "?")
        idx = len(a_key)
        a_label.append(lid)
        a_key.append(hash((lab, fp(params, method, "params"))))
        a_out.append(0)
        a_status.append(_NO_ANSWER)
        a_code.append(0)
        a_req.append(seq)
        a_resp.append(-1)
        if member is None:
            pending[seq] = idx
        else:
            pending[(seq, _hid(value.get("id")))] = idx
            side.batch_member[idx] = member
        if method in SURFACE_METHODS:
            surface_params[idx] = params

    def add_response(seq: int, pair: Any, value: Any, t_lat: Any) -> int | None:
        idx = pending.pop(pair, None)
        if idx is None:
            idx = pending.pop((pair, _hid(value.get("id"))), None)
        if idx is None:
            return None
        lid = a_label[idx]
        method = side.label_methods[lid]
        a_resp[idx] = seq
        if "error" in value:
            err = value["error"]
            a_status[idx] = _ERROR
            c = err.get("code") if isinstance(err, dict) else None
            a_code[idx] = c if isinstance(c, int) and -(1 << 62) < c < (1 << 62) else 0
            a_out[idx] = fp(err, method, "error")
        else:
            a_status[idx] = _RESULT
            result = value.get("result")
            a_out[idx] = fp(result, method, "result")
            if method in SURFACE_METHODS:
                side.surface.feed(method, surface_params.pop(idx, None), result)
        if isinstance(t_lat, int):
            lat = side.latency.get(lid)
            if lat is None:
                lat = side.latency[lid] = array("q")
            lat.append(t_lat)
        return lid

    for rec in stream:
        typ = rec.get("type")
        fs = rec.get("findings")
        if typ != "message":
            if typ == "end":
                fs = rec.get("unanswered")
            if fs:
                for f in fs:
                    if f.get("severity") != "info":
                        findings[(f.get("code"), typ)] += 1
            continue
        side.messages += 1
        kind = rec.get("kind")
        d = rec.get("dir")
        seq = rec.get("seq")
        subject = rec.get("method")
        if kind == "request":
            value = _json(rec)
            if isinstance(value, dict):
                add_request(seq, d, value, None)
                if d == "c2s" and rec.get("rev"):
                    side.surface.note_revision(rec["rev"])
        elif kind == "response" or kind == "error":
            value = _json(rec)
            if isinstance(value, dict) and rec.get("pair") is not None:
                lid = add_response(seq, rec["pair"], value, rec.get("latency_us"))
                if lid is not None:
                    subject = side.label_methods[lid]
        elif kind == "notification":
            notes[(d, subject)] += 1
        elif kind == "batch":
            value = _json(rec)
            members = rec.get("members") or []
            for m in members:
                i = m.get("index")
                item = value[i] if isinstance(value, list) and isinstance(i, int) and i < len(value) else None
                if not isinstance(item, dict):
                    continue
                mk = m.get("kind")
                if mk == "request":
                    add_request(seq, d, item, i)
                elif mk in ("response", "error") and m.get("pair") is not None:
                    add_response(seq, m["pair"], item, m.get("latency_us"))
                elif mk == "notification":
                    notes[(d, m.get("method"))] += 1
        else:
            side.stray += 1
        if fs:
            for f in fs:
                if f.get("severity") != "info":
                    findings[(f.get("code"), subject or kind)] += 1
    side.truncated = stream.truncated
    side.complete = stream.end is not None
    return side


def _hid(v: Any) -> Any:
    return v if isinstance(v, (int, str)) else repr(v)


# -- alignment ------------------------------------------------------------------------

def align(a: Sequence[int], b: Sequence[int]) -> Iterator[tuple[int | None, int | None]]:
    """Align two key sequences: yields (i, j) for matched positions, (i, None)
    for a removed one and (None, j) for an inserted one, in order."""
    n, m = len(a), len(b)
    lo = 0
    while lo < n and lo < m and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = n, m
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    for i in range(lo):
        yield i, i
    if hi_a - lo <= DIFFLIB_LIMIT and hi_b - lo <= DIFFLIB_LIMIT:
        yield from _align_difflib(a, b, lo, hi_a, hi_b)
    else:
        yield from _align_window(a, b, lo, hi_a, lo, hi_b)
    for k in range(n - hi_a):
        yield hi_a + k, hi_b + k


def _align_difflib(a: Sequence[int], b: Sequence[int], lo: int, hi_a: int, hi_b: int) -> Iterator[tuple[int | None, int | None]]:
    sm = difflib.SequenceMatcher(None, list(a[lo:hi_a]), list(b[lo:hi_b]), autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                yield lo + i1 + k, lo + j1 + k
        else:
            for i in range(i1, i2):
                yield lo + i, None
            for j in range(j1, j2):
                yield None, lo + j


def _align_window(a: Sequence[int], b: Sequence[int], i: int, n: int, j: int, m: int) -> Iterator[tuple[int | None, int | None]]:
    """Greedy alignment with bounded look-ahead: on a mismatch, jump to the
    nearest (smallest i+j offset) pair of equal keys within WINDOW."""
    while i < n and j < m:
        if a[i] == b[j]:
            yield i, j
            i += 1
            j += 1
            continue
        first_b: dict[int, int] = {}
        for dj in range(min(WINDOW, m - j)):
            first_b.setdefault(b[j + dj], dj)
        best = None
        for di in range(min(WINDOW, n - i)):
            if best is not None and di >= best[0] + best[1]:
                break
            dj = first_b.get(a[i + di])
            if dj is not None and (best is None or di + dj < best[0] + best[1]):
                best = (di, dj)
        if best is None:
            yield i, None
            yield None, j
            i += 1
            j += 1
            continue
        for k in range(best[0]):
            yield i + k, None
        for k in range(best[1]):
            yield None, j + k
        i += best[0]
        j += best[1]
    for k in range(i, n):
        yield k, None
    for k in range(j, m):
        yield None, k


# -- report ---------------------------------------------------------------------------

@dataclass
class DiffReport:
    """Result of ``diff_captures``. ``items``: every difference (Item);
    ``counts``: exchanges by verdict; ``stats``: per-side facts."""

    a: str
    b: str
    items: list[Item] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def different(self) -> bool:
        return bool(self.items)

    @property
    def breaking(self) -> int:
        return sum(1 for it in self.items if it.breaking)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "different": self.different, "breaking": self.breaking,
                "exchanges": self.counts, "stats": self.stats, "items": [it.to_json() for it in self.items]}


def _fetch(path: str, wanted: set[int]) -> dict[int, Any]:
    """Second pass: the parsed JSON of the message records whose seq is wanted."""
    out: dict[int, Any] = {}
    if not wanted:
        return out
    for rec in CaptureStream(path):
        s = rec.get("seq")
        if s in wanted and rec.get("type") == "message":
            out[s] = _json(rec)
            if len(out) == len(wanted):
                break
    return out


def _member(value: Any, member: int | None, rid: Any = None) -> Any:
    if isinstance(value, list):
        if member is not None:
            return value[member] if member < len(value) else None
        for v in value:
            if isinstance(v, dict) and v.get("id") == rid:
                return v
        return None
    return value


def _request_and_response(side: Side, idx: int, msgs: dict[int, Any]) -> tuple[Any, Any]:
    req = _member(msgs.get(side.req_seq[idx]), side.batch_member.get(idx))
    rid = req.get("id") if isinstance(req, dict) else None
    rs = side.resp_seq[idx]
    resp = _member(msgs.get(rs), None, rid) if rs >= 0 else None
    return req, resp


def _pct(values: array, p: float) -> int:
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def diff_captures(a_path: str, b_path: str, ignore: Iterable[str] = (), latency_threshold: float | None = None) -> DiffReport:
    """Diff two captures (paths). Raises CaptureReadError (unreadable capture)
    and ValueError (bad ignore path)."""
    masker = Masker(ignore)
    a = summarize(a_path, masker)
    b = summarize(b_path, masker)
    report = DiffReport(a_path, b_path)
    report.stats = {name: {"messages": s.messages, "exchanges": len(s), "stray_lines": s.stray, "complete": s.complete,
                           "truncated": s.truncated, "revision": s.surface.revision}
                    for name, s in (("a", a), ("b", b))}
    report.items.extend(compare_surface(a.surface, b.surface))
    _exchanges(a, b, masker, report)
    _findings(a, b, report)
    _notifications(a, b, report)
    if latency_threshold is not None:
        _latency(a, b, latency_threshold, report)
    return report


def _exchanges(a: Side, b: Side, masker: Masker, report: DiffReport) -> None:
    counts = dict.fromkeys((MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW), 0)
    detail: list[tuple[int | None, int | None]] = []
    for i, j in align(a.key, b.key):
        if i is None:
            counts[NEW] += 1
        elif j is None:
            counts[MISSING] += 1
        elif a.status[i] == b.status[j] and a.out[i] == b.out[j]:
            counts[MATCH] += 1
            continue
        elif a.status[i] != b.status[j] or a.status[i] == _ERROR and a.code[i] != b.code[j]:
            counts[ERROR_CHANGED] += 1
        else:
            counts[CHANGED] += 1
        if len(detail) < DETAIL_LIMIT:
            detail.append((i, j))
    report.counts = counts
    if not detail:
        return
    want_a = {s for i, _ in detail if i is not None for s in (a.req_seq[i], a.resp_seq[i]) if s >= 0}
    want_b = {s for _, j in detail if j is not None for s in (b.req_seq[j], b.resp_seq[j]) if s >= 0}
    ma, mb = _fetch(a.path, want_a), _fetch(b.path, want_b)
    for i, j in detail:
        lab = a.labels[a.label[i]] if i is not None else b.labels[b.label[j]]  # type: ignore[index]
        method = a.label_methods[a.label[i]] if i is not None else b.label_methods[b.label[j]]  # type: ignore[index]
        ra = _request_and_response(a, i, ma) if i is not None else (None, None)
        rb = _request_and_response(b, j, mb) if j is not None else (None, None)
        where = {"a_seq": a.req_seq[i] if i is not None else None, "b_seq": b.req_seq[j] if j is not None else None}
        if i is None:
            report.items.append(Item("exchanges", "new", lab, f"{lab}: only in B (#{where['b_seq']})", False,
                                     {**where, "params": _params(rb[0])}))
            continue
        if j is None:
            report.items.append(Item("exchanges", "removed", lab, f"{lab}: only in A (#{where['a_seq']})", False,
                                     {**where, "params": _params(ra[0])}))
            continue
        v = compare_responses(ra[1], rb[1], method, masker)
        if v.status == MATCH:
            continue                        # hash collision or masking subtlety: the full compare wins
        if v.status == ERROR_CHANGED:
            text = f"{lab}: {_outcome_text(ra[1])} -> {_outcome_text(rb[1])}"
        elif v.status in (MISSING, NEW):
            text = f"{lab}: {'no answer in B' if v.status == MISSING else 'no answer in A'}"
        else:
            text = f"{lab}: " + ", ".join(p.path for p in v.paths[:6]) + (" …" if len(v.paths) > 6 else "")
        report.items.append(Item("exchanges", "changed", lab, text, False, {**where, **v.to_json()}))
    shown = len(detail)
    total = counts[CHANGED] + counts[ERROR_CHANGED] + counts[MISSING] + counts[NEW]
    if total > shown:
        report.items.append(Item("exchanges", "changed", "…", f"{total - shown} more differing exchanges not shown", False,
                                 {"not_shown": total - shown}))


def _params(req: Any) -> Any:
    return req.get("params") if isinstance(req, dict) else None


def _outcome_text(resp: Any) -> str:
    if not isinstance(resp, dict):
        return "no answer"
    if "error" in resp:
        err = resp["error"]
        if isinstance(err, dict):
            return f"error {err.get('code')} {str(err.get('message'))[:60]!r}"
        return "error"
    return "result"


def _findings(a: Side, b: Side, report: DiffReport) -> None:
    for key in sorted(set(a.findings) | set(b.findings), key=str):
        na, nb = a.findings.get(key, 0), b.findings.get(key, 0)
        code, where = key
        if na and not nb:
            report.items.append(Item("findings", "resolved", code, f"{code} ({where}): {na} in A, none in B", False, {"a": na, "b": 0, "where": where}))
        elif nb and not na:
            report.items.append(Item("findings", "new", code, f"{code} ({where}): {nb} new in B", False, {"a": 0, "b": nb, "where": where}))


def _notifications(a: Side, b: Side, report: DiffReport) -> None:
    for key in sorted(set(a.notifications) | set(b.notifications), key=str):
        d, method = key
        if key not in b.notifications:
            report.items.append(Item("notifications", "removed", str(method), f"{d} {method}: sent in A ({a.notifications[key]}), never in B"))
        elif key not in a.notifications:
            report.items.append(Item("notifications", "added", str(method), f"{d} {method}: new in B ({b.notifications[key]})"))


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


# -- text rendering -----------------------------------------------------------------------

_SECTIONS = ("protocol", "capabilities", "serverInfo", "tools", "resources", "resourceTemplates", "prompts",
             "exchanges", "findings", "notifications", "latency")
_MARK = {"added": "+", "new": "+", "removed": "-", "resolved": "-", "changed": "~", "shift": "~"}
_COLOUR = {"+": "32", "-": "31", "~": "33", "!": "1;31"}


def render_text(report: DiffReport, color: bool = False) -> str:
    """The report as text lines (ANSI colours when ``color``); ends with a
    one-line summary. Breaking changes are marked ``!``."""
    def paint(code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    lines = [f"A: {report.a}", f"B: {report.b}"]
    by: dict[str, list[Item]] = {}
    for it in report.items:
        by.setdefault(it.section, []).append(it)
    for section in _SECTIONS + tuple(s for s in by if s not in _SECTIONS):
        items = by.get(section)
        if not items:
            continue
        lines.append(paint("1", section))
        for it in items:
            mark = _MARK.get(it.kind, "~")
            text = f"  {mark} {it.detail}"
            if it.breaking:
                text = f"  ! {it.detail}  [breaking]"
            lines.append(paint(_COLOUR["!" if it.breaking else mark], text))
    c = report.counts
    summary = (f"{c.get(MATCH, 0)} exchanges match, {c.get(CHANGED, 0)} changed, {c.get(ERROR_CHANGED, 0)} error-changed, "
               f"{c.get(MISSING, 0)} only in A, {c.get(NEW, 0)} only in B")
    if report.different:
        summary += f"; {len(report.items)} difference(s), {report.breaking} breaking"
    else:
        summary += "; no differences"
    lines.append(summary)
    return "\n".join(lines) + "\n"
