"""Machine-readable ``mcptap check`` reports: SARIF 2.1.0 and JUnit XML (level 3).

SARIF (OASIS Static Analysis Results Interchange Format 2.1.0, schema
``sarif-schema-2.1.0.json``): one run of the tool ``mcptap``; one rule per
finding code that occurred (id = the code, description and spec source from
mcptap/protocol/codes.py); one result per kept place (``--places``), located
in the capture file by line (``region.startLine``) and logically by the
record (``#seq``, method). Severities map error→error, warn→warning,
info→note. An unreadable capture becomes a tool execution notification and
``executionSuccessful: false``.

JUnit XML (the de-facto Ant/Surefire schema CI systems read): one
``testsuite`` per capture; one ``testcase`` per finding code, failed when its
severity is at or above ``--fail-on``; a ``capture readable`` testcase that
errors when the capture cannot be read.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any

import orjson

from mcptap import __version__
from mcptap.check import SEVERITY_RANK as _RANK, CaptureReport, CheckReport, CodeGroup

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"error": "error", "warn": "warning", "info": "note"}


def _uri(path: str) -> str:
    """A relative URI for paths under the working directory (portable in CI
    artifacts), else an absolute file URI."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    if not rel.startswith(".."):
        return rel.replace(os.sep, "/")
    return "file://" + os.path.abspath(path).replace(os.sep, "/")


def _rule(g: CodeGroup) -> dict[str, Any]:
    family = g.code.split(".", 1)[0]
    return {
        "id": g.code,
        "name": g.code,
        "shortDescription": {"text": g.meaning or g.code},
        "fullDescription": {"text": f"{g.meaning} (spec: {g.source})" if g.source else g.meaning or g.code},
        "defaultConfiguration": {"level": LEVEL[_default_severity(g)]},
        "properties": {"tags": ["mcp", family], "source": g.source},
    }


def _default_severity(g: CodeGroup) -> str:
    from mcptap.protocol.codes import CODES

    c = CODES.get(g.code)
    return c.severity.value if c else g.severity


def sarif(report: CheckReport) -> dict[str, Any]:
    """The SARIF 2.1.0 log (a dict) for ``report``."""
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    artifacts: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for ai, cap in enumerate(report.captures):
        uri = _uri(cap.path)
        artifacts.append({"location": {"uri": uri}, "mimeType": "application/jsonl",
                          "properties": {"transport": cap.transport, "messages": cap.messages, "complete": cap.complete}})
        if cap.error is not None:
            notes.append({"level": "error", "message": {"text": cap.error},
                          "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri, "index": ai}}}]})
            continue
        for g in cap.sorted_groups():
            if g.code not in index:
                index[g.code] = len(rules)
                rules.append(_rule(g))
            for n, p in enumerate(g.places):
                phys: dict[str, Any] = {"artifactLocation": {"uri": uri, "index": ai}}
                if p.line is not None and p.line >= 1:
                    phys["region"] = {"startLine": p.line}
                loc: dict[str, Any] = {"physicalLocation": phys}
                if p.seq is not None:
                    loc["logicalLocations"] = [{"name": f"#{p.seq}", "fullyQualifiedName": f"{p.method or 'record'}#{p.seq}", "kind": "object"}]
                props: dict[str, Any] = {"seq": p.seq, "t_us": p.t_us}
                if p.dir:
                    props["direction"] = p.dir
                if p.method:
                    props["method"] = p.method
                if n == 0:
                    props["occurrences"] = g.count
                results.append({"ruleId": g.code, "ruleIndex": index[g.code], "level": LEVEL.get(p.severity, "note"),
                                "message": {"text": p.message or g.meaning}, "locations": [loc], "properties": props})
    status = report.status()
    invocation: dict[str, Any] = {"executionSuccessful": status != 2, "exitCode": status,
                                  "properties": {"failOn": report.fail_on, "findings": report.totals()}}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mcptap", "version": __version__, "semanticVersion": __version__,
                                "informationUri": "https://modelcontextprotocol.io/specification",
                                "rules": rules}},
            "invocations": [invocation],
            "artifacts": artifacts,
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    }


def sarif_json(report: CheckReport) -> str:
    """``sarif(report)`` serialised (indented JSON text)."""
    return orjson.dumps(sarif(report), option=orjson.OPT_INDENT_2).decode()


# -- JUnit XML ---------------------------------------------------------------------------

def _suite(cap: CaptureReport, report: CheckReport) -> ET.Element:
    suite = ET.Element("testsuite", name=cap.path)
    props = ET.SubElement(suite, "properties")
    for k, v in (("transport", cap.transport), ("started", cap.started), ("fail_on", report.fail_on),
                 ("messages", cap.messages), ("complete", cap.complete)):
        if v is not None:
            ET.SubElement(props, "property", name=k, value=str(v).lower() if isinstance(v, bool) else str(v))
    classname = "mcptap." + os.path.basename(cap.path).rsplit(".", 1)[0].replace(".", "_")
    tests = failures = errors = 0
    readable = ET.SubElement(suite, "testcase", classname=classname, name="capture readable", time="0")
    tests += 1
    if cap.error is not None:
        err = ET.SubElement(readable, "error", type="CaptureReadError", message=cap.error)
        err.text = cap.error
        errors += 1
    threshold = None if report.fail_on == "never" else _RANK[report.fail_on]
    for g in cap.sorted_groups():
        tc = ET.SubElement(suite, "testcase", classname=f"{classname}.{g.code.split('.', 1)[0]}", name=g.code, time="0")
        tests += 1
        detail = "\n".join(f"#{p.seq} at {p.t_us / 1e6 if p.t_us is not None else 0:.3f}s (line {p.line}): {p.severity}: {p.message}" for p in g.places)
        if g.count > len(g.places):
            detail += f"\n… {g.count - len(g.places)} more"
        if threshold is not None and _RANK[g.severity] >= threshold:
            fail = ET.SubElement(tc, "failure", type=g.severity, message=f"{g.count} × {g.code} ({g.severity}): {g.meaning}")
            fail.text = detail
            failures += 1
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = f"{g.count} × {g.code} ({g.severity}, below --fail-on {report.fail_on}): {g.meaning}\n{detail}"
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
    for cap in report.captures:
        s = _suite(cap, report)
        root.append(s)
        tests += int(s.get("tests", "0"))
        failures += int(s.get("failures", "0"))
        errors += int(s.get("errors", "0"))
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
