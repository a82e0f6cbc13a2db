"""Spans and OTLP/JSON from the curated stdio captures and from hand-made
records: pairing, kinds, error mapping, events, and robustness."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.export.otlp_json import otlp_json_lines
from mcptap.export.spans import CLIENT, INTERNAL, SERVER, STATUS_ERROR, SpanBuilder
from mcptap.export.spans import spans_of as build_spans
from otlp_helpers import attrs, parse_otlp_json, spans_of

CAPTURES = Path(__file__).parents[2] / "captures"
HEADER = {"type": "header", "started": "2026-01-02T03:04:05.000006Z", "transport": "stdio", "target": {"argv": ["srv"]}}


def otlp_spans(path: Path) -> list[Any]:
    cap = read_capture(str(path))
    return [s for line in otlp_json_lines(cap.header, cap.records) for s in spans_of(parse_otlp_json(line))]


def msg(seq: int, t: int, d: str, kind: str, value: Any, **extra: Any) -> dict[str, Any]:
    rec = {"type": "message", "seq": seq, "t_us": t, "dir": d, "kind": kind, "json": value}
    if isinstance(value, dict) and "id" in value:
        rec["id"] = value["id"]
    if isinstance(value, dict) and "method" in value:
        rec["method"] = value["method"]
    rec.update(extra)
    return rec


def test_clean_stdio_capture() -> None:
    spans = otlp_spans(CAPTURES / "clean-2025-06-18.jsonl")
    by = {}
    for s in spans:
        by.setdefault(s.name, []).append(s)
    assert all(attrs(s).get("network.transport") == "pipe" for s in spans if s.kind != s.SPAN_KIND_INTERNAL)
    echo = by["tools/call echo"][0]
    assert [e.name for e in echo.events].count("notifications/progress") == 2
    assert echo.end_time_unix_nano > echo.start_time_unix_nano
    slow = by["tools/call slow"][0]
    assert attrs(slow)["error.type"] == "cancelled" and slow.status.code == slow.status.STATUS_CODE_ERROR
    assert "notifications/cancelled" in [e.name for e in slow.events]
    # server → client notification: its own span, SERVER kind (the host processes it)
    log = by["notifications/message"][0]
    assert log.kind == log.SPAN_KIND_SERVER and log.start_time_unix_nano == log.end_time_unix_nano
    assert by["initialize"][0].kind == by["initialize"][0].SPAN_KIND_CLIENT
    assert attrs(by["initialize"][0])["mcp.protocol.version"] == "2025-06-18"
    assert "mcp.session.id" not in attrs(by["initialize"][0])      # stdio: no session id
    # the epoch: header start + t_us
    assert str(echo.start_time_unix_nano).startswith("17")


def test_faulty_capture_errors_findings_unanswered() -> None:
    spans = otlp_spans(CAPTURES / "faulty-server.jsonl")
    err = next(s for s in spans if attrs(s).get("rpc.response.status_code") is not None)
    assert attrs(err)["error.type"] == attrs(err)["rpc.response.status_code"] == "0"
    assert err.status.code == err.status.STATUS_CODE_ERROR and err.status.message == "internal failure"
    codes = {attrs(e)["mcptap.finding.code"] for s in spans for e in s.events if e.name == "mcptap.finding"}
    assert {"framing.non_jsonrpc_line", "jsonrpc.unmatched_response", "jsonrpc.id_type_mismatch", "process.exit"} <= codes
    unanswered = [s for s in spans if attrs(s).get("error.type") == "no_response"]
    assert len(unanswered) == 1
    # the id-mismatched response ("3" for 3) still closes its request's span
    assert any(attrs(s).get("jsonrpc.request.id") == "3" and "mcptap.response.seq" in attrs(s) for s in spans)


def test_error_response_server_request_and_batch() -> None:
    recs = [
        msg(1, 10, "c2s", "request", {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}}, session="S"),
        msg(2, 30, "s2c", "error", {"jsonrpc": "2.0", "id": "a", "error": {"code": -32602, "message": "bad args"}}, session="S", pair=1),
        msg(3, 40, "s2c", "request", {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}, session="S"),
        msg(4, 45, "c2s", "response", {"jsonrpc": "2.0", "id": 7, "result": {}}, session="S", pair=3),
        {"type": "message", "seq": 5, "t_us": 50, "dir": "c2s", "kind": "batch",
         "json": [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "f://x"}}],
         "members": [{"index": 0, "kind": "request", "id": 1, "method": "ping"}, {"index": 1, "kind": "request", "id": 2, "method": "resources/read"}]},
        {"type": "message", "seq": 6, "t_us": 70, "dir": "s2c", "kind": "batch",
         "json": [{"jsonrpc": "2.0", "id": 2, "result": {}}, {"jsonrpc": "2.0", "id": 1, "result": {}}],
         "members": [{"index": 0, "kind": "response", "id": 2, "pair": 5}, {"index": 1, "kind": "response", "id": 1, "pair": 5}]},
    ]
    spans = build_spans(HEADER, recs)
    assert [s.name for s in spans] == ["tools/call x", "sampling/createMessage", "resources/read", "ping"]
    call, sampling, read, ping = spans
    assert call.kind == CLIENT and sampling.kind == SERVER
    assert call.attributes["error.type"] == call.attributes["rpc.response.status_code"] == "-32602"
    assert call.status_code == STATUS_ERROR and call.status_message == "bad args"
    assert (call.start_us, call.end_us) == (10, 30)
    assert call.attributes["jsonrpc.request.id"] == "a" and sampling.attributes["jsonrpc.request.id"] == "7"
    assert call.trace_id == sampling.trace_id != read.trace_id        # per session
    assert read.attributes["mcp.resource.uri"] == "f://x" and (read.start_us, read.end_us) == (50, 70)
    assert ping.span_id != read.span_id and len(ping.span_id) == 8 and len(ping.trace_id) == 16


def test_ids_deterministic_and_distinct_per_capture() -> None:
    a, b = SpanBuilder(HEADER), SpanBuilder({**HEADER, "started": "2026-01-02T03:04:05.000007Z"})
    assert a.trace_id("S") == SpanBuilder(HEADER).trace_id("S") != b.trace_id("S")
    assert a.span_id(3) == SpanBuilder(HEADER).span_id(3) != a.span_id(4)


def test_records_with_findings_become_internal_spans() -> None:
    recs = [{"type": "process", "seq": 1, "t_us": 5, "event": "exit", "findings": [{"code": "process.exit", "severity": "info", "message": "m"}]},
            {"type": "stderr", "seq": 2, "t_us": 6, "data": "x"}]
    spans = build_spans(HEADER, recs)
    assert [(s.name, s.kind) for s in spans] == [("mcptap process exit", INTERNAL)]
    assert spans[0].events[0].attributes["mcptap.finding.code"] == "process.exit"


def test_cli_har_on_stdio_capture_is_one_line_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "export", str(CAPTURES / "clean-2025-06-18.jsonl"), "-f", "har"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptap: ") and "otlp-json" in lines[0] and "messages" in lines[0]


def test_cli_unreadable_capture_and_output(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "export", str(tmp_path / "nope.jsonl"), "-f", "otlp-json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("mcptap: ")
    out = tmp_path / "missing-dir" / "x.json"
    r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "export", str(CAPTURES / "clean-2025-06-18.jsonl"), "-f", "messages", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "cannot write" in r.stderr and not out.exists()


_KEYS = st.sampled_from(["id", "method", "params", "result", "error", "name", "uri", "code"])
_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(_KEYS, c, max_size=4), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "type": st.sampled_from(["message", "http", "eof"]), "seq": st.integers(1, 20), "t_us": st.integers(0, 100),
    "dir": st.sampled_from(["c2s", "s2c"]), "kind": st.sampled_from(["request", "response", "error", "notification", "batch", "invalid"]),
    "json": _json, "method": st.sampled_from(["tools/call", "prompts/get", "notifications/progress", "notifications/cancelled", "x"]),
    "pair": st.integers(1, 20), "link": st.integers(1, 20), "id": _json, "members": _json,
}), max_size=12))
def test_any_records_map_without_raising(recs: list[dict[str, Any]]) -> None:
    for span in build_spans(HEADER, recs):
        assert len(span.trace_id) == 16 and len(span.span_id) == 8 and span.end_us >= span.start_us
    for line in otlp_json_lines(HEADER, recs):
        parse_otlp_json(line)


def test_live_digests_give_the_file_export_spans() -> None:
    """The live export maps small digests of live Messages; they must give
    the very spans the file export maps from whole records."""
    from mcptap.capture.format import message_from_record
    from mcptap.export.digest import digest

    for name in ("clean-2025-06-18.jsonl", "faulty-server.jsonl", "stateless-2026-07-28.jsonl"):
        cap = read_capture(str(CAPTURES / name))
        msgs = [r for r in cap.records if r["type"] == "message"]
        whole = build_spans(cap.header, msgs)
        slim = build_spans(cap.header, [digest(message_from_record(r)) for r in msgs])
        assert [(s.name, s.kind, s.span_id, s.attributes, s.events, s.status_code, s.status_message, s.end_us) for s in slim] == \
               [(s.name, s.kind, s.span_id, s.attributes, s.events, s.status_code, s.status_message, s.end_us) for s in whole], name


def test_har_entry_of_a_non_post_body_and_a_502() -> None:
    from mcptap.export.har import har_of

    header = {"started": "2026-01-02T03:04:05Z", "transport": "http", "target": {"url": "http://up.example:8080/mcp"}}
    recs = [
        {"type": "http", "seq": 1, "t_us": 100, "event": "request", "exchange": 1, "conn": 1, "method": "DELETE", "target": "/mcp?x=1&y",
         "version": "1.1", "headers": [["Authorization", "Bearer «redacted:sha256:abcd»"], ["Content-Type", "text/plain"]]},
        {"type": "http", "seq": 2, "t_us": 150, "event": "request_body", "exchange": 1, "conn": 1, "body": "bye"},
        {"type": "http", "seq": 3, "t_us": 300, "event": "end", "exchange": 1, "conn": 1, "how": "upstream_failed", "request_bytes": 3,
         "response_bytes": 0, "duration_us": 1200, "sent_502": True,
         "findings": [{"code": "http.upstream_failed", "severity": "error", "message": "refused"}]},
    ]
    (entry,) = har_of(header, recs)["log"]["entries"]
    req = entry["request"]
    assert req["url"] == "http://up.example:8080/mcp?x=1&y" and req["postData"] == {"mimeType": "text/plain", "text": "bye"}
    assert req["queryString"] == [{"name": "x", "value": "1"}, {"name": "y", "value": ""}]
    # as the server received it (export/har_sent.py): the client sent no Host, the tap sent the upstream's
    assert [(h["name"], h["value"]) for h in req["headers"]] == [
        ("Host", "up.example:8080"), ("Authorization", "Bearer «redacted:sha256:abcd»"), ("Content-Type", "text/plain")]
    assert entry["startedDateTime"] == "2026-01-02T03:04:05.000100Z"
    assert entry["response"]["status"] == 502 and "answered by mcptap itself (upstream_failed" in entry["response"]["comment"]
    assert entry["timings"]["send"] == 0.05 and entry["time"] == 1.2
    assert entry["_mcp"]["findings"][0]["code"] == "http.upstream_failed" and entry["_mcp"]["how"] == "upstream_failed"


@pytest.mark.parametrize(("how", "status"), [("host_rejected", 403), ("request_rejected", 400), ("auth_not_fronted", 404),
                                             ("upstream_failed", 502)])
def test_har_gives_the_status_the_tap_answered_itself(how: str, status: int) -> None:
    """The relay sets ``sent_502`` for every answer of its own: a DNS-rebinding
    403 and a 400 were exported as 502 Bad Gateway (found by a breaker helper)."""
    from mcptap.export.har import har_of

    header = {"started": "2026-01-02T03:04:05Z", "transport": "http", "target": {"upstream": "http://127.0.0.1:8000/mcp"}}
    recs = [
        {"type": "http", "seq": 1, "t_us": 1000, "event": "request", "exchange": 1, "conn": 1, "method": "POST", "target": "/mcp",
         "version": "1.1", "headers": [["Host", "evil.example"]]},
        {"type": "http", "seq": 2, "t_us": 1000, "event": "end", "exchange": 1, "conn": 1, "how": how, "request_bytes": 40,
         "response_bytes": 0, "duration_us": 0, "detail": "refused", "sent_502": True},
    ]
    (entry,) = har_of(header, recs)["log"]["entries"]
    assert entry["response"]["status"] == status and f"answered by mcptap itself ({how}" in entry["response"]["comment"]


@pytest.mark.parametrize("t_us", [2**62, -(2**62), 2**64 + 1])
def test_a_time_beyond_the_year_9999_is_no_time(t_us: int) -> None:
    """A hand-edited ``t_us`` far from the capture's start: HAR and message
    lines used to stop with ``ValueError: year … is out of range``
    (``datetime.fromtimestamp``). HAR needs a date: the capture's start, and a
    comment says why; a message line has no ``time``."""
    from mcptap.export.har import har_of
    from mcptap.export.messages import message_lines
    header = {"started": "2026-01-02T03:04:05Z", "transport": "http", "target": {"url": "http://up.example/mcp"}}
    recs = [{"type": "http", "seq": 1, "t_us": t_us, "event": "request", "exchange": 1, "conn": 1, "method": "POST", "target": "/mcp",
             "version": "1.1", "headers": []},
            msg(2, t_us, "c2s", "request", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, transport={"exchange": 1, "conn": 1}),
            {"type": "http", "seq": 3, "t_us": 10, "event": "request", "exchange": 2, "conn": 1, "method": "POST", "target": "/mcp",
             "version": "1.1", "headers": []},
            msg(4, 10, "c2s", "request", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, transport={"exchange": 2, "conn": 1})]
    far, near = har_of(header, recs)["log"]["entries"]
    assert far["startedDateTime"] == "2026-01-02T03:04:05.000000Z" and f"t_us {t_us} is beyond the years 1-9999" in far["comment"]
    assert near["startedDateTime"] == "2026-01-02T03:04:05.000010Z" and "comment" not in near
    lines = [orjson.loads(x) for x in message_lines(header, recs)]
    assert "time" not in lines[0] and lines[1]["time"] == "2026-01-02T03:04:05.000010Z"

    from mcptap.export.spans import iso_us

    assert iso_us(t_us) is None
    assert iso_us(0) == "1970-01-01T00:00:00.000000Z" and iso_us(-1) == "1969-12-31T23:59:59.999999Z"
    assert iso_us(253402300799999999) == "9999-12-31T23:59:59.999999Z" and iso_us(253402300800000000) is None


def test_otlp_lines_stream_every_span_in_order_512_a_line() -> None:
    """The lines come as the records do (an open request's span waits for its
    answer); their spans, in order, are the capture's spans in end order, 512
    a line, the last line the rest, an unanswered request's span at the end."""
    from mcptap.export.otlp_json import SPANS_PER_LINE

    recs: list[dict[str, Any]] = []
    seq = 0
    for i in range(1, 700):
        seq += 1
        recs.append(msg(seq, seq * 10, "c2s", "request", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}}))
        seq += 1
        recs.append(msg(seq, seq * 10, "s2c", "response", {"jsonrpc": "2.0", "id": i, "result": {}}, pair=seq - 1))
    seq += 1
    recs.append(msg(seq, seq * 10, "c2s", "request", {"jsonrpc": "2.0", "id": "open", "method": "tools/call", "params": {"name": "t"}}))
    taken = {"n": 0}

    def fed() -> Any:
        for rec in recs:
            taken["n"] += 1
            yield rec

    lines = otlp_json_lines(HEADER, fed())
    first = next(lines)
    assert taken["n"] < len(recs)                               # the first line came before the records ended
    rest = list(lines)
    per_line = [len(spans_of(parse_otlp_json(line))) for line in [first, *rest]]
    assert per_line == [SPANS_PER_LINE, 700 - SPANS_PER_LINE]
    whole = build_spans(HEADER, recs)
    got = [s for line in [first, *rest] for s in spans_of(parse_otlp_json(line))]
    assert len(whole) == 700 and whole[-1].attributes.get("error.type") == "no_response"
    assert [bytes(s.span_id) for s in got] == [s.span_id for s in whole]


