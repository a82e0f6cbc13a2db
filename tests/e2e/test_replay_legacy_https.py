"""A legacy HTTP+SSE (2024-11-05) server reached over https, with the official
SDK on both sides (tests/e2e/log_server.py behind uvicorn with a self-signed
certificate): recorded by `mcptap record --upstream https://…/sse --cacert`,
replayed by `mcptap replay --url https://…/sse --cacert`. The new capture keys
every message by the session the endpoint event named, and records the
endpoint as resolving to https (the replay's observer took the server's side
to be plain http, as the tap's client side is)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import trio

from peers import free_port, listening

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
SERVER = [sys.executable, str(Path(__file__).with_name("log_server.py"))]
CLIENT = r"""
import sys, anyio
from mcp import ClientSession
from mcp.client.sse import sse_client
async def main():
    async with sse_client(sys.argv[1]) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            await s.call_tool("note", {"text": "a"})
anyio.run(main)
"""


def _cert(tmp: Path) -> tuple[Path, Path]:
    key, crt = tmp / "k.pem", tmp / "c.pem"
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt), "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("openssl not available")
    return key, crt


def _sessions(path: Path) -> tuple[list[dict], list[tuple[str, object]]]:
    recs = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    endpoints = [r for r in recs if r.get("type") == "http" and "endpoint" in r]
    return endpoints, [(r["dir"], r.get("session")) for r in recs if r.get("type") == "message"]


async def test_a_legacy_https_session_replays_under_its_session_key(tmp_path: Path) -> None:
    key, crt = _cert(tmp_path)
    port = free_port()
    cap, new = tmp_path / "https.jsonl", tmp_path / "new.jsonl"
    async with listening([*SERVER, "--sse-tls", str(port), str(key), str(crt)], port):
        url = f"https://127.0.0.1:{port}/sse"
        rec = subprocess.Popen([*MCPTAP, "record", "--upstream", url, "--cacert", str(crt), "--listen", "127.0.0.1:0", "-o", str(cap)],
                               stderr=subprocess.PIPE, text=True)
        try:
            assert rec.stderr is not None
            line = await trio.to_thread.run_sync(rec.stderr.readline)
            assert "listening on" in line, line
            client = await trio.run_process([sys.executable, "-c", CLIENT, line.split()[3]], capture_stderr=True, check=False)
            assert client.returncode == 0, client.stderr.decode()[-3000:]
        finally:
            rec.send_signal(signal.SIGINT)
            assert await trio.to_thread.run_sync(rec.wait, 20) == 0
        untrusted = await trio.run_process([*MCPTAP, "replay", str(cap), "--url", url, "-o", str(tmp_path / "x.jsonl"), "--timeout", "5"],
                                           capture_stdout=True, capture_stderr=True, check=False)
        assert untrusted.returncode == 2 and b"certificate verify failed" in untrusted.stderr, untrusted.stderr
        p = await trio.run_process([*MCPTAP, "replay", str(cap), "--url", url, "--cacert", str(crt), "-o", str(new), "--timeout", "10",
                                    "--format", "json"], capture_stdout=True, capture_stderr=True, check=False)
    assert p.returncode == 0, p.stdout.decode()[-3000:] + p.stderr.decode()[-3000:]
    assert {r["label"]: r["status"] for r in orjson.loads(p.stdout)["exchanges"]} == {
        "initialize": "MATCH", "tools/list": "MATCH", "tools/call note": "MATCH"}
    (endpoint,), msgs = _sessions(new)
    sid = endpoint["session"]
    assert sid and endpoint["endpoint"]["resolved"].startswith(f"https://127.0.0.1:{port}/messages/")
    assert [code["code"] for code in endpoint["findings"] if code["code"].startswith("sse.endpoint")] == ["sse.endpoint_event"]
    assert len(msgs) >= 6 and all(s == sid for _, s in msgs), msgs


async def test_cacert_needs_an_https_url(tmp_path: Path) -> None:
    cap = tmp_path / "c.jsonl"
    cap.write_text("x")
    crt = tmp_path / "c.pem"
    crt.write_text("not a certificate")
    for url, why in (("http://127.0.0.1:9/sse", "--cacert needs an https:// --url"), ("https://127.0.0.1:9/sse", "cannot load --cacert")):
        p = await trio.run_process([*MCPTAP, "replay", str(cap), "--url", url, "--cacert", str(crt)], capture_stdout=True, capture_stderr=True,
                                   check=False)
        assert p.returncode == 2 and why in p.stderr.decode(), p.stderr
