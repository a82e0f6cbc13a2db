"""The replay runner against an in-process link (a trio fake server), then
the real stdio link against a tiny Python server process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import trio

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.replay.compare import compare_replay
from mcptap.replay.plan import plan_from_path
from mcptap.replay.runner import Replayer, StdioLink
from replay.capgen import C2S, META, S2C, Tape
from replay.test_plan import handshake, req, res


class FakeLink:
    """A server in the same trio run: ``handle(msg) -> result`` per request,
    optional ``delay`` per method and server requests made before answering."""

    def __init__(self, handle: Any, delay: dict[str, float] | None = None, asks: list[dict[str, Any]] | None = None) -> None:
        self.handle = handle
        self.delay = delay or {}
        self.asks = asks or []
        self.received: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.answers: dict[Any, trio.Event] = {}
        self.answer_values: dict[Any, Any] = {}

    async def start(self, nursery: trio.Nursery, deliver: Any, closed: Any) -> None:
        self.nursery, self.deliver, self.closed = nursery, deliver, closed

    async def send(self, msg: Any, session: Any = None) -> None:
        self.received.append(msg)
        if isinstance(msg, list):                     # a batch: answer all members in one array
            out = [{"jsonrpc": "2.0", "id": m["id"], "result": self.handle(m, {})} for m in reversed(msg) if "id" in m]
            self.nursery.start_soon(self.deliver, out, None)
            return
        if "method" not in msg:                       # the client's answer to our request
            self.answer_values[msg["id"]] = msg
            self.answers[msg["id"]].set()
            return
        if "id" in msg:
            self.nursery.start_soon(self._serve, msg)

    async def _serve(self, msg: dict[str, Any]) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await trio.sleep(self.delay.get(msg["method"], 0))
        ctx = {}
        if msg["method"] == "tools/call" and self.asks:
            for i, ask in enumerate(self.asks):
                sid = f"srv-{msg['id']}-{i}"
                self.answers[sid] = trio.Event()
                await self.deliver({"jsonrpc": "2.0", "id": sid, **ask}, None)
                await self.answers[sid].wait()
                ctx[ask["method"]] = self.answer_values[sid]
        result = self.handle(msg, ctx)
        self.in_flight -= 1
        if result is not None:
            await self.deliver({"jsonrpc": "2.0", "id": msg["id"], "result": result}, None)

    async def aclose(self) -> None:
        self.closed()


def echo_server(msg: dict[str, Any], ctx: dict[str, Any]) -> Any:
    m = msg["method"]
    if m == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    if m == "tools/list":
        from replay.capgen import TOOLS
        return {"tools": TOOLS}
    if m == "resources/list":
        cur = (msg.get("params") or {}).get("cursor")
        return {"resources": [{"uri": f"r://{cur or 'first'}", "name": "r"}], **({} if cur else {"nextCursor": "LIVE-CURSOR"})}
    if m == "tools/call":
        return {"content": [{"type": "text", "text": orjson.dumps(ctx).decode() if ctx else "ok"}]}
    return {}


async def _replay(path: str, link: FakeLink, timeout: float = 5.0) -> Any:
    plan = plan_from_path(path)
    result = await Replayer(plan, link, timeout=timeout).run()
    return plan, result, compare_replay(plan, result.live, result.server_requests, result.notes)


async def test_overlap_recorded_ids_waits_and_cursor_carry(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req("a", "tools/call", {"name": "add", "arguments": {}}))
    t.send(C2S, req("b", "tools/call", {"name": "add", "arguments": {"x": 1}}))
    t.send(S2C, res("b", {"content": [{"type": "text", "text": "ok"}]}))
    t.send(S2C, res("a", {"content": [{"type": "text", "text": "ok"}]}))
    t.send(C2S, req(0, "resources/list"))                                    # the initialize's id again
    t.send(S2C, res(0, {"resources": [{"uri": "r://first", "name": "r"}], "nextCursor": "OLD-CURSOR"}))
    t.send(C2S, req(8, "resources/list", {"cursor": "OLD-CURSOR"}))
    t.send(S2C, res(8, {"resources": [{"uri": "r://LIVE-CURSOR", "name": "r"}]}))
    t.close()
    link = FakeLink(echo_server, delay={"tools/call": 0.05})
    plan, result, rows = await _replay(path, link)
    assert [r.status for r in rows] == ["MATCH"] * 6, rows
    assert link.max_in_flight == 2                                       # the two calls overlapped again
    sent = [m for m in link.received if "id" in m]
    assert [m["id"] for m in sent] == [0, 1, "a", "b", 2, 8]             # recorded ids; a fresh one for one sent already
    assert sent[-1]["params"] == {"cursor": "LIVE-CURSOR"}               # carried from the live answer
    order = [m.get("method") for m in link.received]
    assert order.index("notifications/initialized") > 0


async def test_server_requests_answered_from_the_capture(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    ask = {"method": "elicitation/create", "params": {"message": "colour?", "requestedSchema": {"type": "object"}}}
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {}}))
    t.send(S2C, {"jsonrpc": "2.0", "id": 0, **ask})
    t.send(C2S, res(0, {"action": "accept", "content": {"colour": "red"}}))
    answer = '{"elicitation/create":{"jsonrpc":"2.0","id":"srv-2-0","result":{"action":"accept","content":{"colour":"red"}}}}'
    t.send(S2C, res(2, {"content": [{"type": "text", "text": answer}]}))
    t.close()
    link = FakeLink(echo_server, asks=[ask, {"method": "roots/list", "params": {}}])
    plan, result, rows = await _replay(path, link)
    statuses = {r.label: r.status for r in rows}
    assert statuses["s2c elicitation/create"] == "MATCH"
    assert statuses["s2c roots/list"] == "NEW"                                 # not asked in the original
    answer = link.answer_values["srv-2-1"]
    assert answer["error"]["code"] == -32601                                  # no recorded answer
    assert link.answer_values["srv-2-0"]["result"] == {"action": "accept", "content": {"colour": "red"}}
    assert statuses["tools/call add"] == "CHANGED"                            # result embeds the roots answer too


async def test_unanswered_request_times_out_and_later_steps_still_run(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {}}))
    t.send(S2C, res(2, {"content": [{"type": "text", "text": "ok"}]}))
    t.send(C2S, req(3, "ping"))
    t.send(S2C, res(3, {}))
    t.close()

    def silent_on_calls(msg: dict[str, Any], ctx: dict[str, Any]) -> Any:
        return None if msg["method"] == "tools/call" else echo_server(msg, ctx)

    link = FakeLink(silent_on_calls)
    plan, result, rows = await _replay(path, link, timeout=0.2)
    statuses = [(r.label, r.status) for r in rows]
    assert statuses == [("initialize", "MATCH"), ("tools/list", "MATCH"), ("tools/call add", "MISSING"), ("ping", "MATCH")]
    assert "no answer within 0.2 s" in rows[2].note


async def test_modern_input_round_is_rebuilt_from_the_live_answer(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    meta = {"_meta": META}
    ask = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 3}}
    t.send(C2S, req(1, "tools/call", {"name": "add", "arguments": {}, **meta}))
    t.send(S2C, res(1, {"resultType": "input_required", "inputRequests": {"old-key": ask}, "requestState": "OLD-STATE"}))
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {}, "inputResponses": {"old-key": {"role": "assistant", "model": "m"}},
                                      "requestState": "OLD-STATE", **meta}))
    t.send(S2C, res(2, {"resultType": "complete", "content": []}))
    t.close()

    def mrtr(msg: dict[str, Any], ctx: dict[str, Any]) -> Any:
        p = msg["params"]
        if "inputResponses" not in p:
            return {"resultType": "input_required", "inputRequests": {"new-key": ask}, "requestState": "LIVE-STATE"}
        assert p["requestState"] == "LIVE-STATE"
        assert p["inputResponses"] == {"new-key": {"role": "assistant", "model": "m"}}
        return {"resultType": "complete", "content": []}

    plan = plan_from_path(path)
    plan.tools["add"] = {"annotations": {"readOnlyHint": True}}
    for s in plan.steps:
        s.skip = None
    link = FakeLink(mrtr)
    result = await Replayer(plan, link, timeout=2).run()
    rows = compare_replay(plan, result.live, result.server_requests, result.notes)
    assert [(r.label, r.status) for r in rows] == [("tools/call add", "MATCH"), ("tools/call add", "MATCH"),
                                                    ("s2c sampling/createMessage", "MATCH")]


SCRIPT_SERVER = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "py", "version": "1"}}
    else:
        r = {"echo": m.get("params")}
    print("log line on stdout", flush=True) if m["method"] == "ping" else None
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"""


