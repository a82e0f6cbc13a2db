"""``mcptap check``: re-judge captures and group their findings with today's rules (level 3, pure consumer).

A capture's annotations are a cache (design principle 4): ``check`` re-reads
the raw bytes of every message and re-annotates them with the current rules
(:func:`mcptap.recorder.reannotate`), streaming, so memory stays flat however
long the capture is. Findings are grouped by code, with counts and the first
places (record seq, time, line in the capture file) they occur.

The capture itself can be at fault: a cut last line (``capture.truncated``),
no end record (``capture.incomplete``: mcptap was killed, or is still
recording) and ``gap`` records / an end record with ``capture_error``
(``capture.gap``) become findings like any other.

Exit status (:meth:`CheckReport.status`): 2 when a capture could not be read
(``CaptureReadError``), else 1 when a finding at or above ``fail_on`` exists,
else 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mcptap.capture.integrity import MAX_T_US
from mcptap.check.reannotated import Reannotated, all_findings
from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name, escape_os
from mcptap.model import SEVERITY_RANK, severity_counts
from mcptap.protocol.codes import CODES

FAIL_ON = ("error", "warn", "info", "never")
_RANK = SEVERITY_RANK


@dataclass(slots=True)
class Place:
    """Where one finding occurred: record ``seq``, ``t_us`` (µs since capture
    start), ``line`` in the capture file, the finding's ``message`` and
    ``severity``, the message's ``dir`` and ``method`` (a response: its
    request's method)."""

    seq: int | None
    t_us: int | None
    line: int | None
    message: str
    severity: str = "info"
    dir: str | None = None
    method: str | None = None

    def where(self) -> str:
        """``"#5 at 0.005s"``, or ``"end at 0.208s"`` for a finding about the
        capture as a whole (no record: a cut or missing end); ``"?"`` for an
        unknown time. Every report format words a place this way."""
        at = "?" if self.t_us is None else f"{self.t_us / 1e6:.3f}s"
        return f"#{self.seq} at {at}" if self.seq is not None else f"end at {at}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"seq": self.seq, "t_us": self.t_us, "line": self.line, "severity": self.severity, "message": self.message}
        if self.dir:
            d["dir"] = self.dir
        if self.method:
            d["method"] = self.method
        return d


@dataclass(slots=True)
class CodeGroup:
    """All findings of one ``code`` in a capture: ``count``, the highest
    ``severity`` seen (a rule may lower a code's default for a revision),
    counts per severity and the first ``places``."""

    code: str
    severity: str
    count: int = 0
    by_severity: dict[str, int] = field(default_factory=dict)
    places: list[Place] = field(default_factory=list)

    @property
    def meaning(self) -> str:
        c = CODES.get(self.code)
        return c.meaning if c else ""

    @property
    def source(self) -> str:
        c = CODES.get(self.code)
        return c.source if c else ""

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "count": self.count, "by_severity": self.by_severity,
                "meaning": self.meaning, "source": self.source, "first": [p.to_json() for p in self.places]}


@dataclass(slots=True)
class CaptureReport:
    """The result of checking one capture. ``error``: the CaptureReadError
    text when it could not be read (then the rest is partial)."""

    path: str
    transport: str | None = None
    started: str | None = None
    messages: int = 0
    records: int = 0
    duration_us: int = 0
    complete: bool = False
    truncated: bool = False
    groups: dict[str, CodeGroup] = field(default_factory=dict)
    severities: dict[str, int] = field(default_factory=severity_counts)
    error: str | None = None

    def sorted_groups(self) -> list[CodeGroup]:
        """Groups, most severe first, then by count (descending), then code."""
        return sorted(self.groups.values(), key=lambda g: (-_RANK.get(g.severity, 0), -g.count, g.code))

    def worst(self) -> str | None:
        for s in ("error", "warn", "info"):
            if self.severities.get(s):
                return s
        return None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": escape_name(self.path), "transport": self.transport, "started": self.started,
                             "messages": self.messages, "records": self.records, "duration_us": self.duration_us,
                             "complete": self.complete, "truncated": self.truncated, "findings": dict(self.severities),
                             "codes": [g.to_json() for g in self.sorted_groups()]}
        if self.error is not None:
            d["error"] = escape_os(self.error)     # it names the file: a byte that is not UTF-8 as \xff, as "path" shows it
        return d


