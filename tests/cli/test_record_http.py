"""`mcptap record --upstream URL` as a process: listening URL on stderr, relay,
SIGINT ends it with status 0 and a finished capture; usage errors exit 2."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import trio

from mcptap.capture.reader import read_capture

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "transport"))
from test_http_tap import fake_mcp, post, upstream_server

CMD = [sys.executable, "-m", "mcptap.cli.record_http"]


async def test_record_http_process(tmp_path):
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        proc = subprocess.Popen(CMD + ["--upstream", f"http://127.0.0.1:{port}/mcp", "-o", str(cap)], stderr=subprocess.PIPE, text=True)
        try:
            line = await trio.to_thread.run_sync(proc.stderr.readline)
            assert line.startswith("mcptap: listening on http://127.0.0.1:") and line.rstrip().endswith(f"/mcp -> http://127.0.0.1:{port}/mcp"), line
            url = line.split()[3]
            st, body = await post(url, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
            assert st == 200 and json.loads(body)["id"] == 7
        finally:
            proc.send_signal(signal.SIGINT)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
    assert rc == 0
    c = read_capture(str(cap))
    assert c.header["transport"] == "http" and c.end is not None
    assert [r["kind"] for r in c.records if r["type"] == "message"] == ["request", "response"]


@pytest.mark.parametrize("args, msg", [
    (["--upstream", "ftp://x"], "http:// or https://"),
    (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "0.0.0.0:0"], "--allow-remote"),
    (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:99999"], "HOST:PORT"),
    (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "banana"], "not an IP address or a host name that resolves"),
])
def test_usage_errors_exit_2(args, msg, tmp_path):
    p = subprocess.run(CMD + args + ["-o", str(tmp_path / "c.jsonl")], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and msg in p.stderr, p.stderr


def test_parse_listen():
    from mcptap.cli.record_http import parse_listen
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen(":9") == ("127.0.0.1", 9) and parse_listen("9") == ("127.0.0.1", 9)
    assert parse_listen("[::1]:5") == ("::1", 5) and parse_listen("localhost") == ("localhost", 0)
