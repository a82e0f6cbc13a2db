"""The report's session headers of real SDK sessions through the HTTP tap, both eras: who the
client and server are and the revision, from ``initialize`` or from 2026-07-28's per-request
``_meta`` (``server/discover`` and every result's ``io.modelcontextprotocol/serverInfo``); an
HTTP session without ``Mcp-Session-Id`` is not called "(stdio)"; a request the tap refused
(``Host: evil.example``, DNS rebinding protection) and never forwarded is nobody's session.
The header text is checked as headless Chromium renders the page."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client

from mcptap.check.reannotated import Reannotated
from mcptap.show.html import report_data
from test_html_report import CHROMIUM, dom, run
from test_http_sdk import sdk_server, tapped

pytestmark = pytest.mark.e2e
REBINDING = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "rebinding-page", "version": "6.6"}}}


async def _session(tmp_path: Path, mode: str, *server_args: str) -> Path:
    cap = tmp_path / f"{mode}.jsonl"
    async with sdk_server("streamable-http", *server_args) as base, tapped(base + "/mcp", cap) as (url, _):
        async with Client(url, mode=mode) as client:
            await client.list_tools()
        async with httpx.AsyncClient() as raw:     # a page on a rebinding name: refused by the tap, never forwarded
            r = await raw.post(url, json=REBINDING, headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"})
            assert r.status_code == 403
    return cap


def _sessions(cap: Path) -> list[dict]:
    ra = Reannotated.open(str(cap))
    return report_data(ra.header, ra)["meta"]["sessions"]


def _headers(cap: Path, tmp_path: Path) -> list[str]:
    if CHROMIUM is None:
        return []
    out = tmp_path / (cap.stem + ".html")
    assert run("report", str(cap), "-o", str(out)).exit_code == 0
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h2>(session .*?)</h2>", dom(out))]


async def test_stateless_2026_07_28_session_is_labelled_from_per_request_meta(tmp_path: Path) -> None:
    cap = await _session(tmp_path, "auto", "--stateless", "--json")
    (s,) = _sessions(cap)
    assert s["label"] == "(no Mcp-Session-Id)" and s["session"] is None
    assert s["client"]["clientInfo"]["name"] == "mcp"
    assert s["server"]["serverInfo"]["name"] == "e2e-sdk-server"
    assert s["revision"] == "2026-07-28" and s["via"] == "server/discover"
    if CHROMIUM is not None:
        (h,) = _headers(cap, tmp_path)
        assert re.fullmatch(r"session \(no Mcp-Session-Id\): mcp \S+ → e2e-sdk-server 1\.0\.0, revision 2026-07-28 \(server/discover\)", h), h


async def test_stateful_initialize_session_ignores_the_refused_request(tmp_path: Path) -> None:
    cap = await _session(tmp_path, "legacy")
    (s,) = _sessions(cap)
    assert isinstance(s["session"], str) and s["label"] == s["session"]
    assert s["client"]["clientInfo"]["name"] == "mcp" and s["server"]["serverInfo"]["name"] == "e2e-sdk-server"
    assert s["revision"] == s["server"]["protocolVersion"] != "2024-11-05" and s["via"] == "initialize"
    for h in _headers(cap, tmp_path):
        assert "rebinding-page" not in h and "?" not in h, h


@pytest.mark.parametrize(("mode", "args"), [("legacy", ()), ("auto", ("--stateless", "--json"))])
async def test_show_json_gives_the_reports_session_identities(tmp_path: Path, mode: str, args: tuple[str, ...]) -> None:
    """``show --format json``: its summary's ``sessions`` is what the report's session headers
    show, whatever the filter (the identity comes from initialize / server/discover, which a filter
    may hide); the records' ``session`` keys name them."""
    import orjson

    cap = await _session(tmp_path, mode, *args)
    want = _sessions(cap)
    for flt in ([], ["-f", "~m tools/list"]):
        res = run("show", str(cap), "--format", "json", *flt)
        assert res.exit_code == 0, res.output
        lines = [orjson.loads(x) for x in res.output.splitlines()]
        summary = lines[-1]
        assert summary["type"] == "summary" and summary["sessions"] == want
        keys = {r.get("session") for r in lines if r.get("type") == "message" and r.get("method") == "tools/list"}
        assert keys == {s["session"] for s in want}
        assert "rebinding-page" not in orjson.dumps(summary["sessions"]).decode()
