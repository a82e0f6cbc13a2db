"""``mcptap report``: one self-contained HTML file for a capture (level 3, pure:
records in, a string out).

The file needs nothing but a browser: no network access (a Content-Security-
Policy forbids it), no external script, style or font. It holds the
re-annotated records as JSON (``<script type="application/json">``, ``<``
escaped so no payload can close the tag) and the viewer (``assets/report.js``,
``assets/report.css``) inline:

* session header: transport, target, start, protocol revision, client and
  server info and capabilities (from ``initialize`` or ``server/discover``),
  whether the capture was scrubbed;
* timeline: one line per record as ``mcptap show`` prints it (pairing and
  latency included), rendered lazily (only the rows on screen exist in the
  DOM), so 100,000 messages stay usable; a row opens its payload, pretty-printed;
* filter box: the ``show --filter`` language, evaluated in the browser by a
  port of ``mcptap/filters`` driven by the same operator table
  (``filters.operators.operator_table()``, embedded); a test runs the same
  expressions through both and compares the matches;
* sequence diagram (SVG) of the messages from the top of the timeline view;
* findings grouped by severity, each code with its meaning and spec source
  from ``protocol/codes.py``, counts and first places (links to the rows).

``report_html(header, records, path, title)``: ``records`` are re-annotated
records (``check.reannotated.Reannotated``; the end record last).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.fields import message_text, record_findings, tool_of
from mcptap.escape import shown
from mcptap.filters.operators import operator_table
from mcptap.protocol.codes import CODES
from mcptap.show.render import COLUMNS, timeline_line
from mcptap.show.summary import Tracker

#: First places kept per finding code.
PLACES = 50
_SEV_ORDER = ("error", "warn", "info")


def _asset(name: str) -> str:
    return resources.files("mcptap.show").joinpath("assets", name).read_text("utf-8")


def _session_info(rec: dict[str, Any], sessions: dict[Any, dict[str, Any]], requests: dict[int, str]) -> None:
    """Collect what the header shows from initialize / server/discover."""
    if rec.get("type") != "message" or not isinstance(rec.get("json"), dict):
        return
    v = rec["json"]
    key = rec.get("session")
    if rec.get("kind") == "request" and rec.get("method") in ("initialize", "server/discover"):
        requests[rec["seq"]] = rec["method"]
        params = v.get("params") if isinstance(v.get("params"), dict) else {}
        if rec["method"] == "initialize" and len(sessions) < 20:
            s = sessions.setdefault(key, {"session": key})
            s["client"] = {k: params.get(k) for k in ("protocolVersion", "clientInfo", "capabilities") if k in params}
    elif rec.get("kind") == "response" and rec.get("pair") in requests and isinstance(v.get("result"), dict):
        res = v["result"]
        if len(sessions) < 20 or key in sessions:
            s = sessions.setdefault(key, {"session": key})
            s["server"] = {k: res.get(k) for k in ("protocolVersion", "serverInfo", "capabilities", "instructions", "supportedVersions")
                           if k in res}
            s["via"] = requests[rec["pair"]]
            s["revision"] = res.get("protocolVersion") or rec.get("rev")


def report_data(header: dict[str, Any], records: Iterable[dict[str, Any]], path: str | None = None) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready dict (see module doc)."""
    tracker = Tracker()
    rows: list[list[Any]] = []
    payloads: list[str] = []
    extra: dict[int, str] = {}          # row -> the whole record, for rows that are not messages
    sessions: dict[Any, dict[str, Any]] = {}
    init_requests: dict[int, str] = {}
    groups: dict[str, dict[str, Any]] = {}
    end: dict[str, Any] | None = None
    revisions: set[str] = set()

    def note(fs: Iterable[dict[str, Any]], seq: Any, t: Any) -> None:
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
                g["places"].append([seq, t, shown(str(f.get("message", "")))])     # a 50 KB method name quoted whole: cut

    for rec in records:
        req = tracker.feed(rec)
        typ = rec.get("type")
        if typ == "end":
            end = rec
            note((rec.get("unanswered") or []) + (rec.get("capture") or []), rec.get("seq"), rec.get("t_us"))
            continue
        _session_info(rec, sessions, init_requests)
        if isinstance(rec.get("rev"), str):
            revisions.add(rec["rev"])
        fs = record_findings(rec)
        note(fs, rec.get("seq"), rec.get("t_us"))
        q = req["seq"] if req is not None and rec.get("kind") != "request" else None
        # one row: the fields the filter language reads, plus the show line
        rows.append([
            rec.get("seq"), rec.get("t_us"), typ, rec.get("dir"), rec.get("kind"), rec.get("method"),
            _js_id(rec.get("id")) if "id" in rec else None, "id" in rec, rec.get("pair"), rec.get("latency_us"), rec.get("phase"),
            rec.get("session") if isinstance(rec.get("session"), str) else None, q, tool_of(rec),
            [[f.get("code"), f.get("severity")] for f in fs], timeline_line(rec, req),
            1 if typ == "message" and ("json" in rec or "raw" in rec) else 0,
        ])
        payloads.append(message_text(rec))     # what ~t searches, as in show
        if typ not in ("message", "stderr"):
            extra[len(rows) - 1] = dumps(rec, indent=True).decode()
    findings = {sev: sorted((g for g in groups.values() if g["severity"] == sev), key=lambda g: (-g["count"], g["code"]))
                for sev in _SEV_ORDER}
    target = header.get("target") or {}
    meta = {
        "path": path, "transport": header.get("transport"), "started": header.get("started"), "mcptap": header.get("mcptap"),
        "target": target, "scrubbed": header.get("scrubbed"), "name": header.get("name"),
        "columns": COLUMNS, "revisions": sorted(revisions), "sessions": list(sessions.values()),
        "end": {k: end.get(k) for k in ("c2s", "s2c", "stderr", "exit_code", "pending", "incomplete", "severities")} if end else None,
    }
    return {"meta": meta, "rows": rows, "payloads": payloads, "extra": {str(k): v for k, v in extra.items()}, "findings": findings,
            "ops": operator_table()}


def _js_id(v: Any) -> Any:
    """An id for the page's filter (``~id`` compares ids as text): integers a
    JavaScript number cannot hold exactly (beyond ±(2^53−1)) go as their
    decimal text, so the browser matches the id the peer sent, as show does."""
    if type(v) is int and not -(2**53 - 1) <= v <= 2**53 - 1:
        return str(v)
    return v


def _json_for_script(value: Any) -> str:
    # inside <script> nothing may read as "</script" or "<!--": escape every "<" (valid JSON)
    return dumps(value).decode().replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def report_html(header: dict[str, Any], records: Iterable[dict[str, Any]], path: str | None = None, title: str | None = None) -> str:
    """The whole HTML document (str)."""
    data = report_data(header, records, path)
    name = title or path or "capture"
    esc_title = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        # no network, ever: only inline script/style and data: images
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>mcptap report: {esc_title}</title>\n<style>\n", _asset("report.css"), "</style></head>\n<body>\n",
        _asset("report.html"),
        "<script type=\"application/json\" id=\"mcptap-data\">", _json_for_script(data), "</script>\n",
        "<script>\n", _asset("report.js"), "</script>\n</body></html>\n",
    ])
