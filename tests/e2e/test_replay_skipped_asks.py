"""Replay against the unchanged official-SDK server whose tools ask the client
back (tests/e2e/sampling_server.py: ``ask`` → sampling, ``pick`` →
elicitation, neither declared read-only). By default both calls are SKIPPED,
so the live server never asks: its recorded requests are SKIPPED too and the
replay passes; with ``--allow-side-effects`` they are asked and MATCH."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from test_sessionless_server_requests import SERVER, calls, elicit, sampling

pytestmark = pytest.mark.e2e
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def test_requests_of_skipped_calls_are_skipped_not_missing(tmp_path: Path) -> None:
    cap = tmp_path / "asks.jsonl"
    async with Client(StdioServerParameters(command=MCPTAP[0], args=[*MCPTAP[1:], "record", "-q", "-o", str(cap), "--", *SERVER]),
                      mode="legacy", sampling_callback=sampling, elicitation_callback=elicit) as client:
        await client.list_tools()
        await calls(client)
        await client.list_tools()
    for extra, want in (((), "SKIPPED"), (("--allow-side-effects",), "MATCH")):
        proc = subprocess.run([*MCPTAP, "replay", str(cap), "-o", str(tmp_path / "new.jsonl"), "--format", "json", *extra, "--", *SERVER],
                              capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stdout.decode()[-3000:] + proc.stderr.decode()[-2000:]
        rows = {r["label"]: r for r in orjson.loads(proc.stdout)["exchanges"]}
        assert {k: r["status"] for k, r in rows.items() if k.startswith(("s2c", "tools/call"))} == {
            "tools/call ask": want, "tools/call pick": want, "s2c sampling/createMessage": want, "s2c elicitation/create": want}
        if want == "SKIPPED":
            assert "asked during skipped #" in rows["s2c sampling/createMessage"]["note"]
