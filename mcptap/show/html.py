"""``mcptap report``: one self-contained HTML file for a capture (level 3, pure:
records in, a string out).

The file needs nothing but a browser: no network access (a Content-Security-
Policy forbids it), no external script, style or font. It holds the
re-annotated records as JSON (``<script type="application/json">``, ``<``
escaped so no payload can close the tag) and the viewer (``assets/report.js``,
``assets/report.css``) inline:

* session header: transport, target, start, protocol revision, client and
  server info and capabilities (``show/sessions.py``: from ``initialize``, or
  ``server/discover`` and the per-request ``_meta`` of 2026-07-28; requests the
  tap refused count for no session), whether the capture was scrubbed;
* timeline: one line per record as ``mcptap show`` prints it (pairing and
  latency included; a request the tap refused itself marked ``⊘ tap 403``, as
  show marks it, and its arrow in the diagram stopping short of the server), rendered lazily (only the rows on screen exist in the
  DOM), so 100,000 messages stay usable; a row opens its payload, pretty-printed;
* filter box: the ``show --filter`` language (batch members included: a batch
  row carries its members as rows of their own), evaluated in the browser by a
  port of ``mcptap/filters`` driven by the same operator table
  (``filters.operators.operator_table()``, embedded); a test runs the same
  expressions through both and compares the matches;
* sequence diagram (SVG) of the messages from the top of the timeline view;
* findings grouped by severity, each code with its meaning and spec source
  from ``protocol/codes.py``, counts and first places (links to the rows).

Every text the viewer shows goes through its port of ``escape.escape_controls``
(the table: ``escape.ranges()``, embedded as ``escape``), the payload pane too.

``write_report(out, spool, header, records, path, title)`` streams the
document to a binary file (the payload texts wait in ``spool`` until the
timeline rows are written), so memory stays flat for any capture;
``report_html`` returns it as a str. ``records`` are re-annotated records
(``check.reannotated.Reannotated``; the end record last).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from importlib import resources
from typing import Any, BinaryIO

from mcptap.capture.dumps import dumps
from mcptap.capture.fields import message_text, record_findings
from mcptap.escape import escape_controls, ranges, shown
from mcptap.filters.operators import operator_table
from mcptap.protocol.codes import CODES
from mcptap.show.lone import LoneNames
from mcptap.show.render import COLUMNS, refusal_mark, timeline_line
from mcptap.show.sessions import Sessions
from mcptap.show.tracker import Tracker
from mcptap.show.values import method_of, record_id, tool_name

#: First places kept per finding code.
PLACES = 50
_SEV_ORDER = ("error", "warn", "info")


def _asset(name: str) -> str:
    return resources.files("mcptap.show").joinpath("assets", name).read_text("utf-8")


class _Report:
    """What the page shows, gathered one record at a time: ``row(rec)`` gives
    that record's timeline row and payload text; ``tail()`` the rest
    (``meta``, ``extra``, ``findings``, ``ops``) once the records ended. Only
    the bounded parts stay in memory (finding groups with their first
    ``PLACES`` places, session info, non-message records)."""

    def __init__(self, header: dict[str, Any], path: str | None) -> None:
        self.header, self.path = header, path
        self.tracker = Tracker()
        self.names = LoneNames()
        self.n = 0
        self.extra: dict[int, str] = {}          # row -> the whole record, for rows that are not messages
        self.sessions = Sessions(header.get("transport"))
        self.groups: dict[str, dict[str, Any]] = {}
        self.end: dict[str, Any] | None = None
        self.revisions: set[str] = set()

    def note(self, fs: Iterable[dict[str, Any]], seq: Any, t: Any) -> None:
        groups = self.groups
        for f in fs:
            code = str(f.get("code", "?"))
            g = groups.get(code)
            if g is None:
                meta = CODES.get(code)
                g = groups[code] = {"code": code, "severity": str(f.get("severity") or (meta.severity if meta else "info")),
                                    "meaning": meta.meaning if meta else "", "source": meta.source if meta else "",
                                    "count": 0, "places": []}
            g["count"] += 1
            if len(g["places"]) < PLACES:
                # a 50 KB method name quoted whole: cut; a lone surrogate's name exact, escaped (show/lone.py)
                g["places"].append([seq, t, shown(self.names.text(str(f.get("message", ""))))])

    def row(self, rec: dict[str, Any]) -> tuple[list[Any], str] | None:
        """(timeline row, payload text) of one record; None for the end record."""
        req = self.tracker.feed(rec)
        self.names.feed(rec, self.tracker.members)
        typ = rec.get("type")
        if typ == "end":
            self.end = rec
            self.note((rec.get("unanswered") or []) + (rec.get("capture") or []), rec.get("seq"), rec.get("t_us"))
            return None
        self.sessions.feed(rec)
        if isinstance(rec.get("rev"), str):
            self.revisions.add(rec["rev"])
        fs = record_findings(rec)
        self.note(fs, rec.get("seq"), rec.get("t_us"))
        q = req["seq"] if req is not None and rec.get("kind") != "request" else None
        if typ not in ("message", "stderr"):
            self.extra[self.n] = dumps(rec, indent=True).decode()
        self.n += 1
        # one row: the fields the filter language reads, plus the show line
        row = [
            rec.get("seq"), rec.get("t_us"), typ, rec.get("dir"), rec.get("kind"), (method := method_of(rec) if typ == "message" else rec.get("method")),
            _js_id(record_id(rec)) if "id" in rec else None, "id" in rec, rec.get("pair"), rec.get("latency_us"), rec.get("phase"),
            rec.get("session") if isinstance(rec.get("session"), str) else None, q, (tool := tool_name(rec)),
            [[f.get("code"), f.get("severity")] for f in fs], timeline_line(rec, req),
            1 if typ == "message" and ("json" in rec or "raw" in rec) else 0, refusal_mark(rec),
            _label(method), _label(tool),       # as shown (diagram labels; escaped, a lone surrogate too); the filter reads the exact ones
        ]
        members = self.tracker.members
        ctx = _context(req) if req is not None and req.get("member") else None
        if members or ctx is not None:
            # a batch's members, each a row of its own for the filter (show -f matches a batch by
            # them: filters.members); a record answering a batch member: that request's method and tool
            row += [[_member_row(v, mq) for v, mq in members] if members else None, ctx]
        return row, message_text(rec)     # the payload text: what ~t searches, as in show
    def tail(self) -> dict[str, Any]:
        groups, header, end = self.groups, self.header, self.end
        findings = {sev: sorted((g for g in groups.values() if g["severity"] == sev), key=lambda g: (-g["count"], g["code"]))
                    for sev in _SEV_ORDER}
        meta = {
            "path": self.path, "transport": header.get("transport"), "started": header.get("started"), "mcptap": header.get("mcptap"),
            "target": header.get("target") or {}, "scrubbed": header.get("scrubbed"), "name": header.get("name"),
            "columns": COLUMNS, "revisions": sorted(self.revisions), "sessions": self.sessions.result(),
            "end": {k: end.get(k) for k in ("c2s", "s2c", "stderr", "exit_code", "pending", "incomplete", "severities", "original")} if end else None,
        }
        meta = _shown_deep(meta)        # peer text (session info, pending methods, revisions) as escape.py shows it
        return {"meta": meta, "extra": {str(k): v for k, v in self.extra.items()}, "findings": findings, "ops": operator_table(),
                "escape": ranges()}      # the viewer escapes every text it shows by these (escape.py's table): the payload pane too


def report_data(header: dict[str, Any], records: Iterable[dict[str, Any]], path: str | None = None) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready dict (see module doc); in
    memory, for tests and tools (``write_report`` streams it)."""
    rep = _Report(header, path)
    rows: list[list[Any]] = []
    payloads: list[str] = []
    for rec in records:
        got = rep.row(rec)
        if got is not None:
            rows.append(got[0])
            payloads.append(got[1])
    return {"rows": rows, "payloads": payloads, **rep.tail()}