@dataclass(slots=True)
class CheckReport:
    """The result of ``mcptap check`` over one or more captures."""

    captures: list[CaptureReport]
    fail_on: str = "error"

    def failing(self, cap: CaptureReport) -> int:
        """How many of ``cap``'s findings are at or above ``fail_on``."""
        if self.fail_on == "never":
            return 0
        rank = _RANK[self.fail_on]
        return sum(n for s, n in cap.severities.items() if _RANK[s] >= rank)

    def status(self) -> int:
        """2 if a capture was unreadable, 1 if a finding at or above
        ``fail_on`` exists, else 0."""
        if any(c.error is not None for c in self.captures):
            return 2
        return 1 if any(self.failing(c) for c in self.captures) else 0

    def totals(self) -> dict[str, int]:
        out = severity_counts()
        for c in self.captures:
            for s, n in c.severities.items():
                out[s] += n
        return out

    def to_json(self) -> dict[str, Any]:
        return {"fail_on": self.fail_on, "status": self.status(), "findings": self.totals(),
                "captures": [c.to_json() for c in self.captures]}


def add_finding(groups: dict[str, CodeGroup], sev: dict[str, int], keep: int, f: dict[str, Any], seq: Any, t: int | None,
                line: int | None, d: Any, where: Any, firsts: dict[Any, tuple[int, int]] | None = None) -> None:
    """Count finding ``f`` (a finding dict of a record: ``seq``, time ``t``,
    ``line``, direction ``d``, method ``where``) into ``groups`` and the
    per-severity ``sev``, keeping the first ``keep`` places per code.
    ``firsts``: when given, records where each code, and each (code,
    severity), first occurs: (line, how many firsts came before), so ties on
    one line keep their order (check/merge.py merges runs by them)."""
    code = f.get("code", "?")
    s = f.get("severity", "info")
    if s not in sev:
        s = "info"
    sev[s] += 1
    g = groups.get(code)
    if g is None:
        g = groups[code] = CodeGroup(code, s)
        if firsts is not None and line is not None:
            firsts[code] = (line, len(firsts))
    elif _RANK[s] > _RANK[g.severity]:
        g.severity = s
    g.count += 1
    n = g.by_severity.get(s)
    if n is None:
        g.by_severity[s] = 1
        if firsts is not None and line is not None:
            firsts[(code, s)] = (line, len(firsts))
    else:
        g.by_severity[s] = n + 1
    if len(g.places) < keep:
        g.places.append(Place(seq, t, line, f.get("message", ""), s, d, where))


def check_stream(ra: Reannotated, path: str, keep: int = 3) -> CaptureReport:
    """Consume a re-annotated stream and group its findings. ``keep``: how
    many first places to keep per code. Raises CaptureReadError."""
    rep = CaptureReport(path, ra.header.get("transport"), ra.header.get("started"))
    groups = rep.groups
    sev = rep.severities
    methods: dict[int, str | None] = {}       # open request seq -> method (for response places)
    for rec in ra:
        rep.records += 1
        typ = rec.get("type")
        t = rec.get("t_us")
        if isinstance(t, int) and rep.duration_us < t <= MAX_T_US:     # (an impossible one is a finding, not the duration)
            rep.duration_us = t
        method = rec.get("method")
        if typ == "message":
            rep.messages += 1
            if rec.get("kind") == "request":
                methods[rec["seq"]] = method
            elif "pair" in rec:
                method = methods.pop(rec["pair"], None)
        elif typ == "end":
            rep.complete = not any(f["code"] == "capture.incomplete" for f in rec.get("capture", ()))
            rep.truncated = any(f["code"] == "capture.truncated" for f in rec.get("capture", ()))
        fs = all_findings(rec)
        if not fs:
            continue
        seq = rec.get("seq") if typ != "end" else None
        tt = t if isinstance(t, int) else None
        d = rec.get("dir")
        for f in fs:
            where = method
            if typ == "end" and isinstance(f.get("data"), dict):
                where = f["data"].get("method", method)
            add_finding(groups, sev, keep, f, seq, tt, ra.line, d, where)
    return rep


def check_capture(path: str, keep: int = 3, shapes: bool = True, reuse: bool = True) -> CaptureReport:
    """Re-annotate and group one capture file. Raises CaptureReadError."""
    return check_stream(Reannotated.open(path, shapes, light=True, reuse=reuse), path, keep)


def run_check(paths: Iterable[str], fail_on: str = "error", keep: int = 3, shapes: bool = True,
              reuse: bool = True, check: Callable[[str, int, bool, bool], CaptureReport] | None = None) -> CheckReport:
    """Check every capture; an unreadable one is reported (``error``), the
    others still checked. ``fail_on``: error | warn | info | never;
    ``shapes``: include schema shape checks. ``check(path, keep, shapes,
    reuse)``: how one capture is checked (default :func:`check_capture`; the
    CLI passes the two-process one, mcptap/check/parallel.py)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {FAIL_ON}")
    one = check or check_capture
    caps = []
    for p in paths:
        try:
            caps.append(one(p, keep, shapes, reuse))
        except CaptureReadError as exc:
            caps.append(CaptureReport(p, error=str(exc)))
    return CheckReport(caps, fail_on)


