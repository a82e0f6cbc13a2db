"""The JUnit XML ``mcptap check`` report (level 3).

JUnit XML (the de-facto Ant/Surefire schema CI systems read): one
``testsuite`` per capture; one ``testcase`` per finding code, failed when its
severity is at or above ``--fail-on``; a ``capture readable`` testcase that
errors when the capture cannot be read.

CI systems render these names and messages: every text that came from a
capture (finding messages, codes, methods, paths, header fields) goes through
``escape.escape_xml``, so no terminal control, bidi override or character
XML 1.0 forbids reaches the document.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from mcptap.check.report import CaptureReport, CheckReport
from mcptap.escape import escape_xml as _x
from mcptap.model import SEVERITY_RANK as _RANK

_SUFFIXES = (".jsonl.gz", ".jsonl", ".gz")


def classnames(paths: list[str]) -> list[str]:
    """One JUnit ``classname`` per capture path, in order, all distinct:
    ``mcptap.`` + the path as given, normalised (``./a/x.jsonl`` and
    ``a/x.jsonl`` alike), without its ``.jsonl``/``.jsonl.gz`` suffix, with
    ``/`` between directories and ``_`` for the dots within a name (a dot
    separates packages in JUnit viewers). A name taken already (the same path
    twice, or ``a/x.jsonl`` and ``a/x.jsonl.gz``) gets ``~2``, ``~3``… in
    argument order, so the names are stable for the same command line."""
    out: list[str] = []
    taken: set[str] = set()
    for path in paths:
        norm = os.path.normpath(path).replace(os.sep, "/").lstrip("/")
        for ext in _SUFFIXES:
            if norm.endswith(ext) and len(norm) > len(ext):
                norm = norm[: -len(ext)]
                break
        base = "mcptap." + _x(norm.replace(".", "_"), os_text=True)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}~{n}"
        taken.add(name)
        out.append(name)
    return out


def _suite(cap: CaptureReport, report: CheckReport, classname: str) -> ET.Element:
    suite = ET.Element("testsuite", name=_x(cap.path, os_text=True))
    props = ET.SubElement(suite, "properties")
    for k, v in (("transport", cap.transport), ("started", cap.started), ("fail_on", report.fail_on),
                 ("messages", cap.messages), ("complete", cap.complete)):
        if v is not None:
            ET.SubElement(props, "property", name=k, value=str(v).lower() if isinstance(v, bool) else _x(str(v)))
    tests = failures = errors = 0
    readable = ET.SubElement(suite, "testcase", classname=classname, name="capture readable", time="0")
    tests += 1
    if cap.error is not None:
        err = ET.SubElement(readable, "error", type="CaptureReadError", message=_x(cap.error, os_text=True))
        err.text = _x(cap.error, os_text=True)
        errors += 1
    threshold = None if report.fail_on == "never" else _RANK[report.fail_on]
    for g in cap.sorted_groups():
        code, meaning = _x(g.code), _x(g.meaning or "")
        tc = ET.SubElement(suite, "testcase", classname=f"{classname}.{code.split('.', 1)[0]}", name=code, time="0")
        tests += 1
        detail = "\n".join(f"{p.where()}{'' if p.line is None else f' (line {p.line})'}: "
                            f"{_x(str(p.severity))}: {_x(p.message or '')}" for p in g.places)
        if g.count > len(g.places):
            detail += f"\n… {g.count - len(g.places)} more"
        if threshold is not None and _RANK[g.severity] >= threshold:
            fail = ET.SubElement(tc, "failure", type=_x(g.severity), message=f"{g.count} × {code} ({_x(g.severity)}): {meaning}")
            fail.text = detail
            failures += 1
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = f"{g.count} × {code} ({_x(g.severity)}, below --fail-on {report.fail_on}): {meaning}\n{detail}"
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    suite.set("time", f"{cap.duration_us / 1e6:.6f}")
    return suite


def junit_xml(report: CheckReport) -> str:
    """The JUnit XML document (text, with XML declaration) for ``report``."""
    root = ET.Element("testsuites", name="mcptap check")
    tests = failures = errors = 0
    for cap, classname in zip(report.captures, classnames([c.path for c in report.captures]), strict=True):
        s = _suite(cap, report, classname)
        root.append(s)
        tests += int(s.get("tests", "0"))
        failures += int(s.get("failures", "0"))
        errors += int(s.get("errors", "0"))
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
