"""A request the HTTP tap refused itself (a DNS rebinding page: ``Host: evil.example``, 403) never
reached the server: it takes no part in the lifecycle of the session it names. Live (the capture
the tap writes) and re-annotated (show), it has no phase and no lifecycle finding, and it does
not advance the session: the real client's handshake is judged as if it had not been sent.

Real peers: the SDK's Streamable HTTP server behind the tap, a raw HTTP client speaking the
handshake step by step so the refused requests fall between its steps."""

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


async def _post(http: httpx.AsyncClient, url: str, body: dict[str, Any], session: str | None = None, host: str | None = None) -> httpx.Response:
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": "2025-06-18"}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    if host is not None:
        headers["Host"] = host
    return await http.post(url, json=body, headers=headers)


async def _capture(tmp_path: Path) -> Path:
    """initialize (answered); then, refused, a rebinding page's notifications/initialized and
    initialize naming the live session; then the client's tools/list, before its own
    notifications/initialized, which it sends last."""
    cap = tmp_path / "refused.jsonl"
    async with sdk_server("streamable-http") as base, tapped(base + "/mcp", cap) as (url, _), httpx.AsyncClient() as http:
        r = await _post(http, url, INIT)
        assert r.status_code == 200
        sid = r.headers["mcp-session-id"]
        page = {"host": "evil.example", "session": sid}
        assert (await _post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **page)).status_code == 403
        assert (await _post(http, url, dict(INIT, id=7), **page)).status_code == 403
        await _post(http, url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        await _post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=sid)
    return cap


def _messages(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("type") == "message" and r.get("dir") == "c2s"]


async def test_a_request_the_tap_refused_does_not_take_part_in_the_lifecycle(tmp_path: Path) -> None:
    cap = await _capture(tmp_path)
    live = _messages(read_capture(str(cap)).records)
    res = run("show", str(cap), "--format", "json")
    assert res.exit_code == 0, res.output
    shown = _messages([orjson.loads(x) for x in res.output.splitlines()])
    for msgs in (live, shown):
        assert [(m.get("method"), m.get("id")) for m in msgs] == [
            ("initialize", 1), ("notifications/initialized", None), ("initialize", 7), ("tools/list", 2), ("notifications/initialized", None)]
        _, page_initialized, page_initialize, tools_list, initialized = msgs
        for refused in (page_initialized, page_initialize):
            assert refused["transport"]["refused"] == "host_rejected"
            assert "phase" not in refused
            assert not [f for f in refused.get("findings", ()) if f["code"].startswith("lifecycle.")], refused
        # the refused notifications/initialized did not complete the handshake: the client's
        # tools/list came before its own, and is judged so
        assert tools_list["phase"] == "initialized"
        assert "lifecycle.initialized_missing" in [f["code"] for f in tools_list.get("findings", ())], tools_list
        assert "refused" not in initialized["transport"] and initialized["phase"] == "initialized"
