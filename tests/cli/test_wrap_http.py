"""`mcptap wrap --http`: the URL entry points at a local tap; the printed
command starts that tap (`record --upstream … --listen … --dir … --name …`);
a request to the wrapped URL is relayed and recorded; `ls` lists the capture
under the server's name; `unwrap` restores the original URL byte for byte."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).parents[1] / "transport"))
from test_http_tap import fake_mcp, post, upstream_server

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def test_wrapped_url_entry_is_served_by_the_printed_tap(tmp_path: Path) -> None:
    caps = tmp_path / "caps"
    async with upstream_server(fake_mcp) as port:
        original = json.dumps({"mcpServers": {"remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}}, indent=2) + "\n"
        cfg = tmp_path / ".mcp.json"
        cfg.write_text(original)
        p = subprocess.run([*MCPTAP, "wrap", "--config", str(cfg), "--dir", str(caps), "--http"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        url = json.loads(cfg.read_text())["mcpServers"]["remote"]["url"]
        argv = shlex.split(p.stdout.strip())
        assert argv[1:] == ["record", "--upstream", f"http://127.0.0.1:{port}/mcp", "--listen", url.split("//")[1].split("/")[0],
                            "--dir", str(caps), "--name", "remote"]
        proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        try:
            line = await trio.to_thread.run_sync(proc.stderr.readline)
            assert line.startswith(f"mcptap: listening on {url}"), line
            st, body = await post(url, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
            assert st == 200 and json.loads(body)["id"] == 7
        finally:
            proc.send_signal(signal.SIGINT)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
        assert rc == 0
    p = subprocess.run([*MCPTAP, "ls", "--dir", str(caps), "--format", "json"], capture_output=True, text=True, timeout=60)
    (row,) = [json.loads(x) for x in p.stdout.splitlines()]
    assert row["name"] == "remote" and row["transport"] == "http" and row["messages"] == 2 and row["status"] == "complete"
    assert subprocess.run([*MCPTAP, "unwrap", "--config", str(cfg)], capture_output=True, timeout=60).returncode == 0
    assert cfg.read_text() == original