async def test_stdio_link_records_a_normal_capture(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    t.send(C2S, req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}))
    t.send(S2C, res(1, {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "py", "version": "1"}}))
    t.send(C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    t.send(C2S, req(2, "ping"))
    t.send(S2C, res(2, {"echo": None}))
    t.send(C2S, req(3, "resources/read", {"uri": "a://b"}))
    t.send(S2C, res(3, {"echo": {"uri": "a://b"}}))
    t.close()
    out = str(tmp_path / "new.jsonl")
    rec = Recorder(CaptureWriter.open(out), "stdio", target={"argv": ["py"]}, clock=monotonic_us_clock(), started=utc_timestamp())
    plan = plan_from_path(path)
    link = StdioLink([sys.executable, "-c", SCRIPT_SERVER], rec, grace=2)
    result = await Replayer(plan, link, timeout=10).run()
    rec.close(exit_code=result.exit_code)
    rows = compare_replay(plan, result.live, result.server_requests, result.notes)
    assert [(r.label, r.status) for r in rows] == [("initialize", "MATCH"), ("ping", "MATCH"), ("resources/read a://b", "MATCH")]
    assert result.exit_code == 0 and result.error is None
    cap = read_capture(out)
    msgs = cap.messages()
    assert [(m.direction.value, m.method or m.kind.value) for m in msgs][:3] == [("c2s", "initialize"), ("s2c", "response"),
                                                                                 ("c2s", "notifications/initialized")]
    assert any("framing.non_jsonrpc_line" in m.codes for m in msgs)           # the stray log line, annotated
    assert cap.end is not None and cap.end["exit_code"] == 0
    events = [r.get("event") for r in cap.records if r["type"] == "process"]
    assert events[0] == "spawn" and "exit" in events


async def test_batch_and_cancel_are_replayed_with_mapped_ids(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, [req(10, "ping"), req(11, "resources/list"), {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}])
    t.send(S2C, [res(11, {"resources": [{"uri": "r://first", "name": "r"}], "nextCursor": "X"}), res(10, {})])
    t.send(C2S, req(12, "tools/call", {"name": "add", "arguments": {}}))
    t.send(C2S, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12}})
    t.close()

    def never_calls(msg: dict[str, Any], ctx: dict[str, Any]) -> Any:
        return None if msg["method"] == "tools/call" else echo_server(msg, ctx)

    link = FakeLink(never_calls)
    plan, result, rows = await _replay(path, link, timeout=0.5)
    assert [(r.label, r.status) for r in rows] == [("initialize", "MATCH"), ("tools/list", "MATCH"), ("batch ping", "MATCH"),
                                                    ("batch resources/list", "MATCH"), ("tools/call add", "MATCH")]
    batch = next(m for m in link.received if isinstance(m, list))
    assert [m.get("id") for m in batch] == [10, 11, None]
    cancel = link.received[-1]
    call = next(m for m in link.received if isinstance(m, dict) and m.get("method") == "tools/call")
    assert cancel["method"] == "notifications/cancelled" and cancel["params"]["requestId"] == call["id"] == 12
    assert rows[-1].note == "unanswered in both sessions"


class SlowCloseLink(FakeLink):
    """A FakeLink whose session end takes ``linger`` seconds (like stdio's
    grace period), so answers still in flight arrive while it closes."""

    def __init__(self, handle: Any, linger: float, **kw: Any) -> None:
        super().__init__(handle, **kw)
        self.linger = linger

    async def aclose(self) -> None:
        await trio.sleep(self.linger)
        self.closed()


async def test_an_answer_after_the_timeout_never_becomes_the_verdict(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    for i in (2, 3):                                   # sequential: the second waits for the first
        t.send(C2S, req(i, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}))
        t.send(S2C, res(i, {"content": [{"type": "text", "text": "ok"}]}))
    t.close()
    link = SlowCloseLink(echo_server, linger=0.6, delay={"tools/call": 0.3})
    plan, result, rows = await _replay(path, link, timeout=0.2)
    calls = [r for r in rows if r.label == "tools/call add"]
    assert [r.status for r in calls] == ["MISSING", "MISSING"], calls
    for r in calls:
        assert r.note is not None and r.note.startswith("no answer within 0.2 s (answered late, after "), r.note
    assert all(result.live[r.step].response is None for r in calls if r.step is not None)