def _head(title: str) -> bytes:
    esc_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        # no network, ever: only inline script/style and data: images
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>mcptap report: {esc_title}</title>\n<style>\n", _asset("report.css"), "</style></head>\n<body>\n",
        _asset("report.html"),
        "<script type=\"application/json\" id=\"mcptap-data\">",
    ]).encode("utf-8")


def write_report(out: BinaryIO, spool: BinaryIO, header: dict[str, Any], records: Iterable[dict[str, Any]],
                 path: str | None = None, title: str | None = None) -> None:
    """Write the whole HTML document (UTF-8) to ``out`` as the records come:
    memory stays flat whatever the capture's size. The timeline rows go to
    ``out`` at once; the payload texts wait in ``spool`` (an empty binary
    file, read back from its start) until the rows ended. Raises what
    ``records`` raises (CaptureReadError) and OSError from the files."""
    rep = _Report(header, path)
    out.write(_head(title or path or "capture"))
    out.write(b'{"rows":[')
    first = True
    for rec in records:
        got = rep.row(rec)
        if got is None:
            continue
        sep = b"" if first else b","
        first = False
        out.write(sep + _for_script(dumps(got[0])))
        spool.write(sep + _for_script(dumps(got[1])))
    out.write(b'],"payloads":[')
    spool.seek(0)
    while block := spool.read(1 << 20):
        out.write(block)
    tail = _for_script(dumps(rep.tail()))
    out.write(b"]," + tail[1:])       # the tail object's members, after the two arrays
    out.write(("</script>\n<script>\n" + _asset("report.js") + "</script>\n</body></html>\n").encode("utf-8"))


