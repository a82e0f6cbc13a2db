"""The stdio replay link (replay/stdio_link.py) with the official SDK server
(tests/replay/sdk_server.py over stdio): how it reads the server's answers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.replay.compare import compare_replay
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer, StdioLink
from replay.capgen import Tape
from replay.test_plan import handshake

SDK_SERVER = [sys.executable, str(Path(__file__).parent / "sdk_server.py"), "v1"]


async def test_each_answer_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link framed and parsed each line the server wrote to hand its answer
    to the runner at once, and the Recorder framed and parsed the same bytes
    again to record them; the Recorder now takes the link's parse (and records
    the same thing: the answer is annotated as before)."""
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.close()
    plan = plan_from_path(path)
    plain, parsed = orjson.loads, []

    def counting(data: Any) -> Any:
        if isinstance(data, bytes) and b"Add two integers" in data:        # the live tools/list answer's line
            parsed.append(data)
        return plain(data)

    monkeypatch.setattr(orjson, "loads", counting)
    out = str(tmp_path / "new.jsonl")
    rec = Recorder(CaptureWriter.open(out), "stdio", target={"argv": ["sdk_server.py"]}, clock=monotonic_us_clock(), started=utc_timestamp())
    result = await Replayer(plan, StdioLink(SDK_SERVER, rec, grace=5), timeout=30).run()
    rec.close(exit_code=result.exit_code)
    monkeypatch.setattr(orjson, "loads", plain)
    rows = compare_replay(plan, result.live, result.server_requests, result.notes)
    assert [r.label for r in rows] == ["initialize", "tools/list"] and result.live[2].response is not None
    assert len(parsed) == 1, parsed
    # recorded as before: the answer is a paired response, its tools read
    (answer,) = [m for m in read_capture(out).messages() if m.direction.value == "s2c" and b"Add two integers" in m.raw]
    assert answer.kind.value == "response" and answer.value["result"]["tools"][0]["name"] == "add"


#: answers initialize only after closing its stdin, then keeps its stdout open without a word
CLOSES_STDIN = """
import json, os, sys, time
m = json.loads(sys.stdin.readline())
os.close(0)
print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "s", "version": "1"}}}), flush=True)
time.sleep(600)
"""


async def test_a_request_the_server_can_no_longer_read_is_said_unanswered_at_once(tmp_path: Path) -> None:
    """A server that closed its stdin will never read the requests written after: they were
    recorded as undelivered (``process.stdin_closed_by_server``) but the runner waited out the
    whole timeout for their answers (later ones were not even written). Each is now MISSING at
    once, saying why. (No SDK server closes its stdin and stays up.)"""
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.close()
    plan = plan_from_path(path)
    rec = Recorder(CaptureWriter.open(str(tmp_path / "new.jsonl")), "stdio", target={"argv": ["s"]}, clock=monotonic_us_clock(),
                   started=utc_timestamp())
    with trio.fail_after(60):           # the timeout is an hour: waiting for it fails here
        result = await Replayer(plan, StdioLink([sys.executable, "-c", CLOSES_STDIN], rec, grace=0), timeout=3600).run()
    rec.close(exit_code=result.exit_code)
    rows = {r.label: (r.status, r.note) for r in compare_replay(plan, result.live, result.server_requests, result.notes)}
    assert rows["tools/list"] == ("MISSING", "not delivered: the server had closed its stdin"), rows
