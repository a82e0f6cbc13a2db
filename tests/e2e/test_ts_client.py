"""A non-Python client: the official TypeScript SDK client (npm
@modelcontextprotocol/sdk, installed with server-everything) talks Streamable
HTTP to the Python SDK server through the tap. The capture is complete, every
request is paired, and neither the live annotations nor `check --full` (HTTP
layer re-judged from the records) give an error or warn finding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening
from test_everything_http import CACHE, ensure_everything

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent
SDK = CACHE / "node_modules" / "@modelcontextprotocol" / "sdk" / "dist" / "cjs"


async def test_typescript_sdk_client_over_streamable_http(tmp_path: Path) -> None:
    ensure_everything()
    if not (SDK / "client" / "streamableHttp.js").exists():
        pytest.skip(f"TypeScript SDK not found at {SDK}")
    cap = tmp_path / "cap.jsonl"
    port = free_port()
    async with listening([sys.executable, str(HERE / "sdk_server.py"), str(port), "streamable-http"], port):
        upstream = f"http://127.0.0.1:{port}/mcp"
        rec = Recorder(CaptureWriter.open(str(cap)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
        async with trio.open_nursery() as nursery:
            url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec, say=lambda _: None).serve)
            r = await trio.to_thread.run_sync(lambda: subprocess.run(["node", str(HERE / "ts_client.cjs"), str(SDK), url],
                                                                     capture_output=True, timeout=120))
            nursery.cancel_scope.cancel()
        rec.close()
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-500:]
    c = read_capture(str(cap))
    msgs = [m for m in c.records if m["type"] == "message"]
    assert msgs and msgs[0]["method"] == "initialize"
    reqs = {m["seq"] for m in msgs if m["kind"] == "request"}
    assert reqs <= {m["pair"] for m in msgs if "pair" in m}
    bad = [(m["seq"], f["code"]) for m in c.records for f in m.get("findings", ()) if f["severity"] in ("error", "warn")]
    assert bad == [], bad
    stream = CaptureStream(str(cap))
    again = [(m["seq"], f["code"]) for m in reannotate(stream.header, stream, shapes=True, reuse=False)
             for f in m.get("findings", ()) if isinstance(f, dict) and f["severity"] in ("error", "warn")]
    assert again == [], again
