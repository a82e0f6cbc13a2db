"""The replay plan: waits and overlap, carried values, side-effect policy,
answers to server requests, 2026-07-28 input rounds, cancellation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcptap.replay.plan import AnswerBook, plan_from_path, tool_is_safe
from replay.capgen import C2S, META, S2C, TOOLS, Tape


def req(i: Any, method: str, params: Any = None) -> dict[str, Any]:
    d: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        d["params"] = params
    return d


def res(i: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def handshake(t: Tape, tools: list[dict[str, Any]] = TOOLS) -> None:
    t.send(C2S, req(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}}, "clientInfo": {"name": "c", "version": "1"}}))
    t.send(S2C, res(0, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}))
    t.send(C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    t.send(C2S, req(1, "tools/list"))
    t.send(S2C, res(1, {"tools": tools}))


def test_waits_follow_what_the_original_client_had_seen(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    t.send(C2S, req(3, "tools/call", {"name": "add", "arguments": {"a": 2}}))   # overlapped with 2
    t.send(S2C, res(3, {"content": []}))
    t.send(S2C, res(2, {"content": []}))
    t.send(C2S, req(4, "ping"))                                                 # after both answers
    t.send(S2C, res(4, {}))
    t.close()
    plan = plan_from_path(path)
    steps = {s.seq: s for s in plan.steps}
    by_label = [(s.label, s.waits) for s in plan.steps]
    assert by_label == [("initialize", []), ("notifications/initialized", [0]), ("tools/list", []),
                        ("tools/call add", [2]), ("tools/call add", []), ("ping", [4, 3])]
    calls = [s for s in plan.steps if s.method == "tools/call"]
    assert calls[0].group == calls[1].group                                     # one overlap group
    assert plan.era == "legacy" and plan.revision == "2025-06-18"
    assert all(s.response is not None for s in steps.values() if s.kind == "request")


def test_carried_values_cursor_and_task_id(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "resources/list"))
    t.send(S2C, res(2, {"resources": [], "nextCursor": "page-2-abc"}))
    t.send(C2S, req(3, "resources/list", {"cursor": "page-2-abc"}))
    t.send(S2C, res(3, {"resources": []}))
    t.send(C2S, req(4, "tools/call", {"name": "add", "arguments": {}, "task": {"ttl": 1000}}))
    t.send(S2C, res(4, {"task": {"taskId": "task-77", "status": "working"}}))
    t.send(C2S, req(5, "tasks/get", {"taskId": "task-77"}))
    t.send(S2C, res(5, {"taskId": "task-77", "status": "completed"}))
    t.close()
    plan = plan_from_path(path)
    page2 = next(s for s in plan.steps if s.method == "resources/list" and s.params)
    (c,) = page2.carry
    assert (c.path, c.source_path, c.value) == (("params", "cursor"), ("result", "nextCursor"), "page-2-abc")
    assert plan.steps[c.source].method == "resources/list"
    get = next(s for s in plan.steps if s.method == "tasks/get")
    (c,) = get.carry
    assert (c.path, c.source_path) == (("params", "taskId"), ("result", "task", "taskId"))
    assert plan.steps[c.source].label == "tools/call add"


def test_side_effect_policy_from_recorded_annotations(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    for i, name in enumerate(["add", "wipe", "unknown"], start=2):
        t.send(C2S, req(i, "tools/call", {"name": name, "arguments": {}}))
        t.send(S2C, res(i, {"content": []}))
    t.send(C2S, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    t.close()
    skipped = {s.label: s.skip for s in plan_from_path(path).steps if s.skip}
    assert set(skipped) == {"tools/call wipe", "tools/call unknown", "notifications/cancelled"}
    assert "not declared read-only" in skipped["tools/call wipe"]
    assert "no recorded annotations" in skipped["tools/call unknown"]
    assert [s.label for s in plan_from_path(path, allow_side_effects=True).steps if s.skip] == []
    assert tool_is_safe({"readOnlyHint": True}) and not tool_is_safe({"readOnlyHint": True, "destructiveHint": True})
    assert not tool_is_safe({}) and not tool_is_safe(None) and not tool_is_safe({"destructiveHint": False})


def test_server_requests_become_answers_matched_by_method_and_params(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {}}))
    t.send(S2C, req(90, "sampling/createMessage", {"messages": [{"role": "user", "content": {"type": "text", "text": "A"}}], "maxTokens": 5}))
    t.send(C2S, res(90, {"role": "assistant", "content": {"type": "text", "text": "answer A"}, "model": "m"}))
    t.send(S2C, req(91, "sampling/createMessage", {"messages": [{"role": "user", "content": {"type": "text", "text": "B"}}], "maxTokens": 5}))
    t.send(C2S, {"jsonrpc": "2.0", "id": 91, "error": {"code": -1, "message": "user rejected"}})
    t.send(S2C, res(2, {"content": []}))
    t.close()
    plan = plan_from_path(path)
    assert [(r.method, r.answer is not None) for r in plan.server_requests] == [("sampling/createMessage", True)] * 2
    assert [s.kind for s in plan.steps].count("request") == 3       # the client's answers are not steps
    book = plan.answers
    ask_b = {"messages": [{"role": "user", "content": {"type": "text", "text": "B"}}], "maxTokens": 5}
    assert book.take("sampling/createMessage", ask_b) == ({"error": {"code": -1, "message": "user rejected"}}, "exact")
    other = {"messages": [], "maxTokens": 1}
    ans, how = book.take("sampling/createMessage", other)
    assert how == "method" and ans == {"result": {"role": "assistant", "content": {"type": "text", "text": "answer A"}, "model": "m"}}
    assert book.take("roots/list", {}) == (None, "none")
    assert book.take("ping", None) == ({"result": {}}, "default")


def test_answer_book_is_fifo_and_repeats_the_last() -> None:
    book = AnswerBook()
    book.add("elicitation/create", {"message": "q"}, {"result": {"action": "accept", "n": 1}})
    book.add("elicitation/create", {"message": "q"}, {"result": {"action": "accept", "n": 2}})
    got = [book.take("elicitation/create", {"message": "q"})[0]["result"]["n"] for _ in range(3)]
    assert got == [1, 2, 2]


def test_modern_input_rounds_and_request_state(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    meta = {"_meta": META}
    t.send(C2S, req(1, "tools/list", meta))
    t.send(S2C, res(1, {"tools": TOOLS, "resultType": "complete"}))
    ask = {"method": "elicitation/create", "params": {"message": "colour?", "requestedSchema": {"type": "object"}}}
    t.send(C2S, req(2, "tools/call", {"name": "add", "arguments": {}, **meta}))
    t.send(S2C, res(2, {"resultType": "input_required", "inputRequests": {"k1": ask}, "requestState": "opaque-1"}))
    t.send(C2S, req(3, "tools/call", {"name": "add", "arguments": {}, "inputResponses": {"k1": {"action": "accept", "content": {"c": "red"}}},
                                      "requestState": "opaque-1", **meta}))
    t.send(S2C, res(3, {"content": [], "resultType": "complete"}))
    t.close()
    plan = plan_from_path(path)
    assert plan.era == "modern" and plan.revision == "2026-07-28"
    first, retry = plan.steps[1], plan.steps[2]
    assert retry.retry_of == first.index and retry.waits == [first.index]
    assert [(c.path, c.source, c.source_path) for c in retry.carry] == [(("params", "requestState"), first.index, ("result", "requestState"))]
    assert plan.answers.take("elicitation/create", ask["params"]) == ({"result": {"action": "accept", "content": {"c": "red"}}}, "exact")


def test_stray_lines_and_client_garbage_are_not_replayed(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    t.send(C2S, b"hello server\n")
    handshake(t)
    t.send(S2C, b"log: ready\n")
    t.close()
    assert [s.label for s in plan_from_path(path).steps] == ["initialize", "notifications/initialized", "tools/list"]


def test_requests_the_tap_refused_are_not_replayed() -> None:
    """A real HTTP tap's capture: an initialize sent with ``Host: evil.example``
    (refused 403 by the DNS rebinding guard: it never reached the upstream),
    then the same initialize from a loopback client. Replay used to send both;
    the refused one is now a skipped step that says why."""
    plan = plan_from_path(str(Path(__file__).resolve().parents[1] / "data" / "http-host-rejected.jsonl"))
    assert [(s.method, s.skip) for s in plan.steps] == [
        ("initialize", "the tap refused it (host_rejected): it never reached the server"), ("initialize", None)]


def test_the_revision_is_the_negotiated_one_not_a_probes(tmp_path: Path) -> None:
    """An SDK client in auto mode probes with server/discover (2026-07-28 in its _meta), gets
    -32601 from a handshake-era server and negotiates 2025-11-25 by initialize: replay's banner,
    its JSON ``revision`` and the surface compared came from the probe (2026-07-28)."""
    from mcptap.cli.replay import surface_of
    from scripted import META as PROBE_META
    from scripted import c2s, err, handshake, record, req, res, s2c

    probe = [c2s(req(0, "server/discover", {"_meta": PROBE_META})), s2c(err(0, -32601, "Method not found"))]
    path = record(tmp_path / "probe.jsonl", probe + handshake("2025-11-25") + [c2s(req(2, "ping")), s2c(res(2))])
    plan = plan_from_path(str(path))
    assert (plan.era, plan.revision) == ("legacy", "2025-11-25")
    assert surface_of(plan, None).revision == "2025-11-25"
    # a probe nothing answered keeps the revision it offered; a 2026 session keeps its own
    only = record(tmp_path / "only.jsonl", [c2s(req(0, "server/discover", {"_meta": PROBE_META}))])
    assert plan_from_path(str(only)).revision == "2026-07-28"
    modern = tmp_path / "modern.jsonl"
    tape = Tape(str(modern))
    tape.send(C2S, {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}})
    tape.send(S2C, {"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {}}})
    tape.send(C2S, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}})
    tape.send(S2C, {"jsonrpc": "2.0", "id": 2, "result": {"tools": TOOLS, "resultType": "complete"}})
    tape.close()
    assert plan_from_path(str(modern)).revision == "2026-07-28"


def test_numbers_orjson_cannot_write_are_held_as_recorded_in_batches_and_answers(tmp_path: Path) -> None:
    """What replay sends again keeps a number orjson would write as another one
    (1e400 as null) as its literal: in a batch (its member ids too, read as the
    numbers the runner keys them by) and in the client's answer to a server request."""
    from mcptap.capture.dumps import dumps
    from mcptap.replay.steps import read_id

    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, b'[{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"add","arguments":{"a":1E400}}}]\n')
    t.send(S2C, b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[]}}\n')
    t.send(C2S, b'{"jsonrpc":"2.0","id":7,"result":{"model":"m","n":-1e400}}\n')
    t.close()
    plan = plan_from_path(path, allow_side_effects=True)
    batch = plan.steps[-1]
    assert batch.kind == "batch" and read_id(batch.message[0]["id"]) == float("inf")
    assert dumps(batch.message[0]["params"]) == b'{"name":"add","arguments":{"a":1E400}}'
    ans, how = plan.answers.take("sampling/createMessage", {"messages": []})
    assert how == "exact" and dumps(ans) == b'{"result":{"model":"m","n":-1e400}}'
