"""HAR of a capture written by ``serve --listen -o`` (the mock's own session): no ``latency_us``
on responses (and, before the mock wrote them, no end records). Every entry's time once ran to the end of the
whole capture (a mock that stayed up a second after its client: each answer ">1 s"),
``bodySize`` was -1 beside a Content-Length, and ``cookies`` was [] beside a Cookie header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import trio
from jsonschema import Draft6Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT6

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.export.har import har_of
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "tests" / "data" / "har-schema"
ACCEPT = {"Accept": "application/json, text/event-stream"}


def har_validator() -> Draft6Validator:
    docs = [json.loads(p.read_text()) for p in SCHEMA_DIR.glob("*.json")]
    registry = Registry().with_resources(
        (d["$id"].rstrip("#"), Resource.from_contents(d, default_specification=DRAFT6)) for d in docs)
    root = json.loads((SCHEMA_DIR / "har.json").read_text())
    return Draft6Validator(root, registry=registry, format_checker=Draft6Validator.FORMAT_CHECKER)


async def test_serve_capture_har_timings_sizes_and_cookies(tmp_path: Path) -> None:
    out = tmp_path / "mock.jsonl"
    rec = Recorder(CaptureWriter.open(str(out)), "http", target={"served_from": "x"}, clock=monotonic_us_clock(),
                   started=utc_timestamp())
    server = HttpMock(ServeCore(script_from_path(str(ROOT / "captures" / "clean-2025-06-18.jsonl"))), rec=rec)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        async with httpx.AsyncClient(timeout=10) as http:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
            r = await http.post(url, json=init, headers={**ACCEPT, "Cookie": "sid=s3cr3t-cookie-value; theme=dark"})
            assert r.status_code == 200
            hs = {**ACCEPT, **({"Mcp-Session-Id": r.headers["mcp-session-id"]} if "mcp-session-id" in r.headers else {})}
            assert (await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hs)).status_code == 202
            assert (await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=hs)).status_code == 200
        await trio.sleep(1.0)               # the mock stays up after its client, as a user's does
        nursery.cancel_scope.cancel()
    rec.close(exit_code=0)
    cap = read_capture(str(out))
    # an end record per exchange, as a tap's capture has (an older mock wrote none: the records-only test below)
    assert len([r for r in cap.records if r.get("event") == "end"]) == 3
    har = har_of(cap.header, cap.records)
    assert sorted(map(str, har_validator().iter_errors(har))) == []
    entries = har["log"]["entries"]
    assert [e["response"]["status"] for e in entries] == [200, 202, 200]
    for e in entries:
        t = e["timings"]
        assert e["time"] < 500 and t["wait"] < 500, e["timings"]      # not to the end of the capture (>1000 ms)
        assert abs(e["time"] - (t["send"] + t["wait"] + t["receive"])) < 0.01 and min(t["send"], t["wait"], t["receive"]) >= 0
        length = next(h["value"] for h in e["response"]["headers"] if h["name"].lower() == "content-length")
        assert e["response"]["bodySize"] == int(length) == e["response"]["content"]["size"]
    cookies = entries[0]["request"]["cookies"]
    header = next(h["value"] for h in entries[0]["request"]["headers"] if h["name"].lower() == "cookie")
    assert "s3cr3t" not in json.dumps(har)
    assert [c["name"] for c in cookies] == ["sid", "theme"]
    assert header == "; ".join(f"{c['name']}={c['value']}" for c in cookies)     # redacted exactly as the header is
    assert cookies[0]["value"].startswith("«redacted:hmac:")


def _rec(seq: int, t: int, **kw: Any) -> dict[str, Any]:
    return {"seq": seq, "t_us": t, **kw}


def test_timings_come_from_the_exchange_own_records_whatever_wrote_them() -> None:
    header = {"started": "2026-01-02T03:04:05Z", "transport": "http", "target": {"served_from": "x"}}
    msg = {"type": "message", "dir": "s2c", "kind": "response", "json": {"jsonrpc": "2.0", "id": 1, "result": {}}, "eol": ""}
    recs = [
        # JSON mode: the mock records the answer, then the response head, then sends
        _rec(1, 1000, type="http", event="request", exchange=1, conn=1, method="POST", target="/mcp", headers=[]),
        _rec(2, 1050, type="message", dir="c2s", kind="request", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, eol="",
             transport={"exchange": 1, "stream": "post"}),
        _rec(3, 1300, **msg, transport={"exchange": 1, "stream": "post"}),
        _rec(4, 1400, type="http", event="response", exchange=1, status=200,
             headers=[["Content-Length", "36"], ["Content-Type", "application/json"],
                      ["Set-Cookie", "sid=«redacted:hmac:ab»; Path=/; Expires=Wed, 21 Oct 2015 07:28:00 GMT; HttpOnly; Secure"]]),
        # SSE mode: head first, the events after it
        _rec(5, 2000, type="http", event="request", exchange=2, conn=1, method="POST", target="/mcp", headers=[]),
        _rec(6, 2100, type="http", event="response", exchange=2, status=200, headers=[["Content-Type", "text/event-stream"]]),
        _rec(7, 2600, **msg, transport={"exchange": 2, "stream": "post", "sse": {"offset": 0}}),
        # something much later that belongs to neither
        _rec(8, 9_000_000, type="http", event="request", exchange=3, conn=2, method="GET", target="/mcp", headers=[]),
    ]
    one, two, three = har_of(header, recs)["log"]["entries"]
    assert one["timings"]["send"] == 0.05 and one["timings"]["wait"] == 0.35 and one["timings"]["receive"] == 0 and one["time"] == 0.4
    assert one["response"]["bodySize"] == 36
    assert one["response"]["cookies"] == [{"name": "sid", "value": "«redacted:hmac:ab»", "path": "/",
                                           "expires": "2015-10-21T07:28:00+00:00", "httpOnly": True, "secure": True}]
    assert two["timings"]["wait"] == 0.1 and two["timings"]["receive"] == 0.5 and two["time"] == 0.6
    assert two["response"]["bodySize"] == -1            # no Content-Length, no end record: unknown
    assert three["time"] == 0 and three["response"]["status"] == 0
