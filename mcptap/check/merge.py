"""Merging the check of a later run of a capture's lines into the check of the
lines before it (level 3, pure; used by check/scan.py).

A later run is checked without knowing what came before, so its findings are
grouped on their own (``groups``/``sev``, lines counted from its start, with
``firsts``: where each code and each (code, severity) first occurs), apart
from the responses whose requests came before it, which the earlier run
judges when merging (``dgroups``/``dsev``/``dfirsts``). Merged, every count,
every first place, and the order of codes and of ``by_severity`` keys are
what one pass over all the lines gives (tests/test_check_scan.py).
"""

from __future__ import annotations

from typing import Any

from mcptap.capture.integrity import BACKWARDS_US, sequence_finding
from mcptap.check.report import CodeGroup, Place, add_finding
from mcptap.model import SEVERITY_RANK as _RANK
from mcptap.model import Direction, Finding, Kind, severity_counts

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}
#: a later run's last t_us while it has read none (pickles as itself)
UNSET = "\x00unset"


def merge_groups(groups: dict[str, CodeGroup], sev: dict[str, int],
                 later: list[tuple[dict[str, CodeGroup], dict[str, int], dict[Any, tuple[int, int]]]],
                 keep: int, off: int) -> None:
    """Add the groups of a later run (each part of ``later``: groups, counts
    per severity, firsts; lines relative to the run) to ``groups``/``sev``;
    ``off`` is added to every later line (the records before the run, plus the header)."""
    for _, part_sev, _ in later:
        for s, n in part_sev.items():
            sev[s] = sev.get(s, 0) + n
    firsts: dict[Any, tuple[int, int]] = {}
    for _, _, part_firsts in later:
        for k, line in part_firsts.items():
            if k not in firsts or line < firsts[k]:
                firsts[k] = line
    codes = sorted({code for part, _, _ in later for code in part}, key=lambda c: firsts.get(c, (0, 0)))
    for code in codes:
        parts = [p[code] for p, _, _ in later if code in p]
        places: list[Place] = sorted((pl for g in parts for pl in g.places), key=lambda pl: pl.line or 0)
        for pl in places:
            if pl.line is not None:
                pl.line += off
        g = groups.get(code)
        if g is None:
            g = groups[code] = CodeGroup(code, parts[0].severity)
        for part in parts:
            g.count += part.count
            if _RANK[part.severity] > _RANK[g.severity]:
                g.severity = part.severity
        seen = {s: firsts.get((code, s), (0, 0)) for part in parts for s in part.by_severity}
        for s in sorted(seen, key=lambda s: seen[s]):
            g.by_severity[s] = g.by_severity.get(s, 0) + sum(part.by_severity.get(s, 0) for part in parts)
        g.places.extend(places[:max(0, keep - len(g.places))])


def merge_order(order: list[tuple[bool, Finding]], later: list[tuple[bool, Finding]], first_seq: tuple[int, str, bool, int] | None,
                last_seq: int | None, gap_since_last: bool) -> list[tuple[bool, Finding]]:
    """The integrity order findings of both runs, as one pass gives them:
    (a sequence finding?, Finding) pairs; sequence findings stop at five
    (capture/integrity.Integrity). ``first_seq``: the later run's first
    record with a seq (seq, type, a gap record before it, its index in
    ``later``), judged against the earlier run's ``last_seq``."""
    out = list(order)

    def boundary() -> None:
        if first_seq is not None and last_seq is not None and len(out) < 5:
            seq, typ, gap, _ = first_seq
            f = sequence_finding(seq, typ, last_seq, gap_since_last or gap)
            if f is not None:
                out.append((True, f))

    at = first_seq[3] if first_seq is not None else None
    for i, (is_seq, f) in enumerate(later):
        if i == at:
            boundary()
        if not is_seq or len(out) < 5:
            out.append((is_seq, f))
    if at is not None and at >= len(later):
        boundary()
    return out


def absorb(self: Any, b: dict[str, Any]) -> bool:
    """``Scan.absorb``: merge ``b``, the ``Scan.state()`` of the run of lines
    right after scan ``self``'s, into it, as if it had read them. False
    (nothing changed) when that run cannot be merged exactly."""
    if self.pending is not None or b["pending"] is not None or not b["increasing"]:
        return False
    if self.end is not None and b["n"]:
        return False                    # records after an end record: judged in order
    if self.last_seq is not None and b["first_seq"] is not None and b["first_seq"][0] <= self.last_seq:
        return False
    if any(type(f) is not dict for _, rec, _ in b["deferred"] for f in rec.get("findings") or ()):
        return False
    if b["t_min"] is not None and b["t_min"] < self.t_latest - BACKWARDS_US:
        return False                    # a message time going back across the split: the reference reports it
    off = self.n + self.cut + 1         # the lines before the run: records, cut lines, the header
    # responses in the later run to requests in this one, in order
    dgroups: dict[str, CodeGroup] = {}
    dsev = severity_counts()
    dfirsts: dict[Any, tuple[int, int]] = {}
    shapes = self.shapes
    if shapes:
        from mcptap.protocol import shapes as shape_rules
    for line, rec, value in b["deferred"]:
        q = self.reqs.pop(rec["pair"], None)
        answered = q.get("method") if q is not None else None
        fs = rec.get("findings")
        if shapes and type(value) is dict and rec["kind"] == "response" and answered is not None:
            extra = shape_rules.check(_DIRS[rec["dir"]], Kind.RESPONSE, answered, value.get("result"), rec.get("rev"), _task_params(q))
            if extra:
                fs = list(fs or ()) + [f.to_json() for f in extra]
        if fs:
            for f in fs:
                add_finding(dgroups, dsev, self.keep, f, rec["seq"], rec.get("t_us"), line, rec["dir"], answered, dfirsts)
    merge_groups(self.groups, self.sev, [(b["groups"], b["sev"], b["firsts"]), (dgroups, dsev, dfirsts)], self.keep, off)
    self.order = merge_order(self.order, b["order"], b["first_seq"], self.last_seq, self.gap_since_last)
    self.reqs.update(b["reqs"])
    for name, (nbytes, nmsg) in b["counts"].items():
        self.counts[name][0] += nbytes
        self.counts[name][1] += nmsg
    self.n += b["n"]
    self.cut += b["cut"]
    self.n_end += b["n_end"]
    self.messages += b["messages"]
    self.duration = max(self.duration, b["duration"])
    self.t_latest = max(self.t_latest, b["t_latest"])
    if b["t_min"] is not None and (self.t_min is None or b["t_min"] < self.t_min):
        self.t_min = b["t_min"]
    self.gaps += b["gaps"]
    if b["end"] is not None:
        self.end = b["end"]
    if b["any_seq"]:
        self.any_seq = True
        self.last_rec_seq = b["last_rec_seq"]
        if b["last_t"] != UNSET:
            self.last_t = b["last_t"]
        self.gap_since_last = b["gap_since_last"]
    else:
        self.gap_since_last = self.gap_since_last or b["gap_since_last"]
    if b["last_seq"] is not None:
        self.last_seq = b["last_seq"]
    self.truncated = b["truncated"]
    return True


def _task_params(q: dict[str, Any] | None) -> Any:
    """The params of a task-augmented request record (from its ``json`` only, as reuse does)."""
    if q is None:
        return None
    j = q.get("json")
    params = j.get("params") if isinstance(j, dict) else None
    return params if isinstance(params, dict) and "task" in params else None
