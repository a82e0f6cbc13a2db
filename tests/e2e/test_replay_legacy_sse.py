"""`mcptap replay --url` and the legacy HTTP+SSE transport, with the official SDK
server: a legacy capture is refused up front (one line, exit 2); a Streamable
HTTP capture replayed at a legacy server's SSE URL stops at the failed
handshake, and its 405 text/plain refusals are judged as the tap judges them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from peers import free_port, listening
from test_serve_http_sdk import SERVER, record_http

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _replay(cap: Path, url: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAP, "replay", str(cap), "--url", url, "-o", str(out), "--timeout", "5"],
                          capture_output=True, text=True, timeout=120)


async def test_a_legacy_sse_capture_is_refused_up_front(tmp_path: Path) -> None:
    cap = tmp_path / "legacy.jsonl"
    await record_http("legacy-http+sse", cap)
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "sse"], port):
        p = _replay(cap, f"http://127.0.0.1:{port}/sse", tmp_path / "new.jsonl")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "legacy HTTP+SSE transport" in p.stderr and "Streamable HTTP only" in p.stderr, p.stderr
    assert p.stdout == "" and not (tmp_path / "new.jsonl").exists()


async def test_replay_stops_at_a_failed_handshake_and_judges_plain_refusals_as_the_tap(tmp_path: Path) -> None:
    cap = tmp_path / "modern.jsonl"
    await record_http("sse-legacy", cap)   # Streamable HTTP, initialize handshake
    new = tmp_path / "new.jsonl"
    port = free_port()
    async with listening([sys.executable, str(SERVER), str(port), "sse"], port):
        # a Streamable HTTP client at the legacy SSE path: POST /sse is 405 text/plain
        p = _replay(cap, f"http://127.0.0.1:{port}/sse", new)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert any("initialize" in ln and "405" in ln for ln in lines), p.stdout
    assert "findings new in the live session" not in p.stdout, p.stdout
    assert p.stdout.count("not sent: initialize failed") >= 3, p.stdout
    records = read_capture(str(new)).records
    posts = [r for r in records if r.get("type") == "http" and r.get("event") == "request" and r.get("method") == "POST"]
    assert len(posts) == 1                     # only the initialize went out
    codes = [f["code"] for r in records for f in r.get("findings", ())]
    assert "http.request_refused" in codes
    assert not [c for c in codes if c.startswith("jsonrpc.")], codes
    assert not [r for r in records if r.get("type") == "message" and r.get("dir") == "s2c"]
