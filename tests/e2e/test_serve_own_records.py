"""`serve --listen -o`: the mock's own capture holds the record kinds the tap's capture holds for
the same exchanges, and is judged the same.

The official SDK client runs the serve scenario against the official SDK server through the real
HTTP tap (Streamable HTTP and the legacy HTTP+SSE transport), then against the mock of that capture
recording its own traffic. The mock's own answers (JSON bodies, 202s, event streams) used to write
no ``end`` record: only the answers it replayed as recorded had one. Then it wrote no ``conn_close``
record and its ``end`` records lacked the tap's ``request_bytes``, ``conn``, ``session`` and
``duration_us``; a GET's or DELETE's refusal with a JSON body (the SDK server's 400 for a request
with no session) was a ``response_body`` record where the tap frames it as a ``message``; and a
legacy session's id was recorded in clear (``session`` fields, the endpoint event) where the tap
records its keyed placeholder.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import pytest
import trio
from mcp import Client
from mcp.client.sse import sse_client

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening
from serve_scenario import steps

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"
HANG = 60


def _client(url: str, legacy: bool) -> Client:
    return Client(sse_client(url) if legacy else url, mode="legacy")


async def _refusals(url: str) -> list[Any]:
    """A GET and a DELETE with no session header: the SDK server refuses each with 400 and a JSON body."""
    async with httpx.AsyncClient(timeout=30) as http:
        got = await http.get(url, headers={"Accept": "text/event-stream"})
        gone = await http.delete(url)
    return [(r.status_code, r.content) for r in (got, gone)]


async def _run(rec: Recorder, serve: Any, legacy: bool) -> Any:
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve)
        with trio.fail_after(HANG):
            async with _client(url, legacy) as client:
                got = await steps(client)
            if not legacy:
                got["refusals"] = await _refusals(url)
        nursery.cancel_scope.cancel()
    rec.close()
    return got


def _recorder(path: Path, url: str) -> Recorder:
    return Recorder(CaptureWriter.open(str(path)), "http", {"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())


def _kinds(path: Path) -> Counter[tuple[str, tuple[str, ...]]]:
    """Per exchange: its method and the kinds of its http records (each once), counted over the capture."""
    by: dict[Any, dict[str, Any]] = {}
    for r in read_capture(str(path)).records:
        if r.get("type") == "http" and r.get("exchange") is not None:
            x = by.setdefault(r["exchange"], {"method": "", "events": set()})
            x["events"].add(r.get("event"))
            x["method"] = r.get("method") or x["method"]
    return Counter((x["method"], tuple(sorted(x["events"]))) for x in by.values())


def _records(path: Path) -> Counter[tuple[Any, ...]]:
    """Each record's type, event or message kind, stream (a message's), and its field names (but for those only the tap
    writes: its upstream's HTTP version and reason phrase, the latency of the upstream's head, the
    body chunks it forwarded, the Host it rewrote, a reused upstream connection, the findings' SSE
    framing and a message's place in the upstream's byte stream), counted over the capture."""
    tap_only = {"version", "reason", "latency_us", "chunks", "host_rewritten", "reused_connection", "findings", "offset", "detail"}
    out: Counter[tuple[Any, ...]] = Counter()
    for r in read_capture(str(path)).records:
        if r.get("type") in ("http", "message"):
            stream = r["transport"].get("stream") if isinstance(r.get("transport"), dict) else None      # a message's
            out[(r["type"], r.get("event") or r.get("kind"), stream, tuple(sorted(set(r) - tap_only - {"seq", "t_us"})))] += 1
    return out


def _sessions(path: Path) -> set[Any]:
    """The session fields of the capture's records."""
    return {r.get("session") for r in read_capture(str(path)).records if r.get("type") in ("http", "message")} - {None}


def _codes(path: Path) -> list[str]:
    """The findings' codes, but for the SSE framing's (``sse.*``: the mock frames its events its own way,
    LF line ends where the SDK server writes CRLF)."""
    return sorted(f["code"] for r in read_capture(str(path)).records for f in r.get("findings", ()) if not f["code"].startswith("sse."))


@pytest.mark.parametrize("legacy", [False, True], ids=["streamable-http", "legacy-http+sse"])
async def test_the_mocks_capture_has_the_taps_record_kinds_and_findings(tmp_path: Path, legacy: bool) -> None:
    cap, own = tmp_path / "cap.jsonl", tmp_path / "own.jsonl"
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "sse" if legacy else "streamable-http"], port):
        upstream = f"http://127.0.0.1:{port}" + ("/sse" if legacy else "/mcp")
        rec = _recorder(cap, upstream)
        live = await _run(rec, HttpTap(HttpTapConfig(upstream=upstream), rec).serve, legacy)
    rec = _recorder(own, "mock")
    served = await _run(rec, HttpMock(ServeCore(script_from_path(str(cap))), rec).serve, legacy)
    assert served == live
    assert any(m == "POST" and "end" in kinds for m, kinds in _kinds(cap)), _kinds(cap)
    assert _kinds(own) == _kinds(cap), (_kinds(own), _kinds(cap))
    assert _codes(own) == _codes(cap), (_codes(own), _codes(cap))
    assert _records(own) == _records(cap), (_records(own) - _records(cap), _records(cap) - _records(own))
    if legacy:        # a legacy session's id is a credential: its keyed placeholder, in every record as in the URLs
        assert all(str(s).startswith("«redacted:hmac:") for s in _sessions(own)), _sessions(own)
        assert all(str(s).startswith("«redacted:hmac:") for s in _sessions(cap)), _sessions(cap)
