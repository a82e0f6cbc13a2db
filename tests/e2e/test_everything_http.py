"""The npm reference server (@modelcontextprotocol/server-everything) behind the
HTTP tap, in streamableHttp and sse modes, driven by the official SDK client.

The package is installed into .cache/node by npm on first use (the registry is
reachable in CI); the test skips with the reason when node/npm are missing or
the install fails. The server listens on all interfaces by default, so a
--require preload makes listen() default to 127.0.0.1 (design.md §8).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from mcp import Client
from mcp.client.sse import sse_client

from mcptap.capture.reader import CaptureStream, read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from peers import free_port, listening

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MCPTAP_NODE_CACHE", ROOT / ".cache" / "node"))
PKG = CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK = """
const net = require('net');
const orig = net.Server.prototype.listen;
net.Server.prototype.listen = function (...a) {
  if ((typeof a[0] === 'number' || /^\\d+$/.test(String(a[0]))) && (a.length === 1 || typeof a[1] === 'function')) a.splice(1, 0, '127.0.0.1');
  else if (a[0] && typeof a[0] === 'object' && !a[0].host && !a[0].path) a[0] = { ...a[0], host: '127.0.0.1' };
  return orig.apply(this, a);
};
"""


def ensure_everything() -> Path:
    if not PKG.exists():
        if not shutil.which("npm") or not shutil.which("node"):
            pytest.skip("node/npm not available")
        CACHE.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--loglevel=error",
                            "@modelcontextprotocol/server-everything"], capture_output=True, timeout=300)
        if r.returncode != 0 or not PKG.exists():
            pytest.skip(f"npm install of server-everything failed: {r.stderr.decode(errors='replace')[-300:]}")
    pre = CACHE / "loopback-test.cjs"
    pre.write_text(LOOPBACK)
    return pre


@asynccontextmanager
async def everything(mode: str):
    pre = ensure_everything()
    port = free_port()
    async with listening(["node", "--require", str(pre), str(PKG), mode], port, env={**os.environ, "PORT": str(port)}):
        yield f"http://127.0.0.1:{port}"


@asynccontextmanager
async def tapped(upstream: str, capture: Path):
    rec = Recorder(CaptureWriter.open(str(capture)), "http", {"url": upstream}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as nursery:
        url = await nursery.start(HttpTap(HttpTapConfig(upstream=upstream), rec, say=lambda _: None).serve)
        yield url
        nursery.cancel_scope.cancel()
    rec.close()


async def drive(client: Client) -> None:
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert "echo" in names and len(names) >= 5
    r = await client.call_tool("echo", {"message": "through the tap"})
    assert "through the tap" in r.content[0].text
    prompts = await client.list_prompts()
    assert prompts.prompts
    res = await client.list_resources()
    assert res.resources


def check(cap: Path) -> list[dict]:
    c = read_capture(str(cap))
    msgs = [r for r in c.records if r["type"] == "message"]
    reqs = {r["seq"] for r in msgs if r["kind"] == "request"}
    paired = {r["pair"] for r in msgs if "pair" in r}
    assert reqs and reqs <= paired, f"unpaired: {reqs - paired}"
    errors = [(r["seq"], f["code"]) for r in c.records for f in r.get("findings", ()) if f["severity"] in ("error", "warn")]
    assert errors == [], errors
    stream = CaptureStream(str(cap))
    again = [(r["seq"], f["code"]) for r in reannotate(stream.header, stream, shapes=False, reuse=False)
             for f in r.get("findings", ()) if isinstance(f, dict) and f["severity"] in ("error", "warn")]
    assert again == [], again
    return msgs


async def test_everything_streamable_http_through_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    async with everything("streamableHttp") as base, tapped(base + "/mcp", cap) as url:
        async with Client(url, mode="legacy") as client:
            await drive(client)
    msgs = check(cap)
    assert msgs[0]["method"] == "initialize"
    sessions = {r.get("session") for r in msgs}
    assert len(sessions) == 1 and None not in sessions, "the whole session is keyed by its Mcp-Session-Id"


async def test_everything_legacy_sse_through_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    async with everything("sse") as base, tapped(base + "/sse", cap) as url:
        async with Client(sse_client(url), mode="legacy") as client:
            await drive(client)
    msgs = check(cap)
    assert msgs[0]["method"] == "initialize"
