"""The SARIF 2.1.0 ``mcptap check`` report (level 3; JUnit XML is :mod:`mcptap.check.junit`).

SARIF (OASIS Static Analysis Results Interchange Format 2.1.0, schema
``sarif-schema-2.1.0.json``): one run of the tool ``mcptap``; one rule per
finding code that occurred (id = the code, description and spec source from
mcptap/protocol/codes.py); one result per kept place (``--places``), located
in the capture file by line (``region.startLine``) and logically by the
record (``#seq``, method). Severities map error→error, warn→warning,
info→note. An unreadable capture becomes a tool execution notification and
``executionSuccessful: false``.

Texts a CI UI renders (messages, rule descriptions, logical location names)
pass through ``escape.escape_controls``: a peer's terminal controls or bidi
overrides (U+202E) never reach a code-scanning page raw. ``properties`` keep
the values exactly (data for machines).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from mcptap import __version__
from mcptap.capture.dumps import dumps
from mcptap.check.report import CheckReport, CodeGroup
from mcptap.escape import escape_controls as _esc
from mcptap.escape import escape_os

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"error": "error", "warn": "warning", "info": "note"}


def _uri(path: str) -> str:
    """A relative URI for paths under the working directory (portable in CI
    artifacts), else an absolute file URI."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    # percent-encoded (RFC 3986): a file name with spaces, controls or bidi
    # overrides stays one valid, inert URI reference
    # os.fsencode: a file name's bytes that are not UTF-8 are percent-encoded as they are
    if not rel.startswith(".."):
        return quote(os.fsencode(rel.replace(os.sep, "/")), safe="/")
    return "file://" + quote(os.fsencode(os.path.abspath(path).replace(os.sep, "/")), safe="/")


def _rule(g: CodeGroup) -> dict[str, Any]:
    family = g.code.split(".", 1)[0]
    return {
        "id": g.code,
        "name": g.code,
        "shortDescription": {"text": _esc(g.meaning or g.code)},
        "fullDescription": {"text": _esc(f"{g.meaning or g.code} (spec: {g.source})" if g.source else g.meaning or g.code)},
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
    seen: dict[str, int] = {}
    for cap in report.captures:
        uri = _uri(cap.path)
        # one artifact per file (the same capture named twice, as ./x and x): SARIF
        # viewers key results by artifact, a second entry would split them
        ai = seen.setdefault(uri, len(artifacts))
        if ai == len(artifacts):
            artifacts.append({"location": {"uri": uri}, "mimeType": "application/jsonl",
                              "properties": {"transport": cap.transport, "messages": cap.messages, "complete": cap.complete}})
        if cap.error is not None:
            notes.append({"level": "error", "message": {"text": escape_os(cap.error)},
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
                    loc["logicalLocations"] = [{"name": f"#{p.seq}", "fullyQualifiedName": _esc(f"{p.method or 'record'}#{p.seq}"), "kind": "object"}]
                # a finding about the capture as a whole has no record: no seq (nor null)
                props: dict[str, Any] = {k: v for k, v in (("seq", p.seq), ("t_us", p.t_us)) if v is not None}
                if p.dir:
                    props["direction"] = p.dir
                if p.method:
                    props["method"] = p.method
                if n == 0:
                    props["occurrences"] = g.count
                results.append({"ruleId": g.code, "ruleIndex": index[g.code], "level": LEVEL.get(p.severity, "note"),
                                "message": {"text": _esc(p.message or g.meaning or "")}, "locations": [loc], "properties": props})
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
    return dumps(sarif(report), indent=True).decode()
