"""Replay planning holds no record and keeps each step compact (JSON bytes,
not parsed objects), so a large capture plans in a fraction of the memory
it used to (516 MB for 200,000 messages); the tool policy, judged once the
records have ended, still sees tools listed after a call."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import orjson

from mcptap.replay.plan import plan_from_path
from replay.capgen import C2S, S2C, Tape
from replay.test_plan import handshake, req, res

SAFE = {"readOnlyHint": True}


def _big(path: Path, exchanges: int) -> None:
    """A capture (as the live tap writes them) of ``exchanges`` tools/call
    request/response pairs after a handshake that lists the tool read-only."""
    header = {"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "test", "started": "2026-01-01T00:00:00Z",
              "transport": "stdio", "target": {"argv": ["server"]}}
    lines = [header]
    seq = t = 0

    def msg(d: str, kind: str, value: dict[str, Any], **kw: Any) -> None:
        nonlocal seq, t
        seq += 1
        t += 40
        lines.append({"type": "message", "seq": seq, "t_us": t, "dir": d, "kind": kind, "id": value.get("id"), "method": value.get("method"),
                      "phase": "operating", "rev": "2025-11-25", "json": value, "offset": 0, **kw})

    msg("c2s", "request", req(1, "tools/list"))
    msg("s2c", "response", res(1, {"tools": [{"name": "calc", "inputSchema": {"type": "object"}, "annotations": SAFE}]}), pair=seq)
    for i in range(2, exchanges + 2):
        msg("c2s", "request", req(i, "tools/call", {"name": "calc", "arguments": {"x": i, "q": "abc" * 3}}))
        msg("s2c", "response", res(i, {"content": [{"type": "text", "text": f"value {i * 3}"}], "isError": False}), pair=seq, latency_us=40)
    lines.append({"type": "end", "seq": seq + 1, "t_us": t})
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def test_planning_memory_is_compact_per_step(tmp_path: Path) -> None:
    path, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    _big(path, 10_000)
    _big(small, 2)
    plan_from_path(str(small))              # the modules planning imports, not counted
    tracemalloc.start()
    try:
        plan = plan_from_path(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan.steps) == 10_001 and not plan.skipped
    per_step = peak / len(plan.steps)
    assert per_step < 2000, f"{per_step:.0f} bytes a step (parsed records or objects held: ~3.7 KB a step; packed ~1.3 KB)"
    last = plan.steps[-1]
    assert last.message == req(10_001, "tools/call", {"name": "calc", "arguments": {"x": 10_001, "q": "abcabcabc"}})
    assert last.response["result"]["content"][0]["text"] == "value 30003"
    mine = last.message
    mine["params"]["name"] = "changed"
    assert last.message["params"]["name"] == "calc"          # each read is a fresh object


def test_the_policy_sees_listings_before_and_after_a_call(tmp_path: Path) -> None:
    """A call is judged by its tool's listing when it was sent, else (called
    before any listing of it) by the capture's last definition; a later
    listing that turns the tool destructive does not change an earlier call."""
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t, tools=[{"name": "add", "inputSchema": {"type": "object"}, "annotations": SAFE}])
    t.send(C2S, req(2, "tools/call", {"name": "late", "arguments": {}}))        # listed only later: read-only
    t.send(S2C, res(2, {"content": []}))
    t.send(C2S, req(3, "tools/call", {"name": "add", "arguments": {}}))         # read-only when sent
    t.send(S2C, res(3, {"content": []}))
    t.send(C2S, req(4, "tools/list"))
    t.send(S2C, res(4, {"tools": [{"name": "add", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}},
                                  {"name": "late", "inputSchema": {"type": "object"}, "annotations": SAFE}]}))
    t.send(C2S, req(5, "tools/call", {"name": "add", "arguments": {}}))         # destructive by now
    t.send(S2C, res(5, {"content": []}))
    t.send(C2S, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    t.close()
    plan = plan_from_path(path)
    calls = [(s.orig_id, s.skip) for s in plan.steps if s.method == "tools/call"]
    assert calls[0] == (2, None) and calls[1] == (3, None)
    assert calls[2][0] == 5 and "not declared read-only" in str(calls[2][1])
    assert plan.steps[-1].skip == "cancels a request that is not replayed"
    assert plan.tools["add"]["annotations"] == {"destructiveHint": True} and "late" in plan.tools
