"""Record an SDK client session over Streamable HTTP through the real HTTP tap
(in process) — ``python http_record.py ERA OUT SERVER_VERSION`` — and helpers
to run the SDK server over HTTP on a free loopback port."""

from __future__ import annotations

import sys
import sys as _sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

_sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening

HERE = Path(__file__).resolve().parent



@asynccontextmanager
async def http_server(version: str) -> AsyncIterator[str]:
    """The SDK test server (tests/replay/sdk_server.py) on HTTP; yields its MCP URL."""
    port = free_port()
    async with listening([sys.executable, str(HERE / "sdk_server.py"), version, "--http", str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


async def record_http(era: str, out: str, version: str) -> None:
    """The SDK client scenario (sdk_client.py) through the HTTP tap into ``out``."""
    async with http_server(version) as upstream:
        rec = Recorder(CaptureWriter.open(out), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            tap = HttpTap(HttpTapConfig(upstream=upstream), rec, say=lambda line: None)
            url = await nursery.start(tap.serve)
            proc = await trio.run_process([sys.executable, str(HERE / "sdk_client.py"), era, "--url", url],
                                          capture_stdout=True, capture_stderr=True, check=False)
            assert proc.returncode == 0, proc.stderr.decode()[-3000:]
            nursery.cancel_scope.cancel()
        rec.close()


if __name__ == "__main__":
    trio.run(record_http, sys.argv[1], sys.argv[2], sys.argv[3])
