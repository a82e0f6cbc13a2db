"""``--upstream`` with a query and user info: sent upstream as a reverse proxy
sends them. They were silently dropped (the upstream got ``POST /mcp`` without
``?tenant=…&api_key=…`` and without its Basic credentials). The query is merged
with the client's own (the upstream's parameters first; a client already given
the full URL sends it unchanged); the user info is ``Authorization: Basic`` when
the client sends no Authorization. Neither appears in the capture or on stderr
in clear (docs/redaction.md)."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import h11
import trio

from h11_upstream import answer, requests
from mcptap.capture.reader import read_capture
from transport.test_http_tap import post, tap, upstream_server

ROOT = Path(__file__).resolve().parents[2]
KEY, PASSWORD = "k123-upstream-key", "s3cret-pw"
BASIC = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()


def _seen_by_upstream(seen: list[tuple[str, str]]):
    """An upstream answering each POST with a JSON-RPC result; ``seen`` gets (target, authorization)."""
    async def handler(stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        async for req, _ in requests(stream, conn):
            seen.append((req.target.decode(), dict(req.headers).get(b"authorization", b"").decode()))
            out = b'{"jsonrpc":"2.0","id":1,"result":{}}'
            await stream.send_all(answer(conn, 200, [("Content-Type", "application/json"), ("Content-Length", str(len(out)))], out))
    return handler


async def test_the_upstream_query_and_user_info_reach_the_upstream(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with upstream_server(_seen_by_upstream(seen)) as port, \
            tap(tmp_path, upstream=f"http://alice:{PASSWORD}@127.0.0.1:{port}/mcp?tenant=acme&api_key={KEY}") as (url, _):
        assert "?" not in url and "@" not in url
        for suffix, auth in (("", None), ("?x=1", None), (f"?tenant=acme&api_key={KEY}", None), ("", "Bearer mine")):
            status, _ = await post(url + suffix, ping, [("Authorization", auth)] if auth else None)
            assert status == 200
    assert seen == [
        (f"/mcp?tenant=acme&api_key={KEY}", BASIC),
        (f"/mcp?tenant=acme&api_key={KEY}&x=1", BASIC),         # the upstream's parameters first, then the client's
        (f"/mcp?tenant=acme&api_key={KEY}", BASIC),             # a client given the full URL: unchanged, not doubled
        (f"/mcp?tenant=acme&api_key={KEY}", "Bearer mine"),     # the client's own Authorization wins
    ]
    records = [r for r in read_capture(str(tmp_path / "cap.jsonl")).records]
    text = json.dumps(records)
    assert PASSWORD not in text and BASIC.split()[1] not in text
    targets = [r["target"] for r in records if r.get("event") == "request"]
    assert targets[0] == "/mcp" and targets[1] == "/mcp?x=1"    # the capture holds what the client sent


def test_the_secrets_of_the_upstream_url_stay_out_of_stderr_and_the_capture_header(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-o", str(out), "--listen", "127.0.0.1:0", "--upstream",
                          f"http://alice:{PASSWORD}@127.0.0.1:9/mcp?tenant=acme&api_key={KEY}"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert p.stderr is not None
        seen = b""
        while b"listening on " not in seen:
            line = p.stderr.readline()
            assert line, (p.wait(60), seen)
            seen += line
        p.send_signal(signal.SIGTERM)
        rest = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = (seen + rest).decode()
    assert p.returncode == 0, err
    assert KEY not in err and PASSWORD not in err, err
    cap = read_capture(str(out))
    assert KEY not in json.dumps(cap.header) and PASSWORD not in json.dumps(cap.header)
