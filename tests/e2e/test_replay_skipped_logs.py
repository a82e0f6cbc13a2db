"""Log notifications and skipped calls: a call replay skips is never sent, so
the live server has no reason to log what it logged during it in the original
session, and the new capture (which records every byte the server writes)
has no such log; a log the server does send, for a call replay makes, is
recorded, also when the call is sent only because of ``--allow-side-effects``.
Checked with the official SDK server (tests/e2e/log_server.py)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
SERVER = [sys.executable, str(Path(__file__).with_name("log_server.py"))]


def _logs(path: Path) -> list[str]:
    out = []
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec.get("type") == "message" and rec.get("method") == "notifications/message":
            out.append(rec["json"]["params"]["data"])
    return out


async def test_only_the_logs_of_skipped_calls_are_absent_from_the_new_capture(tmp_path: Path) -> None:
    cap = tmp_path / "logs.jsonl"
    warnings.simplefilter("ignore")         # the SDK deprecates logging as of 2026-07-28
    async with Client(StdioServerParameters(command=MCPTAP[0], args=[*MCPTAP[1:], "record", "-q", "-o", str(cap), "--", *SERVER]),
                      mode="legacy") as client:
        await client.list_tools()
        await client.call_tool("note", {"text": "a"})
        await client.call_tool("wipe", {"path": "/x"})
        await client.call_tool("note", {"text": "b"})
    assert _logs(cap) == ["note a", "wiping /x", "note b"]
    for extra, want in (((), ["note a", "note b"]), (("--allow-side-effects",), ["note a", "wiping /x", "note b"])):
        new = tmp_path / f"new{len(extra)}.jsonl"
        proc = subprocess.run([*MCPTAP, "replay", str(cap), "-o", str(new), "--format", "json", *extra, "--", *SERVER],
                              capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stdout.decode()[-3000:] + proc.stderr.decode()[-2000:]
        assert _logs(new) == want, extra
        rows = {r["label"]: r["status"] for r in orjson.loads(proc.stdout)["exchanges"]}
        assert rows["tools/call wipe"] == ("MATCH" if extra else "SKIPPED")
