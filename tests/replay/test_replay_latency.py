"""Replay's latencies are the server's, not its own analysis: the stdio link
writes a request before the Recorder annotates it (on a worker thread,
replay/offpath.py), hands an answer to the runner as soon as it is read, and
times an answer from when its request was written whole. Against the
official-SDK server (tests/replay/sdk_server.py), with the analysis of the
tools/call made slow on purpose: it must not show in the latency, and the
new capture still holds the request before its answer, stamped when sent."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer, StdioLink
from replay.capgen import C2S, S2C, TOOLS, Tape
from replay.test_plan import handshake, req, res

SERVER = [sys.executable, str(Path(__file__).parent / "sdk_server.py"), "v1"]
SLOW = 1.0          # s of analysis for each tools/call line (schema validators built, 80 MiB parsed...)


def _call_tape(path: str, arguments: dict[str, Any], answer: dict[str, Any]) -> Tape:
    """A recorded session: the handshake, then tools/call add(arguments) answered ``answer`` (not closed)."""
    t = Tape(path)
    handshake(t, TOOLS)
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": arguments}))
    t.send(S2C, res(2, answer))
    return t


async def _replay_over_http(plan: Any, out: str) -> Any:
    """``plan`` replayed against the official-SDK HTTP server, recorded into ``out``; the ReplayResult."""
    from http_record import http_server
    from mcptap.replay.http_client import HttpLink

    async with http_server("v1") as url:
        rec = Recorder(CaptureWriter.open(out), "http", target={"url": url}, clock=monotonic_us_clock(), started=utc_timestamp())
        result = await Replayer(plan, HttpLink(url, rec), timeout=30).run()
        rec.close()
    return result


async def test_analysis_time_is_not_the_servers_latency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, out = str(tmp_path / "c.jsonl"), str(tmp_path / "new.jsonl")
    t = _call_tape(path, {"a": 1, "b": 2}, {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False})
    t.send(C2S, req(3, "ping"))
    t.send(S2C, res(3, {}))
    t.close()
    plain = Recorder.stdio_bytes

    def slow(self: Recorder, direction: Direction, data: bytes, *a: Any, **kw: Any) -> Any:
        if direction is Direction.C2S and b'"tools/call"' in data:
            time.sleep(SLOW)
        return plain(self, direction, data, *a, **kw)

    monkeypatch.setattr(Recorder, "stdio_bytes", slow)
    rec = Recorder(CaptureWriter.open(out), "stdio", target={"argv": ["sdk"]}, clock=monotonic_us_clock(), started=utc_timestamp())
    plan = plan_from_path(path)
    result = await Replayer(plan, StdioLink(SERVER, rec, grace=2), timeout=30).run()
    rec.close(exit_code=result.exit_code)
    call = next(s for s in plan.steps if s.method == "tools/call")
    live = result.live[call.index]
    assert live.response is not None and live.response["result"]["structuredContent"] == {"result": 3}
    assert live.latency_us is not None and live.latency_us < SLOW * 1e6 / 2, live.latency_us
    # the capture: the request before its answer, stamped when it was sent, not when analysed
    msgs = [r for r in read_capture(out).records if r.get("type") == "message"]
    sent = next(r for r in msgs if r.get("method") == "tools/call")
    answer = next(r for r in msgs if r.get("pair") == sent["seq"])
    assert sent["seq"] < answer["seq"] and 0 <= answer["t_us"] - sent["t_us"] < SLOW * 1e6 / 2
    assert [r["seq"] for r in msgs] == sorted(r["seq"] for r in msgs)


SLOW_READER = r"""
import json, sys, time
while True:
    time.sleep(float(sys.argv[1]))         # busy elsewhere: a big request waits in the pipe meanwhile
    line = sys.stdin.buffer.readline()
    if not line:
        break
    m = json.loads(line)
    if "id" in m:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"n": len(line)}}) + "\n")
        sys.stdout.flush()
