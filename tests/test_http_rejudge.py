"""`check --full` re-judges an HTTP capture's HTTP layer from its recorded
`http` records (protocol/http_replay.py) instead of copying the recorded
findings: every handed HTTP case, recorded live through the real tap, gives
the same findings again when re-annotated from scratch; old captures get
today's rules (the ../shared/repro/false-finding-*.jsonl captures, copied to
tests/data/, lose the false findings they were filed for)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from casefiles import CASES, Wire, wires
from http_harness import run_wire
from mcptap.capture.reader import CaptureStream
from mcptap.check.report import check_capture
from mcptap.reannotate import reannotate

HTTP = wires("http")
DATA = Path(__file__).parent / "data"


def _key(r):
    return (r.get("seq"), r["type"], r.get("event"), sorted((f["code"], f["severity"]) for f in r.get("findings", ())))


@pytest.mark.skipif(not HTTP, reason=f"handed cases not found at {CASES}")
@pytest.mark.parametrize("w", HTTP, ids=lambda w: f"{w.case}-{w.name}")
async def test_full_rejudge_reproduces_the_live_http_findings(w: Wire, tmp_path) -> None:
    if w.context and any(k.startswith("pending") for k in w.context):
        pytest.skip("the harness registers the context's pending requests, which a capture's context record does not carry")
    path = str(tmp_path / "cap.jsonl")
    res = await run_wire(w, path, rewrite_endpoint=False)
    stream = CaptureStream(path)
    again = list(reannotate(stream.header, stream, shapes=False, reuse=False))
    live = [_key(r) for r in res.records if r["type"] != "end"]
    assert [_key(r) for r in again if r["type"] != "end"] == live
    assert again[-1]["severities"] == res.end["severities"]


def test_old_findings_on_http_records_are_replaced_not_copied(tmp_path) -> None:
    """A recorded finding today's rules do not raise disappears; one they raise appears."""
    recs = [json.loads(line) for line in (DATA / "false-finding-http401-empty.jsonl").read_text().splitlines()]
    recs[3]["findings"] = [{"code": "http.upstream_failed", "severity": "error", "message": "stale"}]   # the response record
    recs[1]["headers"] = [["accept", "application/json"], ["content-type", "application/json"]]        # POST Accept incomplete
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rep = check_capture(str(path), reuse=False)
    assert "http.upstream_failed" not in rep.groups
    assert "http.post_accept_incomplete" in rep.groups


@pytest.mark.parametrize("name", ["false-finding-http400-probe.jsonl", "false-finding-http401-empty.jsonl",
                                  "false-finding-http401-oauth-body.jsonl"])
def test_http_rejections_are_not_jsonrpc_findings(name: str) -> None:
    """../shared/repro/false-finding-*.jsonl (kept as tests/data fixtures): a
    2026-07-28 probe refused with 400 and an id-less JSON-RPC error, a 401
    with no body, a 401 with an OAuth error body — none is a JSON-RPC fault."""
    rep = check_capture(str(DATA / name), reuse=False)
    assert rep.error is None
    bad = {c for c, g in rep.groups.items() if g.severity in ("error", "warn")}
    assert not bad, bad
    for code in ("jsonrpc.unanswered_request", "jsonrpc.error_id_null", "jsonrpc.invalid_version", "jsonrpc.invalid_error_object"):
        assert code not in rep.groups, (name, code)
    if "401" in name:
        assert "http.request_refused" in rep.groups


def test_an_error_body_finding_is_derived_again_not_copied_beside_it(tmp_path) -> None:
    """http.error_body is the annotator's (from the body and its status), not
    the transport's: kept as recorded and derived again, `check --full` gave
    it twice for one 401 body (found by a breaker helper)."""
    recs = [json.loads(line) for line in (DATA / "false-finding-http401-oauth-body.jsonl").read_text().splitlines()]
    for r in recs:
        if r["type"] == "message" and r["dir"] == "s2c":
            r["findings"] = [{"code": "http.error_body", "severity": "info", "message": "as the live tap records it"}]
    path = tmp_path / "live.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert check_capture(str(path), reuse=False).groups["http.error_body"].count == 1


def _edited(tmp_path, name: str, status: int, error: str) -> Path:
    recs = [json.loads(line) for line in (DATA / name).read_text().splitlines()]
    for r in recs:
        if r.get("event") == "response":
            r["status"] = status
            r["headers"] = [h for h in r["headers"] if h[0] != "www-authenticate"]
        if r["type"] == "message" and r["dir"] == "s2c":
            r["json"] = {"error": error}
            r.get("transport", {})["status"] = status
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_near_miss_a_400_body_that_tries_to_answer_is_judged(tmp_path) -> None:
    """cases/B27: 400 with {"error": "<text>"} is a broken JSON-RPC answer,
    not an HTTP error body: its request stays unanswered."""
    rep = check_capture(str(_edited(tmp_path, "false-finding-http401-oauth-body.jsonl", 400, "initialize: no handler")), reuse=False)
    assert "http.error_body" not in rep.groups and "http.request_refused" not in rep.groups
    assert "jsonrpc.unanswered_request" in rep.groups and "jsonrpc.invalid_version" in rep.groups
    # the same body shape with a registered OAuth error code is an HTTP error body
    rep = check_capture(str(_edited(tmp_path, "false-finding-http401-oauth-body.jsonl", 400, "invalid_request")), reuse=False)
    assert "http.error_body" in rep.groups and "jsonrpc.unanswered_request" not in rep.groups


