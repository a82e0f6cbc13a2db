"""Requests the HTTP tap refused itself (a DNS rebinding page: ``Host: evil.example``, 403) in
a capture written before the ``refused`` marker, and the HTTP judge on refused requests.

An old capture is built from one today's tap writes (real peers: the SDK's Streamable HTTP
server behind the tap, a raw client stepping the handshake so the page's requests fall
between its steps), its markers stripped and its rules fingerprint another mcptap's, as
every capture before the marker has. ``show`` and ``check`` must judge it as today's: the
tap's own ``end`` record (``how`` host_rejected) says the request never reached the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson
import pytest

from mcptap.capture.reader import read_capture
from test_html_report import run
from test_http_sdk import sdk_server, tapped

pytestmark = pytest.mark.e2e
ACCEPT = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "client", "version": "1"}}}
OLD_RULES = "sha256:0123456789abcdef"       # another mcptap's rules: re-annotated in full


async def _post(http: httpx.AsyncClient, url: str, body: dict[str, Any], session: str | None = None, **headers: str) -> httpx.Response:
    h = {"Accept": ACCEPT, "MCP-Protocol-Version": "2025-06-18"}
    if session is not None:
        h["Mcp-Session-Id"] = session
    h.update(headers)
    return await http.post(url, json=body, headers=h)


async def _capture(tmp_path: Path) -> Path:
    """initialize (answered); then, refused, a rebinding page's notifications/initialized
    naming the live session, its form POST of a tools/call (text/plain, no Accept, no version
    header: what a page sends without a CORS preflight) and its GET (Accept text/html); then
    the client's tools/list, before its own notifications/initialized, which it sends last."""
    cap = tmp_path / "refused.jsonl"
    async with sdk_server("streamable-http") as base, tapped(base + "/mcp", cap) as (url, _), httpx.AsyncClient() as http:
        r = await _post(http, url, INIT)
        assert r.status_code == 200
        sid = r.headers["mcp-session-id"]
        page = {"Host": "evil.example"}
        assert (await _post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, **page)).status_code == 403
        form = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
        r = await http.post(url, content=orjson.dumps(form), headers={**page, "Content-Type": "text/plain", "Mcp-Session-Id": sid})
        assert r.status_code == 403
        assert (await http.get(url, headers={**page, "Accept": "text/html", "Mcp-Session-Id": sid})).status_code == 403
        await _post(http, url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
        await _post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return cap


def _strip(cap: Path, out: Path) -> Path:
    """``cap`` as an mcptap before the ``refused`` marker wrote it: no marker, other rules."""
    lines = []
    for line in cap.read_bytes().splitlines():
        r = orjson.loads(line)
        if r["type"] == "header":
            r["rules"] = OLD_RULES
        r.pop("refused", None)
        if isinstance(r.get("transport"), dict):
            r["transport"].pop("refused", None)
        lines.append(orjson.dumps(r))
    assert b'"refused"' not in b"".join(lines)
    out.write_bytes(b"\n".join(lines) + b"\n")
    return out


def _shown(cap: Path, *extra: str) -> list[dict[str, Any]]:
    res = run("show", str(cap), "--format", "json", *extra)
    assert res.exit_code == 0, res.output
    return [orjson.loads(x) for x in res.output.splitlines()]


def _c2s(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("type") == "message" and r.get("dir") == "c2s"]


def _codes(r: dict[str, Any]) -> list[str]:
    return [f["code"] for f in r.get("findings", ())]


@pytest.fixture
async def captures(tmp_path: Path) -> tuple[Path, Path]:
    cap = await _capture(tmp_path)
    return cap, _strip(cap, tmp_path / "old.jsonl")


async def test_an_old_captures_refused_requests_are_known_by_the_taps_end_record(captures: tuple[Path, Path]) -> None:
    new, old = captures
    for shown in (_shown(old), _shown(new, "--full")):
        msgs = _c2s(shown)
        assert [(m.get("method"), m.get("id")) for m in msgs] == [
            ("initialize", 1), ("notifications/initialized", None), ("tools/call", 9), ("tools/list", 2), ("notifications/initialized", None)]
        _, page_initialized, page_call, tools_list, initialized = msgs
        for refused in (page_initialized, page_call):
            assert refused["transport"]["refused"] == "host_rejected"
            assert "phase" not in refused
            assert not [c for c in _codes(refused) if c.startswith("lifecycle.")], refused
        # the page's notifications/initialized never reached the server: the client's tools/list came before its own
        assert tools_list["phase"] == "initialized"
        assert "lifecycle.initialized_missing" in _codes(tools_list)
        assert "refused" not in initialized["transport"]
        requests = [r for r in shown if r.get("type") == "http" and r.get("event") == "request"]
        assert [r.get("refused") for r in requests] == [None, "host_rejected", "host_rejected", "host_rejected", None, None]


def _check(cap: Path, *extra: str) -> dict[str, Any]:
    res = run("check", str(cap), "--format", "json", "--fail-on", "never", *extra)
    assert res.exit_code == 0, res.output
    rep = orjson.loads(res.output)
    return {g["code"]: (g["count"], [(p["seq"], p["line"]) for p in g["first"]]) for c in rep["captures"] for g in c["codes"]}


async def test_check_judges_an_old_capture_as_todays(captures: tuple[Path, Path]) -> None:
    new, old = captures
    today = _check(new, "--full")
    assert "lifecycle.initialized_missing" in today and "http.host_rejected" in today
    assert _check(old) == _check(old, "--full") == today


HEADER_CODES = ("http.post_accept_incomplete", "http.post_content_type_not_json", "http.protocol_version_header_missing",
                "http.get_accept_missing_event_stream")


def _refused(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The message and request records of the page's refused requests (2 messages, 3 requests)."""
    out = [r for r in records if (r.get("type") == "message" and r["transport"].get("refused"))
           or (r.get("event") == "request" and r.get("refused"))]
    assert len(out) == 5, out
    return out


async def test_the_live_tap_judges_no_header_of_a_request_it_refused(captures: tuple[Path, Path]) -> None:
    new, _ = captures
    for r in _refused(read_capture(str(new)).records):
        assert not [c for c in _codes(r) if c in HEADER_CODES], r


async def test_no_http_rule_judges_a_request_the_tap_refused(captures: tuple[Path, Path]) -> None:
    """The page's form POST (no Accept, text/plain, no version header) and GET (Accept
    text/html) would each draw header findings: the server never saw them."""
    new, old = captures
    for shown in (_shown(old), _shown(new, "--full")):
        for r in _refused(shown):
            assert not [c for c in _codes(r) if c in HEADER_CODES], r
        ends = [r for r in shown if r.get("event") == "end" and r.get("how") == "host_rejected"]
        assert len(ends) == 3 and all(_codes(e) == ["http.host_rejected"] for e in ends)


async def test_the_har_gives_a_refused_request_as_the_client_sent_it(captures: tuple[Path, Path]) -> None:
    """It reached no server: no upstream URL, Host or header change applies to it."""
    from mcptap.export.har import har_of

    for cap in captures:
        c = read_capture(str(cap))
        entries = [e for e in har_of(c.header, c.records)["log"]["entries"] if e["_mcp"].get("how") == "host_rejected"]
        assert len(entries) == 3
        for e in entries:
            assert e["request"]["url"].startswith("http://evil.example/mcp") and "never forwarded" in e["request"]["comment"]
            assert ("Host", "evil.example") in [(h["name"], h["value"]) for h in e["request"]["headers"]]
            assert e["response"]["status"] == 403 and "clientHeaders" not in e["_mcp"]
