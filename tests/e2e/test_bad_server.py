"""A misbehaving server through `mcptap record`, driven by the official SDK
client: the session still works and the capture holds exactly the planted
findings (and nothing else at warn or error).

On a loaded machine the recorder fell behind at the session's end and stored the
last answer unframed; the eof record then judged tools/call unanswered
(tests/test_unframed_answers.py)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcptap.capture.reader import read_capture

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent


async def test_planted_faults_are_exactly_the_findings(tmp_path: Path) -> None:
    cap = tmp_path / "bad.jsonl"
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "mcptap.cli.main", "record", "--quiet", "-o", str(cap), "--", sys.executable, str(HERE / "bad_server.py")])
    async with Client(params, mode="legacy") as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["echo"]
        r = await client.call_tool("echo", {"text": "still works"})
        assert r.content[0].text == "still works"     # answered once the client answered both pings (bad_server.py)
    c = read_capture(str(cap))
    found = Counter((f["code"], f["severity"]) for r in c.records for f in r.get("findings", ()) if f["severity"] != "info")
    assert found == Counter({
        ("framing.non_jsonrpc_line", "error"): 1,
        ("capability.not_negotiated", "error"): 2,           # list_changed without listChanged; roots/list without roots
        ("lifecycle.server_request_before_initialized", "warn"): 1,
        ("jsonrpc.duplicate_id_in_flight", "error"): 1,
        ("jsonrpc.ambiguous_pairing", "warn"): 1,
    }), found
    by_code = {f["code"]: r for r in c.records for f in r.get("findings", ())}
    assert by_code["lifecycle.server_request_before_initialized"]["method"] == "roots/list"
    assert by_code["framing.non_jsonrpc_line"]["dir"] == "s2c"
    assert by_code["jsonrpc.duplicate_id_in_flight"]["id"] == 7
