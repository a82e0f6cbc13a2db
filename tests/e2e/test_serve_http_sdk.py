"""End to end over HTTP: captures recorded from the official SDK server through
the real HTTP tap (Streamable HTTP in SSE and JSON-response modes, both eras,
and the legacy HTTP+SSE transport) served by `mcptap serve --listen`; the
official SDK client gets, step by step, exactly what the real server gave.
A busy port is a one-line error."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from mcp import Client
from mcp.client.sse import sse_client

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening
from serve_scenario import steps

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).parent / "sdk_server.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]

#: name -> (sdk_server.py transport args, client mode)
MODES = {
    "sse-legacy": (("streamable-http",), "legacy"),
    "sse-modern": (("streamable-http",), "auto"),
    "json-legacy": (("streamable-http", "--json"), "legacy"),
    "legacy-http+sse": (("sse",), "legacy"),
}


def _client(url: str, name: str) -> Client:
    args, mode = MODES[name]
    return Client(sse_client(url) if args == ("sse",) else url, mode=mode)


async def record_http(name: str, cap: Path) -> dict:
    """Run the serve scenario against the real SDK server through the HTTP tap."""
    args, _ = MODES[name]
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), *args], port):
        upstream = f"http://127.0.0.1:{port}" + ("/sse" if args == ("sse",) else "/mcp")
        rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec).serve)
            async with _client(url, name) as client:
                answers = await steps(client)
            nursery.cancel_scope.cancel()
        rec.close()
    return answers


@asynccontextmanager
async def serving(cap: Path, *extra: str) -> AsyncIterator[str]:
    """`mcptap serve CAP --listen 127.0.0.1:0 …` in a subprocess; yields its URL."""
    proc = await trio.lowlevel.open_process([*MCPTAP, "serve", str(cap), "--listen", "127.0.0.1:0", *extra],
                                            stderr=subprocess.PIPE)
    try:
        buf = b""
        assert proc.stderr is not None
        with trio.fail_after(30):
            while b"\n" not in buf:
                chunk = await proc.stderr.receive_some(4096)
                assert chunk, f"mcptap serve exited: {buf!r}"
                buf += chunk
        m = re.search(rb"serving .* on (http://\S+)", buf)
        assert m, buf
        yield m.group(1).decode()
    finally:
        proc.terminate()
        with trio.fail_after(10):
            assert await proc.wait() == 0


@pytest.mark.parametrize("name", MODES)
async def test_sdk_client_gets_every_recorded_answer_over_http(name: str, tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    real = await record_http(name, cap)
    assert real["answers"]["echo"] == "héllo ☕"
    own = tmp_path / "own.jsonl"
    # one mode also with the recorded delays (scaled), through the delayed-output path
    extra = ("--latency", "recorded", "--speed", "4") if name == "sse-legacy" else ()
    async with serving(cap, "-o", str(own), *extra) as url:
        async with _client(url, name) as client:
            served = await steps(client)
    assert served == real
    mine = read_capture(str(own))
    assert mine.header["transport"] == "http" and mine.end is not None
    assert not [f for r in mine.records for f in r.get("findings", ()) if f["code"] == "serve.no_recorded_answer"]
    if "json" not in name:
        assert served["progress"] == [1.0, 2.0, 3.0]


async def test_serving_on_a_busy_port_is_a_one_line_error(tmp_path: Path) -> None:
    from scripted import c2s, handshake, record, req, res, s2c

    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    try:
        proc = await trio.run_process([*MCPTAP, "serve", str(cap), "--listen", f"127.0.0.1:{port}"],
                                      capture_stdout=True, capture_stderr=True, check=False)
    finally:
        await listeners[0].aclose()
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("mcptap: cannot listen on 127.0.0.1:") and err.count("\n") == 1, err


async def test_serve_records_no_client_credential_in_clear(tmp_path: Path) -> None:
    """`serve --listen -o`: the client under test may send a real token (header,
    query): the mock's capture holds placeholders, as the tap's do."""
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    cap = tmp_path / "cap.jsonl"
    await record_http("sse-modern", cap)
    own = tmp_path / "own.jsonl"
    async with serving(cap, "-o", str(own)) as url:
        async with create_mcp_http_client(headers={"Authorization": "Bearer hSECRET-0815-xyz", "X-Api-Key": "kSECRET-42-abcdef"}) as http:
            async with Client(streamable_http_client(url + "?token=qSECRET-4711-abc", http_client=http)) as client:
                assert (await client.list_tools()).tools
    text = own.read_text()
    assert "«redacted:hmac:" in text
    for s in ("hSECRET-0815-xyz", "kSECRET-42-abcdef", "qSECRET-4711-abc"):
        assert s not in text, s