def report_html(header: dict[str, Any], records: Iterable[dict[str, Any]], path: str | None = None, title: str | None = None) -> str:
    """The whole HTML document (str), built in memory (``write_report`` streams it)."""
    out, spool = io.BytesIO(), io.BytesIO()
    write_report(out, spool, header, records, path, title)
    return out.getvalue().decode("utf-8")


def _context(req: dict[str, Any]) -> list[Any]:
    """The request context the filter reads (``~m`` of a response, ``~tool``): [method, tool]."""
    return [req.get("method"), req.get("tool")]


def _member_row(view: dict[str, Any], req: dict[str, Any] | None) -> list[Any]:
    """A batch member (``filters.members.member_views``) as a timeline row's
    filter fields (the batch's seq, time, direction, phase, session; the
    member's kind, exact method, id and tool, latency; no findings), its
    request context (``_context``), its text (what ``~t`` and ``~j`` read)
    and its index."""
    method, tool = method_of(view), tool_name(view)
    return [view.get("seq"), view.get("t_us"), view.get("type"), view.get("dir"), view.get("kind"), method,
            _js_id(record_id(view)) if "id" in view else None, "id" in view, view.get("pair"), view.get("latency_us"), view.get("phase"),
            view.get("session") if isinstance(view.get("session"), str) else None, None, tool, [], None,
            1 if "json" in view else 0, 0, None, None, None, _context(req) if req is not None else None,
            message_text(view), view.get("member")]


def _js_id(v: Any) -> Any:
    """An id for the page's filter (``~id`` compares ids as text): integers a
    JavaScript number cannot hold exactly (beyond ±(2^53−1)) go as their
    decimal text, so the browser matches the id the peer sent, as show does."""
    if type(v) is int and not -(2**53 - 1) <= v <= 2**53 - 1:
        return str(v)
    return v


def _label(v: Any) -> Any:
    """A method or tool name as the page shows it (``escape.shown``); other values as they are."""
    return shown(v) if isinstance(v, str) else v


def _shown_deep(v: Any) -> Any:
    """``v`` (JSON-ready) with every string, keys included, escaped as
    ``escape.escape_controls`` does: what the page shows as text (the header,
    the sessions' info and capabilities) holds no control, bidi or
    line-separator character of a peer's."""
    if isinstance(v, str):
        return escape_controls(v)
    if isinstance(v, dict):
        return {escape_controls(k) if isinstance(k, str) else k: _shown_deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_shown_deep(x) for x in v]
    return v


def _for_script(data: bytes) -> bytes:
    """JSON text (bytes) safe inside ``<script>``: nothing may read as
    "</script" or "<!--", so every "<" is escaped (still the same JSON), and
    U+2028/U+2029 too (line terminators to older JavaScript parsers)."""
    return data.replace(b"<", b"\\u003c").replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
