"""Text rendering of a ``DiffReport`` (pure, level 3).

``render_text(report, style=None) -> str``: one block per section (protocol,
capabilities, serverInfo, tools, ..., latency), ``+`` / ``-`` / ``~`` marks,
``!`` for breaking changes, colours through ``style`` (cli/output.py), then a one-line
summary of exchange verdicts, and a note for a capture that is cut short or
has no end record, and the report's ``notes``.
"""

from __future__ import annotations

from collections.abc import Callable

from mcptap.compare.verdict import CHANGED, ERROR_CHANGED, MATCH, MISSING, NEW
from mcptap.diff.report import DiffReport
from mcptap.diff.surface import Item
from mcptap.escape import escape_controls as esc
from mcptap.escape import escape_name, shown

_SECTIONS = ("protocol", "capabilities", "serverInfo", "tools", "resources", "resourceTemplates", "prompts",
             "exchanges", "findings", "notifications", "latency")
_MARK = {"added": "+", "new": "+", "removed": "-", "resolved": "-", "changed": "~", "shift": "~"}
_ROLE = {"+": "added", "-": "removed", "~": "changed", "!": "breaking"}


def render_text(report: DiffReport, style: Callable[[str, str], str] | None = None) -> str:
    """The report as text lines; ends with a one-line summary. Breaking
    changes are marked ``!``. ``style(text, role)`` colours (roles: bold,
    added, removed, changed, breaking); None: plain text."""
    def paint(role: str, text: str) -> str:
        return style(text, role) if style is not None else text

    lines = [f"A: {escape_name(report.a)}", f"B: {escape_name(report.b)}"]   # as show, check and replay name files
    by: dict[str, list[Item]] = {}
    for it in report.items:
        by.setdefault(it.section, []).append(it)
    for section in _SECTIONS + tuple(s for s in by if s not in _SECTIONS):
        items = by.get(section)
        if not items:
            continue
        lines.append(paint("bold", shown(section)))
        for it in items:
            mark = _MARK.get(it.kind, "~")
            text = f"  {mark} {shown(it.detail)}"
            if it.breaking:
                text = f"  ! {shown(it.detail)}  [breaking]"
            lines.append(paint(_ROLE["!" if it.breaking else mark], text))
    c = report.counts
    summary = (f"{c.get(MATCH, 0)} exchanges match, {c.get(CHANGED, 0)} changed, {c.get(ERROR_CHANGED, 0)} error-changed, "
               f"{c.get(MISSING, 0)} only in A, {c.get(NEW, 0)} only in B")
    if report.different:
        summary += f"; {len(report.items)} difference(s), {report.breaking} breaking"
    else:
        summary += "; no differences"
    lines.append(summary)
    # a cut capture lacks its tail: its "only in the other" exchanges may be that, not a change
    for name in ("a", "b"):
        st = report.stats.get(name) or {}
        if st.get("truncated"):
            lines.append(f"note: {name.upper()} is cut short (its last line is truncated): it ends early")
        elif st.get("complete") is False:
            lines.append(f"note: {name.upper()} has no end record (recording did not finish or is still running)")
    lines.extend(esc(f"note: {n}") for n in report.notes)
    return "\n".join(lines) + "\n"
