"""The human ``mcptap check`` report (level 3): ``format_text(report, style)``
yields lines; colours come from the caller's ``style(text, role)``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from mcptap.check.report import CheckReport
from mcptap.escape import escape_name, shown
from mcptap.escape import escape_os as esc


def _secs(t_us: int | None) -> str:
    return "?" if t_us is None else f"{t_us / 1e6:.3f}s"


def format_text(report: CheckReport, style: Callable[[str, str], str] | None = None,
                errors_shown: bool = False) -> Iterator[str]:
    """The human report, one line per string. ``style(text, role)`` colours
    (roles: error, warn, info, ok, bold, dim); None for plain text.
    ``errors_shown``: read errors were already printed (stderr, same
    terminal), so an unreadable capture's line does not repeat the reason.
    Peer text (methods, finding messages) is escaped (mcptap.escape), file
    names and read errors as OS text (``escape.escape_os``)."""
    st = style or (lambda text, role: text)
    for cap in report.captures:
        if cap.error is not None:
            why = "unreadable (the reason is above)" if errors_shown else cap.error
            yield st(escape_name(cap.path) + esc(f": cannot check: {why}"), "error")
            continue
        state = "complete" if cap.complete else "INCOMPLETE"
        if cap.truncated:
            state += ", truncated"
        counts = ", ".join(f"{cap.severities[s]} {s}" for s in ("error", "warn", "info"))
        said = f"{cap.messages} message{_s(cap.messages)}"
        yield st(escape_name(cap.path), "bold") + esc(f": {said}, {_secs(cap.duration_us)}, {cap.transport or '?'} ({state}); findings: {counts}")
        for g in cap.sorted_groups():
            where = ", ".join(p.where() for p in g.places)
            more = "" if g.count <= len(g.places) else ", …"
            yield f"  {st(shown(f'{g.severity:<5}'), g.severity)} {shown(g.code)} ×{g.count}{_split(g.by_severity)}  first {where}{more}"
            if g.places:
                first = g.places[0]
                what = f"{first.method}: " if first.method and first.method not in first.message else ""
                yield st(shown(f"        {what}{first.message}"), "dim")
        if not cap.groups:
            yield "  " + st("no findings", "ok")
    totals = report.totals()
    status = report.status()
    if status == 2:
        verdict = st("ERROR", "error") + " (a capture could not be read)"
    elif report.fail_on == "never":
        verdict = st("PASS", "ok") + " (--fail-on never)"
    elif status == 1:
        n = sum(report.failing(c) for c in report.captures)
        verdict = st("FAIL", "error") + f" ({n} finding(s) at or above {report.fail_on})"
    else:
        verdict = st("PASS", "ok") + f" (nothing at or above {report.fail_on})"
    yield f"{len(report.captures)} capture(s): {totals['error']} error, {totals['warn']} warn, {totals['info']} info: {verdict}"


def _split(by_severity: dict[str, int]) -> str:
    # A rule may lower a code's severity for some findings (a revision, a
    # kind of member): the group line shows the highest, so say how the
    # count divides, or "error ×2" would over-state it.
    if len(by_severity) < 2:
        return ""
    return " (" + ", ".join(f"{by_severity[s]} {s}" for s in ("error", "warn", "info") if s in by_severity) + ")"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
