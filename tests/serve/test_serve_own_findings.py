"""The mock's own ``-o`` capture carries the HTTP findings ``check --full`` gives it.

The mock recorded its ``http`` records and the client's POST bodies without judging them,
so ``check`` of its capture (the recorded annotations) said nothing of a client whose POST
``Accept`` names only ``application/json`` while ``check --full`` (re-annotation,
``protocol/http_replay.py``) reported ``http.post_accept_incomplete`` for each such POST —
which the transports spec asks of every POST (``Accept`` MUST list both types). The mock
now judges its records with that same re-annotation judge, so both agree, on this finding
and on the rest of the HTTP layer (GET ``Accept``, request media types, response heads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import orjson
import trio
from click.testing import CliRunner

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from tests.serve._endings_helpers import call, capture

BOTH = "application/json, text/event-stream"


def _codes(path: Path, *full: str) -> dict[str, int]:
    r = CliRunner().invoke(mcptap, ["check", *full, "--format", "json", "--fail-on", "never", str(path)])
    assert r.exit_code == 0, r.output
    return {c["code"]: c["count"] for c in orjson.loads(r.stdout)["captures"][0]["codes"]}


async def _session(cap: Path, own: Path) -> None:
    rec = Recorder(CaptureWriter.open(str(own)), "http", {"served_from": str(cap)}, clock=monotonic_us_clock(), started=utc_timestamp())
    server = HttpMock(ServeCore(script_from_path(str(cap))), rec)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        async with httpx.AsyncClient(timeout=30) as http:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
            r = await http.post(url, json=init, headers={"Accept": BOTH})
            hs = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
            # a client that names only JSON: a notification's POST and a request's
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**hs, "Accept": "application/json"})
            await http.post(url, json=call(3, "forbid"), headers={**hs, "Accept": "application/json"})
            await http.post(url, json=call(4, "gone"), headers={**hs, "Accept": BOTH})
            body = orjson.dumps(call(5, "auth"))
            await http.post(url, content=body, headers={**hs, "Accept": BOTH, "Content-Type": "Application/JSON; charset=utf-8"})
            async with http.stream("GET", url, headers={**hs, "Accept": "*/*"}) as resp:
                assert resp.status_code == 200
        nursery.cancel_scope.cancel()
    rec.close()


async def test_the_mocks_capture_has_the_http_findings_check_full_gives(tmp_path: Path) -> None:
    own = tmp_path / "own.jsonl"
    await _session(capture(tmp_path / "cap.jsonl"), own)
    recorded, full = _codes(own), _codes(own, "--full")
    assert recorded.get("http.post_accept_incomplete") == 2, recorded
    assert recorded.get("http.get_accept_missing_event_stream") == 1 and recorded.get("http.content_type_params") == 1, recorded
    # the client sent the mock's session id each time (recorded as the tap records it), and the 403's
    # body is an HTTP error object on its status, not a broken JSON-RPC message
    assert "http.session_id_missing" not in full and "jsonrpc.invalid_version" not in full and full.get("http.error_body") == 1, full
    http_layer = {k: v for k, v in full.items() if k.startswith("http.")}
    assert {k: v for k, v in recorded.items() if k.startswith("http.")} == http_layer, (recorded, full)
    end: dict[str, Any] = read_capture(str(own)).end or {}
    assert end["codes"].get("http.post_accept_incomplete") == 2        # ls shows it too
