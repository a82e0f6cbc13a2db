"""`serve --listen -o`: the mock's own capture counts what it received and sent, as the tap's end
record counts what it forwarded. It used to show 0 bytes for both directions (the HTTP mock framed
its messages but never told the recorder the bytes).

Captures recorded from the official SDK server through the real HTTP tap (Streamable HTTP and the
legacy HTTP+SSE transport) are served to the official SDK client through a counting TCP relay:
the end record's byte counts are the relay's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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


def _client(url: str, legacy: bool) -> Client:
    return Client(sse_client(url) if legacy else url, mode="legacy")


class CountingRelay:
    """A TCP relay to ``port`` counting the bytes it passes each way (``c2s``, ``s2c``)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.counts = {"c2s": 0, "s2c": 0}
        self.open = 0
        self.idle = trio.Event()

    async def _pump(self, src: trio.SocketStream, dst: trio.SocketStream, way: str) -> None:
        try:
            while data := await src.receive_some(65536):
                self.counts[way] += len(data)
                await dst.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await dst.aclose()

    async def handle(self, client: trio.SocketStream) -> None:
        self.open += 1
        self.idle = trio.Event()
        try:
            upstream = await trio.open_tcp_stream("127.0.0.1", self.port)
            async with trio.open_nursery() as n:
                n.start_soon(self._pump, client, upstream, "c2s")
                n.start_soon(self._pump, upstream, client, "s2c")
        finally:
            self.open -= 1
            if not self.open:
                self.idle.set()


async def _record(cap: Path, legacy: bool) -> None:
    port = free_port()
    args = ("sse",) if legacy else ("streamable-http",)
    async with listening([sys.executable, str(SERVER), str(port), *args], port):
        upstream = f"http://127.0.0.1:{port}" + ("/sse" if legacy else "/mcp")
        rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec).serve)
            async with _client(url, legacy) as client:
                await steps(client)
            nursery.cancel_scope.cancel()
        rec.close()


@pytest.mark.parametrize("legacy", [False, True], ids=["streamable-http", "legacy-http+sse"])
async def test_the_mocks_end_record_counts_the_bytes_it_received_and_sent(tmp_path: Path, legacy: bool) -> None:
    cap, own = tmp_path / "cap.jsonl", tmp_path / "own.jsonl"
    await _record(cap, legacy)
    rec = Recorder(CaptureWriter.open(str(own)), "http", {"url": "mock"}, clock=monotonic_us_clock(), started=utc_timestamp())
    mock = HttpMock(ServeCore(script_from_path(str(cap))), rec)
    async with trio.open_nursery() as nursery:
        url: Any = await nursery.start(mock.serve)
        port = int(url.split(":")[2].split("/")[0])
        relay = CountingRelay(port)
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        rport = listeners[0].socket.getsockname()[1]
        await nursery.start(trio.serve_listeners, relay.handle, listeners)
        async with _client(url.replace(f":{port}/", f":{rport}/"), legacy) as client:
            served = await steps(client)
        with trio.fail_after(30):
            await relay.idle.wait()            # every connection closed both ways: all bytes passed
        nursery.cancel_scope.cancel()
    rec.close()
    assert served["answers"]["echo"] == "héllo ☕"
    end = read_capture(str(own)).end
    assert end is not None
    assert (end["c2s"]["bytes"], end["s2c"]["bytes"]) == (relay.counts["c2s"], relay.counts["s2c"]), (end, relay.counts)
    assert relay.counts["c2s"] > 0 and relay.counts["s2c"] > 0