@given(st.integers(min_value=-(2**80), max_value=2**80))
def test_an_otlp_time_is_fixed64_nanoseconds_or_a_clear_error(t_us: int) -> None:
    """Every ``*TimeUnixNano`` OTLP carries is 0..2**64-1 ns since 1970: any
    other time is refused with ExportError (a collector would refuse the
    whole request), never written."""
    from mcptap.errors import ExportError
    from mcptap.export.otlp_json import MAX_UNIX_NANO, unix_nano

    epoch = 1_767_323_045_000_000          # 2026-01-02T03:04:05Z
    try:
        v = unix_nano(epoch, t_us, "span 'x'")
    except ExportError as exc:
        assert not 0 <= (epoch + t_us) * 1000 <= MAX_UNIX_NANO
        assert "span 'x'" in str(exc) and "outside what OTLP can carry" in str(exc)
    else:
        assert int(v) == (epoch + t_us) * 1000 and 0 <= int(v) <= MAX_UNIX_NANO


@given(st.datetimes(timezones=st.just(UTC)))
def test_epoch_of_a_start_time_is_exact_to_the_microsecond(dt: Any) -> None:
    """``epoch_us`` of the header's ``started``: exact integers (the float
    ``timestamp()`` was a second off near the year 9999)."""
    from mcptap.export.spans import epoch_us, iso_us

    iso = dt.isoformat(timespec="microseconds").replace("+00:00", "Z")
    us = epoch_us(iso)
    assert iso_us(us) == iso


