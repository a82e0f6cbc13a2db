"""mcptap/show/render.py and mcptap/show/summary.py: timeline lines, request context,
summary statistics, JSON lines and Mermaid output."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mcptap.capture.reader import read_capture
from mcptap.check.reannotated import Reannotated
from mcptap.filters.operators import compile_filter
from mcptap.show.latency import Latencies
from mcptap.show.render import json_lines, mermaid, render_timeline, timeline, timeline_line
from mcptap.show.summary import Summary
from mcptap.show.tracker import Tracker
from mcptap.show.values import fmt_us
from scripted import c2s, err, handshake, note, record, req, res, s2c

H = handshake()
CALL = {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": "tok"}}


def session(tmp_path: Path) -> Path:
    return record(tmp_path / "s.jsonl", H + [
        c2s(req(2, "tools/call", CALL)),                                                      # 4
        s2c(note("notifications/progress", {"progressToken": "tok", "progress": 1, "total": 2})),  # 5
        s2c(res(2, {"content": [], "isError": True})),                                        # 6
        c2s(req(3, "tools/call", {"name": "slow", "arguments": {}})),                         # 7
        c2s(note("notifications/cancelled", {"requestId": 3, "reason": "stop"})),             # 8
        c2s(req(4, "resources/read", {"uri": "file:///x"})),                                  # 9
        s2c(err(4, -32002, "not found")),                                                     # 10
        s2c(b"banner; <b>#1</b>\n"),                                                          # 11
        ("err", b"log\n"),                                                                    # 12
        c2s(req(5, "ping")),                                                                  # 13 never answered
        ("eof", "s2c"), ("exit", 0),
    ])


def lines_of(path: Path, **kw) -> list[str]:
    ra = Reannotated.open(str(path))
    return list(timeline(ra, ra.header, **kw))


def line_for(lines: list[str], seq: int) -> str:
    return next(ln for ln in lines if ln[:6].strip() == str(seq))


def test_timeline_lines_show_pairing_latency_phase_and_context(tmp_path: Path) -> None:
    lines = lines_of(session(tmp_path))
    assert "C → S  req    tools/call echo id=2" in line_for(lines, 4)
    assert "notifications/progress 1/2 → #4" in line_for(lines, 5)
    resp = line_for(lines, 6)
    assert "C ← S  resp   tools/call echo id=2 isError" in resp and "↩ #4 2.0ms" in resp and "operating" in resp
    assert "notifications/cancelled id=3 → #7 (stop)" in line_for(lines, 8)
    assert "resources/read id=4 error -32002 not found" in line_for(lines, 10)
    assert "'banner; <b>#1</b>'" in line_for(lines, 11) and "✖ framing.non_jsonrpc_line" in line_for(lines, 11)
    assert "stderr   'log' (4 B)" in line_for(lines, 12)
    assert "server closed its stdout" in line_for(lines, 14)
    assert "process  exit code=0" in line_for(lines, 15)
    # finding detail line under the message
    i = lines.index(line_for(lines, 11))
    assert lines[i + 1].strip().startswith("✖ error framing.non_jsonrpc_line: s2c line is not JSON")


def test_timeline_summary(tmp_path: Path) -> None:
    text = "\n".join(lines_of(session(tmp_path)))
    summary = text[text.index("Summary"):]
    assert "12 messages (c2s 7, s2c 5; 1 not JSON: blank or text line)" in summary       # the banner line
    assert "bytes: c2s" in summary and "stderr 4" in summary
    tools = summary[summary.index("tool "):]
    assert "echo" in tools and "slow" in tools
    echo = next(ln for ln in tools.splitlines() if ln.strip().startswith("echo"))
    assert echo.split()[1:3] == ["1", "1"]                 # 1 call, 1 error (isError)
    read = next(ln for ln in summary.splitlines() if ln.strip().startswith("resources/read"))
    assert read.split()[1:4] == ["1", "0", "1"]            # c2s 1, s2c 0, 1 JSON-RPC error
    assert "pending at end: 1" in summary                  # the ping (a cancelled request is not owed an answer)
    assert "#13 ping id=5 from the client" in summary


def test_oneline_and_no_summary(tmp_path: Path) -> None:
    lines = lines_of(session(tmp_path), details=False, summary=False)
    assert not any(ln.startswith(" " * 17) for ln in lines)
    assert not any("Summary" in ln for ln in lines)
    assert len(lines) == 2 + 15                              # header, columns, one line per record


def test_filter_keeps_matching_records_and_says_so_in_the_summary(tmp_path: Path) -> None:
    lines = lines_of(session(tmp_path), flt=compile_filter("~tool echo"))
    seqs = [int(ln[:6]) for ln in lines if ln[:6].strip().isdigit()]
    assert seqs == [4, 5, 6]
    text = "\n".join(lines)
    assert "Summary of the 3 records the filter shows (12 hidden)" in text
    assert "stderr 4" in text                              # capture-wide bytes regardless of the filter


def test_style_roles_are_applied(tmp_path: Path) -> None:
    seen: set[str] = set()
    lines_of(session(tmp_path), style=lambda t, r: seen.add(r) or f"<{r}>{t}</{r}>")
    assert {"c2s", "s2c", "error", "info", "dim", "bold"} <= seen
    line = timeline_line({"type": "message", "seq": 1, "t_us": 0, "dir": "c2s", "kind": "request", "id": 1, "method": "ping",
                          "json": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}, None, lambda t, r: f"<{r}>{t}</{r}>")
    assert "<c2s>C → S</c2s>" in line


def test_tracker_links_responses_progress_and_cancellations() -> None:
    t = Tracker()
    call = {"type": "message", "seq": 4, "kind": "request", "id": 2, "method": "tools/call",
            "json": {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo"}}}
    assert t.feed(call) == {"seq": 4, "method": "tools/call", "tool": "echo", "id": 2}
    assert t.feed({"type": "message", "seq": 5, "kind": "notification", "method": "notifications/progress", "link": 4})["tool"] == "echo"
    assert t.feed({"type": "message", "seq": 6, "kind": "response", "pair": 4})["method"] == "tools/call"
    # answered requests are dropped (bounded memory); a late link still names the seq
    assert t.feed({"type": "message", "seq": 7, "kind": "notification", "link": 4}) == {"seq": 4, "method": None, "tool": None}
    assert t._open == {}
    assert t.feed({"type": "stderr", "seq": 8}) is None


@pytest.mark.parametrize("values, p50, p90, p99", [
    ([5], 5, 5, 5),
    (list(range(1, 101)), 50, 90, 99),
    ([1000 * i for i in range(1, 11)], 5000, 9000, 10000),
    ([123_456, 123_999, 1_000], 123_000, 123_999, 123_999),   # 3 significant digits above 1 ms; the top rank is exact
    ([999, 1_234, 5_678], 1_230, 5_678, 5_678),
    ([151_900], 151_900, 151_900, 151_900),                   # one sample: every percentile is that sample
])
def test_latency_percentiles(values: list[int], p50: int, p90: int, p99: int) -> None:
    lat = Latencies()
    for v in values:
        lat.add(v)
    assert (lat.percentile(50), lat.percentile(90), lat.percentile(99)) == (p50, p90, p99)
    assert lat.max == max(values)


def test_latency_histogram_is_bounded() -> None:
    lat = Latencies()
    for v in range(0, 50_000_000, 997):
        lat.add(v)
    assert len(lat.counts) < 6000
    assert abs(lat.percentile(50) - 25_000_000) / 25_000_000 < 0.01
    assert Latencies().percentile(50) is None


def test_fmt_us() -> None:
    assert [fmt_us(v) for v in (None, 850, 35_000, 2_400_000)] == ["?", "850µs", "35.0ms", "2.40s"]


def test_json_lines(tmp_path: Path) -> None:
    ra = Reannotated.open(str(session(tmp_path)))
    out = [orjson.loads(x) for x in json_lines(ra, ra.header, compile_filter("~resp & !~m initialize"))]
    assert out[0]["type"] == "header"
    assert [r["type"] for r in out[1:]] == ["message", "message", "end", "summary"]
    assert out[1]["request"] == {"seq": 4, "method": "tools/call", "tool": "echo"}
    assert out[1]["pair"] == 4 and out[1]["latency_us"] == 2000
    assert out[2]["request"]["method"] == "resources/read" and out[2]["kind"] == "error"
    summ = out[-1]
    assert summ["tools"]["echo"]["errors"] == 1 and summ["methods"]["resources/read"]["errors"] == 1
    assert summ["filtered"] == {"shown": 2, "hidden": 13}
    assert [p["method"] for p in summ["pending"]] == ["ping"]


def test_mermaid(tmp_path: Path) -> None:
    ra = Reannotated.open(str(session(tmp_path)))
    out = list(mermaid(ra, ra.header))
    assert out[:3] == ["sequenceDiagram", "    participant C as Client", "    participant S as Server"]
    text = "\n".join(out)
    assert "    C->>S: 4 tools/call echo id=2" in text
    assert "    S-)C: 5 notifications/progress 1/2 → #35;4" in text
    assert "    S-->>C: 6 tools/call echo id=2 isError (2.0ms)" in text
    assert "    S--xC: 10 resources/read id=4 error -32002 not found (1.0ms)" in text
    # '#', ';', '<', '>' escaped as Mermaid entity codes, nothing raw left that breaks parsing
    assert "    S--)C: 11 'banner#59; #60;b#62;#35;1#60;/b#62;'" in text
    assert "Note over C,S: ✖ framing.non_jsonrpc_line" in text
    assert "Note over S: 15 exit status 0" in text
    for ln in out[3:]:
        body = ln.split(":", 1)[1]
        assert "<" not in body and ">" not in body and ";" not in body.replace("#35;", "").replace("#59;", "").replace("#60;", "").replace("#62;", "")


def test_render_timeline_of_an_in_memory_capture(tmp_path: Path) -> None:
    text = render_timeline(read_capture(str(session(tmp_path))))
    assert "tools/call echo id=2" in text and "Summary" in text


def test_summary_counts_findings_of_the_end_record() -> None:
    s = Summary()
    s.feed({"type": "end", "t_us": 10, "c2s": {"bytes": 1}, "s2c": {"bytes": 2}, "pending": [],
            "unanswered": [{"code": "jsonrpc.unanswered_request", "severity": "error", "message": "m"}],
            "capture": [{"code": "capture.truncated", "severity": "warn", "message": "m"}]}, None)
    j = s.to_json()
    assert j["findings"] == {"error": 1, "warn": 1, "info": 0}
    assert j["bytes"] == {"c2s": 1, "s2c": 2} and j["complete"] is True


def _summary(tmp_path: Path, expr: str | None) -> tuple[dict, list[dict]]:
    ra = Reannotated.open(str(session(tmp_path)))
    out = [orjson.loads(x) for x in json_lines(ra, ra.header, compile_filter(expr) if expr else None)]
    return out[-1], [r for r in out[1:-1] if r.get("type") == "message"]


@pytest.mark.parametrize("expr", [None, "~resp", "~req", "~notif", "~s2c", "~c2s", "~tool echo", "~m tools/", "!~req", "~err"])
def test_filtered_summary_counts_every_shown_message_once_by_method(tmp_path: Path, expr: str | None) -> None:
    """The method table of a filtered show is the unfiltered table over the
    shown records: requests and notifications by direction, responses (result
    or error) under their request's method. It used to count requests and
    notifications only: a `~resp` summary listed methods with all zeros."""
    summ, shown = _summary(tmp_path, expr)
    full, everything = _summary(tmp_path, None)
    counted = sum(s["c2s"] + s["s2c"] + s["responses"] for s in summ["methods"].values())
    methodless = [r for r in shown if r.get("method") is None and "request" not in r]
    assert counted == len(shown) - len(methodless) == summ["messages"]["c2s"] + summ["messages"]["s2c"] - len(methodless)
    for method, s in summ["methods"].items():
        want = [r for r in shown if (r.get("request") or {}).get("method" if r.get("kind") in ("response", "error") else "") == method]
        assert s["responses"] == len(want), (method, s)
        assert s["responses"] <= full["methods"][method]["responses"]
    if expr == "~resp":
        assert {m: s["responses"] for m, s in summ["methods"].items()} == \
            {m: s["responses"] for m, s in full["methods"].items() if s["responses"]}
