"""Which live request a recorded server message is sent for (pure core, and the HTTP
mock's streams): a log written while a tool call ran belongs to that call, not to the
housekeeping request the client sent last; an answer given again (the recorded ones used
up) replays no log; over HTTP a message whose own stream has ended goes on another open
one when no GET stream can ever carry it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcptap.serve.core import ServeCore
from mcptap.serve.http_streams import MockSession
from mcptap.serve.live import LiveSession, Out
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, note, record, req, res, s2c


def _core(path: Path) -> tuple[ServeCore, LiveSession]:
    core = ServeCore(script_from_path(str(path)))
    live = core.open()
    core.receive(live, {"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {}})
    core.receive(live, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return core, live


def _call(i: Any, name: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}, **params}}


def _log(text: str) -> bytes:
    return note("notifications/message", {"level": "info", "data": text})


def _logs(outs: list[Out]) -> list[str]:
    return [o.value["params"]["data"] for o in outs if o.value.get("method") == "notifications/message"]


def test_a_log_written_while_tools_run_goes_with_the_latest_running_tool_not_the_last_list(tmp_path: Path) -> None:
    cap = record(tmp_path / "c.jsonl", [
        *handshake(),
        c2s(req(2, "tools/call", {"name": "a", "arguments": {}})),
        c2s(req(3, "tools/call", {"name": "b", "arguments": {}})),
        s2c(_log("b or a")),
        s2c(res(3, {"content": []})),
        c2s(req(4, "tools/list")),                 # an SDK client's schema lookup between the calls
        s2c(_log("a, after the list")),
        s2c(res(4, {"tools": []})),
        c2s(req(5, "ping")),
        s2c(_log("a, after a ping")),
        s2c(res(5, {})),
        s2c(res(2, {"content": []})),
        s2c(_log("after all: the ping's")),        # nothing runs: the latest client message's, as before
    ])
    core, live = _core(cap)
    assert _logs(core.receive(live, _call(10, "a"))) == ["a, after the list", "a, after a ping"]
    out = core.receive(live, _call(11, "b"))
    assert _logs(out) == ["b or a"] and [o.via for o in out] == [11, 11]
    for i in (12, 13, 14):                         # more lists than recorded: the list again, no log
        assert [o.value.get("id") for o in core.receive(live, {"jsonrpc": "2.0", "id": i, "method": "tools/list"})] == [i]
    assert _logs(core.receive(live, {"jsonrpc": "2.0", "id": 15, "method": "ping"})) == ["after all: the ping's"]


def test_an_answer_given_again_replays_no_notification_but_what_the_request_needs(tmp_path: Path) -> None:
    cap = record(tmp_path / "c.jsonl", [
        *handshake(),
        c2s(req(2, "tools/call", {"name": "echo", "arguments": {}})),
        s2c(_log("echoing")),
        s2c(res(2, {"content": [{"type": "text", "text": "hi"}]})),
        c2s(req(3, "tools/call", {"name": "ask", "arguments": {}, "_meta": {"progressToken": "p"}})),
        s2c(note("notifications/progress", {"progressToken": "p", "progress": 1})),
        s2c(_log("asking")),
        s2c(req(0, "sampling/createMessage", {"messages": [], "maxTokens": 5})),
        c2s(res(0, {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"})),
        s2c(_log("got the answer")),
        s2c(res(3, {"content": []})),
    ])
    core, live = _core(cap)
    assert _logs(core.receive(live, _call(10, "echo"))) == ["echoing"]
    again = core.receive(live, _call(11, "echo"))
    assert [o.value for o in again] == [{"jsonrpc": "2.0", "id": 11, "result": {"content": [{"type": "text", "text": "hi"}]}}]
    sampling = {"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}}
    first = core.receive(live, _call(20, "ask", _meta={"progressToken": "t20"}))
    assert [o.value.get("method") for o in first] == ["notifications/progress", "notifications/message", "sampling/createMessage"]
    assert _logs(core.receive(live, sampling)) == ["got the answer"]
    # again: its own progress (the live token) and the sampling request its answer waits for, no log
    second = core.receive(live, _call(21, "ask", _meta={"progressToken": "t21"}))
    assert [o.value.get("method") for o in second] == ["notifications/progress", "sampling/createMessage"]
    assert second[0].value["params"]["progressToken"] == "t21"
    assert [o.value.get("id") for o in core.receive(live, sampling)] == [21]


def _out(i: int, via: int) -> Out:
    return Out({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}}, via=via)


def test_without_a_get_stream_a_message_whose_stream_ended_goes_on_another_open_one() -> None:
    held: list[Out] = []
    ms = MockSession(LiveSession(), on_backlog=lambda m, o: held.append(o), get_stream=False)
    running, done, quick = ms.open_post([1]), ms.open_post([2]), ms.open_post([3])
    running.sse = done.sse = True                   # 3: a JSON-mode POST carries only its answer
    late = _out(7, via=2)
    done.ids.clear()                                # its answer went out: the stream is ending
    ms.route(late)
    ms.close_post(done)
    ms.close_post(quick)
    assert held == [] and running.close() == [late]
    # none open: kept, and said
    ms.close_post(running)
    lost = _out(8, via=1)
    ms.route(lost)
    assert held == [lost]


def test_with_a_get_stream_offered_such_a_message_waits_for_it() -> None:
    held: list[Out] = []
    ms = MockSession(LiveSession(), on_backlog=lambda m, o: held.append(o), get_stream=True)
    other = ms.open_post([1])
    other.sse = True
    late = _out(7, via=2)
    ms.route(late)
    assert held == [late] and other.close() == []
