"""The report at the end of a fast check scan (level 3, pure).

:func:`scan_report` turns the state of a :class:`~mcptap.check.scan.Scan`
that has read every line (``scan``) into the :class:`CaptureReport` that
``report.check_capture`` gives for the same capture: its groups and severity
counts, the integrity findings (``tallies``: per stream ``c2s``/``s2c``/
``stderr`` the SHA-256 of every byte the scan handed out), the end record's
findings, or, for a capture cut short, its requests without an answer.
Raises :class:`~mcptap.check.scan_records.Unsupported` for a finding that is
not an object (the caller then takes the reference way).
"""

from __future__ import annotations

from typing import Any

from mcptap.capture.integrity import Integrity, StreamTally
from mcptap.check.reannotated import capture_findings, spill_name
from mcptap.check.report import CaptureReport, add_finding
from mcptap.check.scan_records import Unsupported
from mcptap.model import Severity
from mcptap.protocol.codes import finding
from mcptap.protocol.jsonrpc import show_id
from mcptap.records.end import says_ended


def scan_report(scan: Any, path: str, header: dict[str, Any], tallies: dict[str, StreamTally]) -> CaptureReport:
    """The capture's report (as ``report.check_capture`` gives it).
    ``tallies``: the streams' SHA-256 of every byte ``on_bytes`` received."""
    rep = CaptureReport(path, header.get("transport"), header.get("started"))
    rep.groups, rep.severities = scan.groups, scan.sev
    rep.messages = scan.messages
    rep.records = scan.n - scan.n_end + 1
    for name, (nbytes, nmsg) in scan.counts.items():
        tallies[name].bytes, tallies[name].messages = nbytes, nmsg
    integrity = Integrity.restore(scan.transport, tallies, scan.end, scan.gaps, [f for _, f in scan.order])
    end = scan.end
    if end is None:
        fs = [finding("jsonrpc.unanswered_request", f"request #{seq} {r.get('method')} id={show_id(r.get('id'))} has no answer in the capture, "
                      "which was cut short", _opened(r), severity=Severity.INFO).to_json() for seq, r in scan.reqs.items()]
        t = scan.last_t
        end_fs: list[Any] = fs
        line = None
        end_rec: dict[str, Any] = {"t_us": t}
    else:
        end_rec = end
        u, un = end.get("findings"), end.get("unanswered")
        end_fs = u if isinstance(u, list) else un if isinstance(un, list) else []
        t = end.get("t_us")
        line = scan.n + scan.cut + 1
    capture = capture_findings(scan.truncated, says_ended(end), end_rec if end is not None else {}, integrity, spill_name(header))
    rep.complete = not any(f["code"] == "capture.incomplete" for f in capture)
    rep.truncated = any(f["code"] == "capture.truncated" for f in capture)
    if isinstance(t, int) and t > scan.duration:
        scan.duration = t
    rep.duration_us = scan.duration
    for f in list(end_fs) + capture:
        if type(f) is not dict:
            raise Unsupported("a finding that is not an object")
        where = end_rec.get("method")
        if isinstance(f.get("data"), dict):
            where = f["data"].get("method", where)
        add_finding(scan.groups, scan.sev, scan.keep, f, None, t if isinstance(t, int) else None, line, end_rec.get("dir"), where)
    return rep


def _opened(r: dict[str, Any]) -> dict[str, Any]:
    return {"seq": r["seq"], "dir": r["dir"], "id": r.get("id"), "method": r.get("method"), **({"session": r["session"]} if "session" in r else {})}
