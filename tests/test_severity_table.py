"""One severity table: every place in mcptap that gives a finding a severity
other than its code's default does so only where protocol/codes.py says it
may (``OTHER_SEVERITIES``), so docs/findings.md, generated from that table,
and the rules agree (the kind of drift where ``capability.not_in_revision``
was documented as warn and raised as error)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcptap.model import Severity
from mcptap.protocol.codes import CODES, finding, markdown

ROOT = Path(__file__).resolve().parents[1]
NAMES = {"INFO": Severity.INFO, "WARN": Severity.WARN, "ERROR": Severity.ERROR}


def _severities(node: ast.expr) -> set[Severity] | None:
    """Severities an expression can give (None: not statically known)."""
    if isinstance(node, ast.Constant) and node.value is None:
        return set()
    if isinstance(node, ast.Attribute) and node.attr in NAMES:
        return {NAMES[node.attr]}
    if isinstance(node, ast.Name) and node.id in NAMES:
        return {NAMES[node.id]}
    if isinstance(node, ast.IfExp):
        a, b = _severities(node.body), _severities(node.orelse)
        return None if a is None or b is None else a | b
    return None


def _sites():
    for path in sorted((ROOT / "mcptap").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            if name == "finding":
                sev = next((k.value for k in node.keywords if k.arg == "severity"), None)
                if sev is None and len(node.args) >= 4:
                    sev = node.args[3]
            elif name == "Finding" and len(node.args) >= 2:
                sev = node.args[1]
            else:
                continue
            if sev is not None:
                yield f"{path.relative_to(ROOT)}:{node.lineno}", first.value, sev


def test_every_severity_override_is_in_the_table() -> None:
    sites = list(_sites())
    assert len(sites) >= 8          # the scan finds the overrides at all
    bad = []
    for where, code, expr in sites:
        c = CODES.get(code)
        if c is None:
            bad.append(f"{where}: unknown code {code}")
            continue
        sevs = _severities(expr)
        if sevs is None:
            if not c.also:
                bad.append(f"{where}: {code} gets a computed severity but the table gives it no other severity")
            continue
        bad += [f"{where}: {code} raised as {s.value}, table allows {c.severity.value} {[x.value for x, _ in c.also]}"
                for s in sevs if not c.allows(s)]
    assert not bad, "\n".join(bad)


def test_finding_refuses_a_severity_the_table_does_not_give() -> None:
    with pytest.raises(ValueError):
        finding("jsonrpc.invalid_id", "x", severity=Severity.INFO)
    with pytest.raises(KeyError):
        finding("no.such_code", "x", severity=Severity.INFO)
    assert finding("capability.not_in_revision", "x", severity=Severity.ERROR).severity is Severity.ERROR


def test_docs_show_the_other_severities() -> None:
    doc = markdown()
    assert "| `capability.not_in_revision` | warn; also **error**:" in doc
    assert (ROOT / "docs" / "findings.md").read_text() == doc
