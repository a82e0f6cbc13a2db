"""End to end through the real HTTP tap with the official SDK server (and the
SDK client where it can reach the fault): what the tap relays, what it
records live, and that `check --full` (HTTP layer re-judged from the records)
gives exactly the live findings."""

from __future__ import annotations

import json
from pathlib import Path

import h11
import pytest
import trio

from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.reannotate import reannotate
from test_http_sdk import sdk_server, tapped

pytestmark = pytest.mark.e2e

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "form", "version": "1"}}}
ACCEPT = "application/json, text/event-stream"


async def request(url: str, method: str, headers: list[tuple[str, str]], body: bytes = b"") -> tuple[list[tuple[int, list]], bytes]:
    """One HTTP/1.1 exchange with the tap on a fresh connection: the responses
    (informational ones first) as (status, headers) and the final body."""
    authority, _, path = url.split("//")[1].partition("/")
    host, port = authority.rsplit(":", 1)
    s = await trio.open_tcp_stream(host, int(port))
    c = h11.Connection(h11.CLIENT)
    hdrs = [("Host", authority), *headers] + ([("Content-Length", str(len(body)))] if method == "POST" else [])
    await s.send_all(c.send(h11.Request(method=method, target="/" + path, headers=hdrs)))
    if body:
        await s.send_all(c.send(h11.Data(data=body)))
    await s.send_all(c.send(h11.EndOfMessage()))
    heads, out = [], b""
    with trio.fail_after(10):
        while True:
            ev = c.next_event()
            if ev is h11.NEED_DATA:
                c.receive_data(await s.receive_some(65536))
            elif isinstance(ev, (h11.Response, h11.InformationalResponse)):
                heads.append((ev.status_code, [(n.decode(), v.decode()) for n, v in ev.headers.raw_items()]))
            elif isinstance(ev, h11.Data):
                out += ev.data
            elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
    await s.aclose()
    return heads, out


def findings_live_and_full(path: Path) -> tuple[list[tuple], list[tuple]]:
    """Every record's findings (seq, type, event, code, severity, message, data) as
    recorded live and as `check --full` derives them again."""
    def key(recs):
        return [(r.get("seq"), r["type"], r.get("event"), f["code"], f["severity"], f["message"], json.dumps(f.get("data"), sort_keys=True))
                for r in recs if r["type"] != "end" for f in r.get("findings", ())]
    live = read_capture(str(path)).records
    stream = CaptureStream(str(path))
    return key(live), key(reannotate(stream.header, stream, shapes=False, reuse=False))


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz", None])
async def test_a_jsonrpc_post_sent_as_a_form_is_flagged_live_and_under_check_full(tmp_path: Path, ctype: str | None) -> None:
    """A JSON-RPC POST with a form Content-Type (the shape a web page can send
    cross-site without a CORS preflight) or none: relayed unchanged, the SDK
    server refuses it (400 "Invalid Content-Type header"), and the capture says why (http.post_content_type_not_json,
    naming the Origin), not that the server rejected a valid media type."""
    cap = tmp_path / "cap.jsonl"
    body = json.dumps(INIT).encode()
    headers = [("accept", ACCEPT), ("origin", "http://evil.example")] + ([("content-type", ctype)] if ctype is not None else [])
    async with sdk_server("streamable-http") as base, tapped(base + "/mcp", cap) as (url, _tap):
        refused, _ = await request(url, "POST", headers, body)
        ok, _ = await request(url, "POST", [("accept", ACCEPT), ("content-type", "application/json")], body)
    assert refused[-1][0] in (400, 403, 415) and ok[-1][0] == 200      # the SDK: 400 "Invalid Content-Type header"
    live, full = findings_live_and_full(cap)
    assert live == full
    flagged = [f for f in live if f[3] == "http.post_content_type_not_json"]
    assert len(flagged) == 1 and flagged[0][4] == "error"
    assert json.loads(flagged[0][6]) == {"content_type": ctype, "origin": "http://evil.example"}
    if ctype is not None:
        assert "'http://evil.example'" in flagged[0][5] and "CORS preflight" in flagged[0][5]
    assert not [f for f in live if f[3] == "http.media_type_rejected"]
    sent = [r for r in read_capture(str(cap)).records if r["type"] == "http" and r["event"] == "request"][0]
    assert ("content-type", ctype) in [tuple(h) for h in sent["headers"]] or ctype is None
