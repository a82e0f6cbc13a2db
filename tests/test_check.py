"""mcptap/check/: re-annotation from raw bytes, grouping by code with counts
and first places, capture damage as findings, exit status."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mcptap.check.reannotated import Reannotated
from mcptap.check.report import CheckReport, check_capture, run_check
from mcptap.check.text import format_text
from mcptap.errors import CaptureReadError
from scripted import c2s, handshake, note, record, req, res, s2c

H = handshake()


def unmatched_three_times(tmp_path: Path, **kw) -> Path:
    return record(tmp_path / "cap.jsonl", H + [c2s(req(2, "ping")), s2c(res(90)), s2c(res(91)), s2c(res(2)), s2c(res(92)),
                                               s2c(b"log line\n")], **kw)


def test_groups_by_code_with_counts_and_first_places(tmp_path: Path) -> None:
    path = unmatched_three_times(tmp_path)
    rep = check_capture(str(path), keep=2)
    g = rep.groups["jsonrpc.unmatched_response"]
    assert (g.count, g.severity) == (3, "error")
    assert [p.seq for p in g.places] == [5, 6]            # the first two of three
    assert [p.t_us for p in g.places] == [5000, 6000]
    lines = path.read_bytes().splitlines()
    for p in g.places:                                     # line numbers point at the record in the file
        assert orjson.loads(lines[p.line - 1])["seq"] == p.seq
    assert rep.groups["framing.non_jsonrpc_line"].count == 1
    assert rep.severities == {"error": 4, "warn": 0, "info": 0}
    assert rep.messages == 9 and rep.complete and not rep.truncated
    assert [g.code for g in rep.sorted_groups()] == ["jsonrpc.unmatched_response", "framing.non_jsonrpc_line"]


def test_response_places_name_the_request_method(tmp_path: Path) -> None:
    path = record(tmp_path / "c.jsonl", H + [c2s(req(2, "tools/list")), s2c(res("2", {"tools": []}))])
    place = check_capture(str(path)).groups["jsonrpc.id_type_mismatch"].places[0]
    assert (place.method, place.dir) == ("tools/list", "s2c")


@pytest.mark.parametrize("fail_on, status", [("error", 1), ("warn", 1), ("info", 1), ("never", 0)])
def test_fail_on_with_an_error_finding(tmp_path: Path, fail_on: str, status: int) -> None:
    assert run_check([str(unmatched_three_times(tmp_path))], fail_on).status() == status


@pytest.mark.parametrize("fail_on, status", [("error", 0), ("warn", 0), ("info", 1), ("never", 0)])
def test_fail_on_with_only_info(tmp_path: Path, fail_on: str, status: int) -> None:
    path = record(tmp_path / "c.jsonl", H + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])   # process.exit is info
    rep = run_check([str(path)], fail_on)
    assert rep.captures[0].severities == {"error": 0, "warn": 0, "info": 1}
    assert rep.status() == status


@pytest.mark.parametrize("fail_on, status", [("error", 0), ("warn", 1)])
def test_truncated_and_incomplete_captures_are_warnings(tmp_path: Path, fail_on: str, status: int) -> None:
    path = record(tmp_path / "c.jsonl", H + [c2s(req(2, "ping")), s2c(res(2))], end=False)
    data = path.read_bytes()
    path.write_bytes(data + b'{"type":"message","seq":7,"t_us":9')      # kill -9 mid-record
    rep = run_check([str(path)], fail_on)
    cap = rep.captures[0]
    assert not cap.complete and cap.truncated
    assert cap.groups["capture.truncated"].severity == "warn"
    assert cap.groups["capture.incomplete"].severity == "warn"
    assert cap.severities["error"] == 0
    assert rep.status() == status


def test_a_complete_capture_has_no_capture_findings(tmp_path: Path) -> None:
    rep = check_capture(str(record(tmp_path / "c.jsonl", H)))
    assert rep.complete and not rep.truncated
    assert not [c for c in rep.groups if c.startswith("capture.")]


def test_incomplete_capture_reports_requests_still_open(tmp_path: Path) -> None:
    rep = check_capture(str(record(tmp_path / "c.jsonl", H + [c2s(req(2, "tools/list"))], end=False)))
    assert rep.groups["jsonrpc.unanswered_request"].places[0].method == "tools/list"
    assert rep.groups["jsonrpc.unanswered_request"].places[0].seq is None      # found at the (synthesized) end


def test_gap_records_and_capture_errors_become_capture_gap(tmp_path: Path) -> None:
    path = record(tmp_path / "c.jsonl", H + [("gap", "disk full")])
    lines = path.read_bytes().splitlines()
    end = orjson.loads(lines[-1])
    end.update(capture_error="No space left on device", dropped_records=3)
    path.write_bytes(b"\n".join(lines[:-1] + [orjson.dumps(end)]) + b"\n")
    g = check_capture(str(path)).groups["capture.gap"]
    assert g.count == 2 and g.severity == "error"
    assert "disk full" in g.places[0].message and "3 records lost" in g.places[1].message


def test_check_uses_todays_rules_not_the_stored_annotations(tmp_path: Path) -> None:
    """Stale annotations in the file (an old mcptap, or a hand edit) are ignored:
    findings come from the raw bytes."""
    path = record(tmp_path / "c.jsonl", H + [c2s(req(2, "ping")), s2c(res("2"))])
    out = []
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec.get("type") == "message":
            rec["findings"] = [{"code": "framing.bom", "severity": "error", "message": "stale"}] if rec["seq"] == 4 else []
            if not rec["findings"]:
                del rec["findings"]
        out.append(orjson.dumps(rec))
    path.write_bytes(b"\n".join(out) + b"\n")
    # a hand edit under the current rules fingerprint: --full re-annotates from the bytes
    rep = check_capture(str(path), reuse=False)
    assert "framing.bom" not in rep.groups
    assert "jsonrpc.id_type_mismatch" in rep.groups
    # an older mcptap's capture (another rules fingerprint) is always re-annotated
    lines = path.read_bytes().splitlines()
    head = orjson.loads(lines[0])
    head["rules"] = "sha256:0000000000000000"
    path.write_bytes(b"\n".join([orjson.dumps(head)] + lines[1:]) + b"\n")
    rep = check_capture(str(path))
    assert "framing.bom" not in rep.groups
    assert "jsonrpc.id_type_mismatch" in rep.groups


def test_unreadable_capture_is_status_2_and_the_others_are_still_checked(tmp_path: Path) -> None:
    good = unmatched_three_times(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a capture\n")
    rep = run_check([str(bad), str(tmp_path / "missing.jsonl"), str(good)])
    assert "not an mcptap capture" in rep.captures[0].error
    assert "cannot open capture" in rep.captures[1].error
    assert rep.captures[2].error is None and rep.captures[2].severities["error"] == 4
    assert rep.status() == 2


def test_corrupt_record_in_the_middle_is_our_error(tmp_path: Path) -> None:
    path = unmatched_three_times(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{corrupt\n"
    path.write_bytes(b"".join(lines))
    rep = run_check([str(path)])
    assert "corrupt record" in rep.captures[0].error and rep.status() == 2


def test_reannotation_streams(tmp_path: Path) -> None:
    """Records come out while the source is still being read: a source that
    fails after 3 records has already produced re-annotated output."""
    path = unmatched_three_times(tmp_path)
    ra = Reannotated.open(str(path))
    source = iter(ra._records)

    def failing():
        for i, r in enumerate(source):
            if i == 3:
                raise CaptureReadError("boom")
            yield r

    ra._records = failing()
    got = []
    with pytest.raises(CaptureReadError):
        for rec in ra:
            got.append(rec["seq"])
    assert got == [1, 2, 3]


def test_text_report_names_codes_counts_places_and_verdict(tmp_path: Path) -> None:
    path = unmatched_three_times(tmp_path)
    text = "\n".join(format_text(run_check([str(path)], "error")))
    assert "jsonrpc.unmatched_response ×3  first #5 at 0.005s, #6 at 0.006s, #8 at 0.008s" in text
    assert "response id 90 matches no request" in text
    assert text.splitlines()[-1].startswith("1 capture(s): 4 error, 0 warn, 0 info: FAIL")
    roles = []
    list(format_text(run_check([str(path)], "never"), lambda t, r: roles.append(r) or t))
    assert "error" in roles and "ok" in roles                # PASS under --fail-on never


def test_text_report_splits_a_code_seen_at_several_severities() -> None:
    from mcptap.check.report import CaptureReport, CodeGroup
    cap = CaptureReport("c.jsonl", "stdio", None)
    cap.messages, cap.complete = 3, True
    cap.severities = {"error": 1, "warn": 0, "info": 1}
    cap.groups["framing.batch"] = CodeGroup("framing.batch", "error", 2, {"error": 1, "info": 1})
    cap.groups["jsonrpc.unmatched_response"] = CodeGroup("jsonrpc.unmatched_response", "error", 2, {"error": 2})
    text = "\n".join(format_text(CheckReport([cap], "error")))
    assert "framing.batch ×2 (1 error, 1 info)" in text
    assert "jsonrpc.unmatched_response ×2  first" in text


def test_json_report_shape(tmp_path: Path) -> None:
    rep = run_check([str(unmatched_three_times(tmp_path))], "warn")
    j = rep.to_json()
    assert (j["fail_on"], j["status"], j["findings"]) == ("warn", 1, {"error": 4, "warn": 0, "info": 0})
    codes = j["captures"][0]["codes"]
    assert codes[0]["code"] == "jsonrpc.unmatched_response" and codes[0]["count"] == 3
    assert codes[0]["meaning"] and codes[0]["source"]
    assert codes[0]["first"][0] == {"seq": 5, "t_us": 5000, "line": 6, "severity": "error",
                                    "message": "response id 90 matches no request the client sent", "dir": "s2c"}


def test_check_report_rejects_unknown_fail_on() -> None:
    with pytest.raises(ValueError):
        run_check([], "fatal")
    assert CheckReport([], "never").status() == 0


def test_notification_only_session(tmp_path: Path) -> None:
    rep = check_capture(str(record(tmp_path / "c.jsonl", H + [s2c(note("notifications/message", {"level": "info", "data": "x"}))])))
    assert rep.messages == 4 and rep.severities == {"error": 0, "warn": 0, "info": 0}