@pytest.mark.parametrize("edit", ["t_us", "started"])
def test_cli_otlp_export_refuses_a_time_otlp_cannot_carry(tmp_path: Path, edit: str) -> None:
    """A hand-edited capture: one message 2**63 µs after the start, or a start
    in the year 9999. ``export -f otlp-json`` says which span and why on one
    line, exit 2, and leaves no output file (it used to write nanoseconds
    beyond 64 bits, which collectors refuse)."""
    lines = (CAPTURES / "clean-2025-06-18.jsonl").read_bytes().splitlines()
    recs = [orjson.loads(x) for x in lines]
    if edit == "started":
        recs[0]["started"] = "9999-12-31T23:59:59.999999Z"
    else:
        m = next(r for r in recs if r.get("type") == "message" and r.get("kind") == "request" and r.get("method") != "initialize")
        m["t_us"] = 2**63
    cap = tmp_path / "edited.jsonl"
    cap.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    out = tmp_path / "spans.json"
    r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "export", str(cap), "-f", "otlp-json", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    err = r.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith(f"mcptap: {cap}: span ") and "outside what OTLP can carry" in err[0], r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [cap]


def test_live_digests_of_lone_surrogate_ids_reach_the_export_process(tmp_path) -> None:
    """A cancel's requestId "\\udfff" (kept exact by the parse) went into the digest as a
    surrogate; the export process reads digests with orjson, which refused the line: its
    span was dropped without a word."""
    import orjson

    from mcptap.capture.dumps import dumps
    from mcptap.capture.format import message_from_record
    from mcptap.export.digest import digest
    from scripted import c2s, handshake, record

    cap = record(tmp_path / "lone.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":"\\ud83d","method":"ping"}\n'),
        c2s(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\\udfff","reason":"x\\ud800"}}\n'),
        c2s(b'[{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}]\n')])
    msgs = [r for r in read_capture(str(cap)).records if r["type"] == "message"]
    for r in msgs:
        orjson.loads(dumps(digest(message_from_record(r))))