"""


async def test_an_answer_is_timed_from_when_its_request_was_written_whole(tmp_path: Path) -> None:
    # as `record` times it (from the request's last byte): the time a server takes to read
    # a big request (8 MiB here, through a 64 KiB pipe) is not its answer's latency
    path, out = str(tmp_path / "c.jsonl"), str(tmp_path / "new.jsonl")
    big = {"name": "add", "arguments": {"blob": "x" * (8 << 20)}}
    t = Tape(path)
    t.send(C2S, req(1, "tools/call", big))
    t.send(S2C, res(1, {"n": 1}))
    t.close()
    rec = Recorder(CaptureWriter.open(out), "stdio", target={"argv": ["py"]}, clock=monotonic_us_clock(), started=utc_timestamp())
    plan = plan_from_path(path)
    plan.steps[0].skip = None
    result = await Replayer(plan, StdioLink([sys.executable, "-c", SLOW_READER, str(SLOW)], rec, grace=2), timeout=30).run()
    rec.close(exit_code=result.exit_code)
    live = result.live[0]
    assert live.response is not None and live.response["result"]["n"] > 8 << 20
    assert live.latency_us is not None and live.latency_us < SLOW * 1e6 / 2, live.latency_us


async def test_http_link_analysis_time_is_not_the_servers_latency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, out = str(tmp_path / "c.jsonl"), str(tmp_path / "new.jsonl")
    _call_tape(path, {"a": 1, "b": 2}, {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False}).close()
    plain = Recorder.frame

    def slow(self: Recorder, direction: Direction, raw: bytes, *a: Any, **kw: Any) -> Any:
        if direction is Direction.C2S and b'"tools/call"' in raw:
            time.sleep(SLOW)
        return plain(self, direction, raw, *a, **kw)

    monkeypatch.setattr(Recorder, "frame", slow)
    plan = plan_from_path(path)
    result = await _replay_over_http(plan, out)
    call = next(s for s in plan.steps if s.method == "tools/call")
    live = result.live[call.index]
    assert live.response is not None and live.response["result"]["structuredContent"] == {"result": 3}
    assert live.latency_us is not None and live.latency_us < SLOW * 1e6 / 2, live.latency_us
    msgs = [r for r in read_capture(out).records if r.get("type") == "message"]
    sent = next(r for r in msgs if r.get("method") == "tools/call")
    assert any(r.get("pair") == sent["seq"] and r["seq"] > sent["seq"] for r in msgs)


async def test_http_link_parses_each_live_reply_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP link parsed each reply to hand it on, and the Recorder parsed
    the same bytes again to annotate them; the link now gives the Recorder
    the value it parsed (official-SDK server, Streamable HTTP)."""
    import orjson

    path, out = str(tmp_path / "c.jsonl"), str(tmp_path / "new.jsonl")
    _call_tape(path, {"a": 20, "b": 22}, {"content": [{"type": "text", "text": "x"}], "isError": False}).close()
    plain, parsed = orjson.loads, []

    def counting(data: Any) -> Any:
        if b'"text":"42"' in (data if isinstance(data, bytes) else str(data).encode()):
            import traceback
            parsed.append("".join(traceback.format_stack(limit=8)))
        return plain(data)

    monkeypatch.setattr(orjson, "loads", counting)
    plan = plan_from_path(path)
    result = await _replay_over_http(plan, out)
    replay_parses = list(parsed)                # (reading the new capture back below parses it too)
    call = next(s for s in plan.steps if s.method == "tools/call")
    assert result.live[call.index].response["result"]["content"][0]["text"] == "42"
    msgs = [r for r in read_capture(out).records if r.get("type") == "message"]
    sent = next(r for r in msgs if r.get("method") == "tools/call")
    (answer,) = [r for r in msgs if r.get("pair") == sent["seq"]]
    assert answer["kind"] == "response" and answer["json"]["result"]["content"][0]["text"] == "42"
    assert len(replay_parses) == 1, "\n=====\n".join(replay_parses)