@pytest.mark.parametrize("case", ["B14", "B15"])
async def test_sse_findings_are_derived_again_from_what_the_capture_holds(case: str, tmp_path) -> None:
    """`check --full` used to copy the `sse.*` findings of SSE events: a
    capture whose recorded ones are stale (edited here: removed, a false one
    added) gets exactly the live tap's back. Data events: from the event bytes
    the capture holds (`transport.sse.raw`, or the canonical event) and their
    chunk count. `sse` records (priming events, comments): priming, retry,
    comments and chunks from the record; CR LF and unterminated, which need
    bytes the capture does not hold, stay as recorded."""
    ws = [w for w in HTTP if w.case == case]
    if not ws:
        pytest.skip(f"handed case {case} not found at {CASES}")
    path = tmp_path / "cap.jsonl"
    res = await run_wire(ws[0], str(path), rewrite_endpoint=False)

    def sse_codes(records):
        return [(r["seq"], sorted(f["code"] for f in r.get("findings", ()) if f["code"].startswith("sse.")))
                for r in records if (r["type"] == "message" and r["dir"] == "s2c") or (r["type"] == "http" and r.get("event") == "sse")]

    live = sse_codes(res.records)
    want = {"B14": {"sse.priming_event", "sse.retry"},
            "B15": {"sse.crlf", "sse.multiline_data", "sse.event_split_across_chunks", "sse.data_not_jsonrpc", "sse.comment"}}[case]
    assert {c for _, cs in live for c in cs} >= want
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    for r in recs:
        if r["type"] == "message" and r["dir"] == "s2c":
            r["findings"] = [f for f in r.get("findings", ()) if not f["code"].startswith("sse.")]
        elif r["type"] == "http" and r.get("event") == "sse" and "endpoint" not in r:
            r["findings"] = [f for f in r.get("findings", ()) if not f["code"].startswith("sse.") or f["code"] in ("sse.crlf", "sse.unterminated_event_at_eof")]
        else:
            continue
        r["findings"].append({"code": "sse.compressed_stream", "severity": "warn", "message": "stale"})
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in recs))
    stream = CaptureStream(str(edited))
    again = list(reannotate(stream.header, stream, shapes=False, reuse=False))
    assert sse_codes(again) == live


def _long_stream_capture(path: Path, posts: int) -> None:
    """A stateless GET SSE stream left open while ``posts`` POST exchanges
    come and go, then broken by the upstream."""
    recs: list[dict] = [{"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "0.1.0", "started": "2026-12-02T00:00:00.000000Z",
                         "transport": "http", "target": {"url": "http://127.0.0.1:1/mcp"}, "rules": "sha256:0"}]

    def add(r: dict) -> None:
        r["seq"] = r["t_us"] = len(recs)
        recs.append(r)

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    add({"type": "http", "event": "request", "exchange": 1, "conn": 1, "method": "GET", "target": "/mcp", "version": "1.1",
         "headers": [["Host", "x"], ["Accept", "text/event-stream"]]})
    add({"type": "http", "event": "response", "exchange": 1, "conn": 1, "status": 200, "reason": "OK", "headers": [["Content-Type", "text/event-stream"]]})
    for ex in range(2, 2 + posts):
        add({"type": "http", "event": "request", "exchange": ex, "conn": ex, "method": "POST", "target": "/mcp", "version": "1.1",
             "headers": [["Host", "x"], ["Accept", "application/json, text/event-stream"], ["Content-Type", "application/json"]]})
        add({"type": "message", "dir": "c2s", "kind": "request", "id": 1, "method": "tools/list", "offset": 0, "eol": "",
             "json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
             "transport": {"exchange": ex, "conn": ex, "method": "POST", "path": "/mcp", "stream": "post"}})
        add({"type": "http", "event": "response", "exchange": ex, "conn": ex, "status": 200, "reason": "OK", "headers": [["Content-Type", "application/json"]]})
        add({"type": "message", "dir": "s2c", "kind": "response", "id": 1, "offset": 0, "eol": "", "transport": {"exchange": ex, "conn": ex, "status": 200},
             "json": {"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "resultType": "complete"}}})
        add({"type": "http", "event": "end", "exchange": ex, "conn": ex, "how": "complete", "request_bytes": 10, "response_bytes": 10})
    add({"type": "http", "event": "end", "exchange": 1, "conn": 1, "how": "upstream_closed", "detail": "reset", "response_bytes": 0})
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_a_long_lived_stream_is_judged_at_its_end_however_many_exchanges_came_meanwhile(tmp_path) -> None:
    """`check --full` keeps an exchange until its end record, as the live
    observer does: a stateless server's SSE stream broken after more than
    4,096 POSTs still gets its end judged (it was forgotten before)."""
    few, many = tmp_path / "few.jsonl", tmp_path / "many.jsonl"
    _long_stream_capture(few, 3)
    _long_stream_capture(many, 4100)
    a, b = check_capture(str(few), reuse=False), check_capture(str(many), reuse=False)
    assert "sse.connection_closed_mid_stream" in a.groups
    assert sorted(b.groups) == sorted(a.groups)


def test_an_error_body_finding_quotes_the_peers_error_string_scrubbed(tmp_path) -> None:
    """The ``error`` string of an HTTP error body is the peer's: quoted as other
    findings quote peer values (http_fields.shown), a token in it as its
    placeholder (found before the quote is cut at 40 characters: cut first, the
    token was no longer one and was quoted raw), controls escaped."""
    token = "ghp_" + "a1B2c3D4e5" * 4
    rep = check_capture(str(_edited(tmp_path, "false-finding-http401-oauth-body.jsonl", 401, f"invalid_token {token}\x1b[2K")),
                        reuse=False)
    (place,) = rep.groups["http.error_body"].places
    assert "«redacted:" in place.message and token[:12] not in place.message, place.message
    assert "\x1b" not in place.message
