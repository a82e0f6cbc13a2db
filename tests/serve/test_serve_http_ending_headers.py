"""Recorded HTTP endings replayed by ``serve --listen`` (serve/script_http.py), found by
trying to break them (landed breaker):

* a recorded header value that is not ASCII (a server's obs-text ``X-Note: café``, or the
  tap's ``Set-Cookie: auth=«redacted:hmac:…»``) made h11 raise UnicodeEncodeError, and that
  took the whole mock down (every later request refused); values now go out as the latin-1
  bytes the tap recorded them from, placeholders are never sent as a server's values, and a
  fault of the mock's own while answering one request closes that connection only (exit 1);
* a capture of a server that refused every request (401 to each POST, initialize included)
  was "no recorded server messages to serve": it is served, each refusal as recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson
import pytest
import trio

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.serve import load_script
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from tests.serve._endings_helpers import ACCEPT, CHALLENGE, call, capture

C2S = Direction.C2S
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}


def _refusing(path: Path, headers: list[list[str]], calls: int = 1) -> Path:
    """A capture of a server that answered every POST 401 with ``headers``."""
    t = {"now": 0}

    def clock() -> int:
        t["now"] += 1000
        return t["now"]

    rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "http://upstream/mcp"}, clock=clock, started="2026-01-01T00:00:00.000000Z")
    for ex, msg in enumerate([INIT, *(call(10 + i, "x") for i in range(calls))], start=1):
        rec.http(event="request", exchange=ex, conn=1, method="POST", target="/mcp", headers=[["Accept", ACCEPT["Accept"]]])
        rec.frame(C2S, orjson.dumps(msg), transport={"exchange": ex, "stream": "post"})
        rec.http(event="response", exchange=ex, conn=1, status=401, headers=[["Content-Length", "0"], *headers])
        rec.http(event="end", exchange=ex, conn=1, how="complete")
    rec.close()
    return path


async def _with_mock(cap: Path, own: Path, body: Any) -> HttpMock:
    rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
    said: list[str] = []
    server = HttpMock(ServeCore(load_script(str(cap))), rec, say=said.append)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        async with httpx.AsyncClient(timeout=30) as http:
            await body(http, url)
        nursery.cancel_scope.cancel()
    rec.close()
    server.said = said      # type: ignore[attr-defined]
    return server


async def test_a_server_that_refused_everything_is_served_with_its_refusals(tmp_path: Path) -> None:
    cap = _refusing(tmp_path / "cap.jsonl", [["WWW-Authenticate", CHALLENGE]])
    got: list[httpx.Response] = []
    mock: list[str] = []

    async def body(http: httpx.AsyncClient, url: str) -> None:
        mock.append(url.removesuffix("/mcp"))
        got.append(await http.post(url, json=INIT, headers=ACCEPT))
        got.append(await http.post(url, json=call(10, "x"), headers=ACCEPT))

    server = await _with_mock(cap, tmp_path / "own.jsonl", body)
    assert [r.status_code for r in got] == [401, 401]
    # resource_metadata on the mock's origin (the recorded upstream's was http://upstream), and what it cannot do said
    assert all(r.headers["www-authenticate"] == CHALLENGE.replace("http://upstream", mock[0]) for r in got)
    assert any("does not hold" in line for line in server.said), server.said  # type: ignore[attr-defined]


async def test_non_ascii_and_placeholder_header_values(tmp_path: Path) -> None:
    cap = _refusing(tmp_path / "cap.jsonl", [["X-Note", "café"], ["Set-Cookie", "auth=«redacted:hmac:a30727578fa6»"],
                                              ["WWW-Authenticate", CHALLENGE]], calls=2)
    got: list[httpx.Response] = []

    async def body(http: httpx.AsyncClient, url: str) -> None:
        for m in (INIT, call(10, "x"), call(11, "x")):
            got.append(await http.post(url, json=m, headers=ACCEPT))

    mock = await _with_mock(cap, tmp_path / "own.jsonl", body)
    assert [r.status_code for r in got] == [401, 401, 401] and mock.internal_errors == 0
    assert all(r.headers.raw.count((b"X-Note", b"caf\xe9")) == 1 for r in got)        # the bytes the server sent
    assert all("set-cookie" not in r.headers for r in got)                          # never a placeholder as a cookie
    own = read_capture(str(tmp_path / "own.jsonl")).records
    assert [r["status"] for r in own if r.get("type") == "http" and r.get("event") == "response"] == [401, 401, 401]


async def test_a_fault_answering_one_request_closes_only_its_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no real peer makes the mock fail on demand: one answer raises, as the non-ASCII header once did
    cap = capture(tmp_path / "cap.jsonl")
    real = HttpMock._ended
    calls = {"n": 0}

    async def once(self: HttpMock, *a: Any, **kw: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise UnicodeEncodeError("ascii", "«", 0, 1, "ordinal not in range(128)")
        await real(self, *a, **kw)

    monkeypatch.setattr(HttpMock, "_ended", once)
    got: list[Any] = []

    async def body(http: httpx.AsyncClient, url: str) -> None:
        r = await http.post(url, json=INIT, headers=ACCEPT)
        hs = {**ACCEPT, "Mcp-Session-Id": r.headers["mcp-session-id"]}
        try:
            await http.post(url, json=call(100, "auth"), headers=hs)
        except httpx.RemoteProtocolError as exc:
            got.append(exc)
        got.append((await http.post(url, json=call(101, "forbid"), headers=hs)).status_code)     # still serving

    mock = await _with_mock(cap, tmp_path / "own.jsonl", body)
    assert isinstance(got[0], httpx.RemoteProtocolError) and got[1] == 403
    assert mock.internal_errors == 1 and any("internal error answering a request" in x for x in mock.said)  # type: ignore[attr-defined]
    notes = [r for r in read_capture(str(tmp_path / "own.jsonl")).records if r.get("type") == "note"]
    assert any("UnicodeEncodeError" in r.get("message", "") for r in notes)
