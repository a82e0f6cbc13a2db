"""The serve core (pure): matching, FIFO among equals, progress tokens, server
requests waiting for the client's answer, errors for requests with no answer,
strict matching, recorded delays, sessions — on captures made by the real Recorder."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.compare.mask import Masker
from mcptap.compare.match import Matcher
from mcptap.serve.core import ServeCore
from mcptap.serve.script import script_from_path
from mcptap.serve.wire import encode
from scripted import c2s, handshake, note, record, req, res, s2c


def _core(path: Path, **kw: Any) -> ServeCore:
    return ServeCore(script_from_path(str(path)), **kw)


def _call(name: str, args: dict[str, Any], token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": args}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return params


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "c.jsonl", [
        *handshake(),
        c2s(req(2, "tools/call", _call("add", {"a": 1, "b": 2}))),
        s2c(res(2, {"content": [{"type": "text", "text": "3"}]})),
        c2s(req(3, "tools/call", _call("add", {"a": 1, "b": 2}))),
        s2c(res(3, {"content": [{"type": "text", "text": "3 again"}]})),
        c2s(req(4, "tools/call", _call("slow", {}, token="tok-4"))),
        s2c(note("notifications/progress", {"progressToken": "tok-4", "progress": 1, "total": 2})),
        s2c(note("notifications/message", {"level": "info", "data": "working"})),
        s2c(req(0, "sampling/createMessage", {"messages": [], "maxTokens": 5})),
        c2s(res(0, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})),
        s2c(note("notifications/progress", {"progressToken": "tok-4", "progress": 2, "total": 2})),
        s2c(res(4, {"content": [{"type": "text", "text": "done"}]})),
        s2c(note("notifications/tools/list_changed")),
    ])


def _init(core: ServeCore, live: Any) -> None:
    out = core.receive(live, {"jsonrpc": "2.0", "id": "a", "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}},
                                         "clientInfo": {"name": "other client", "version": "9"}}})
    assert [o.value["result"]["serverInfo"]["name"] for o in out] == ["s"] and out[0].value["id"] == "a"
    assert core.receive(live, {"jsonrpc": "2.0", "method": "notifications/initialized"}) == []


def test_identical_calls_get_their_recorded_answers_in_order_then_the_last_again(cap: Path) -> None:
    core = _core(cap)
    live = core.open()
    _init(core, live)
    texts = []
    for i in (10, 11, 12):
        out = core.receive(live, {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": _call("add", {"b": 2, "a": 1})})
        assert [o.value["id"] for o in out] == [i]
        texts.append(out[0].value["result"]["content"][0]["text"])
    assert texts == ["3", "3 again", "3 again"]


def test_progress_log_and_a_server_request_come_at_their_recorded_place(cap: Path) -> None:
    core = _core(cap)
    live = core.open()
    _init(core, live)
    out = core.receive(live, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": _call("slow", {}, token=99)})
    assert [o.value.get("method") for o in out] == ["notifications/progress", "notifications/message", "sampling/createMessage"]
    assert out[0].value["params"]["progressToken"] == 99           # the live token, not "tok-4"
    assert all(o.via == 7 for o in out)
    # the answer and what followed it wait for the client's answer to the sampling request
    sid = out[2].value["id"]
    after = core.receive(live, {"jsonrpc": "2.0", "id": sid, "result": {"role": "assistant", "content": {"type": "text", "text": "?"}, "model": "x"}})
    assert [o.value.get("method", "response") for o in after] == ["notifications/progress", "response", "notifications/tools/list_changed"]
    assert after[0].value["params"]["progressToken"] == 99 and after[1].value["id"] == 7 and after[1].answers == 7
    assert after[1].value["result"]["content"][0]["text"] == "done"


def test_no_progress_when_the_live_request_asks_for_none(cap: Path) -> None:
    core = _core(cap)
    live = core.open()
    _init(core, live)
    out = core.receive(live, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": _call("slow", {})})
    assert [o.value.get("method") for o in out] == ["notifications/message", "sampling/createMessage"]


def test_requests_without_an_answer_get_errors_and_findings(cap: Path) -> None:
    core = _core(cap)
    live = core.open()
    _init(core, live)
    unknown = core.receive(live, {"jsonrpc": "2.0", "id": 1, "method": "resources/list"})[0]
    assert unknown.value["error"]["code"] == -32601 and "resources/list" in unknown.value["error"]["message"]
    other = core.receive(live, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _call("add", {"a": 5, "b": 2})})[0]
    assert other.value["error"]["code"] == -32602 and "tools/call" in other.value["error"]["message"]
    assert unknown.finding is not None and other.finding is not None
    assert unknown.finding.code == other.finding.code == "serve.no_recorded_answer"
    assert len(live.unanswered) == 2
    ping = core.receive(live, {"jsonrpc": "2.0", "id": 3, "method": "ping"})[0]
    assert ping.value == {"jsonrpc": "2.0", "id": 3, "result": {}} and ping.finding is None


def test_strict_needs_exact_params_and_does_not_repeat(cap: Path) -> None:
    core = _core(cap, strict=True)
    live = core.open()
    _init(core, live)
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": _call("add", {"a": 1, "b": 2}, token="x")}
    assert "result" in core.receive(live, call)[0].value            # progressToken ignored
    assert "result" in core.receive(live, call)[0].value
    again = core.receive(live, call)[0]
    assert again.value["error"]["code"] == -32602
    # the capture has answers to this very request, given already: it says so, not "no answer"
    assert "used up" in again.value["error"]["message"] and "no answer" not in again.value["error"]["message"]
    assert live.unanswered[-1].endswith("are used up (--strict)")
    other = core.receive(live, {**call, "params": _call("add", {"a": 1, "b": 3})})[0]
    assert "no answer to tools/call with these params" in other.value["error"]["message"]


def test_strict_still_ignores_the_paths_the_user_said_to_ignore(cap: Path) -> None:
    """--strict dropped --ignore: the strict key bypassed the masker, so a request answered
    without --strict was refused with it."""
    core = _core(cap, strict=True, masker=Masker(["params.arguments.a", "tools/call:params.arguments.b"]))
    live = core.open()
    _init(core, live)
    first = core.receive(live, {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": _call("add", {"a": 40, "b": 0})})
    assert first[0].value["result"]["content"][0]["text"] == "3"
    again = core.receive(live, {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": _call("add", {"a": 1, "b": 9})})
    assert again[0].value["result"]["content"][0]["text"] == "3 again"
    # the rest is still exact, and nothing is repeated
    other = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": _call("add", {"a": 1, "b": 2, "c": 3})}
    assert core.receive(live, other)[0].value["error"]["code"] == -32602
    assert core.receive(live, {**other, "params": _call("add", {"a": 1, "b": 2})})[0].value["error"]["code"] == -32602


def test_the_strict_view_masks_only_the_ignored_paths() -> None:
    m = Masker(["params.x[*].y", "other/method:params.z"])
    v = {"x": [{"y": 1, "k": "2026-01-01T00:00:00Z"}, {"y": 2}], "z": 3, "_meta": {"progressToken": 1}}
    # an ignored key is removed (present on one side only must not tell two requests apart)
    assert m.ignored(v, "tools/call") == {"x": [{"k": "2026-01-01T00:00:00Z"}, {}], "z": 3, "_meta": {"progressToken": 1}}
    assert m.ignored({"z": 3}, "tools/call") == {"z": 3} and m.ignored({"z": 3}, "other/method") == {}
    assert Masker().ignored(v, "tools/call") is v
    # a path naming the member itself masks all of it (as replay and diff do)
    assert Masker(["tools/call:params"]).ignored(v, "tools/call") == "<masked>" and Masker(["tools/call:params"]).ignored(v, "x") is v


def test_recorded_delays_scaled_by_speed(cap: Path) -> None:
    core = _core(cap, latency=True, speed=2.0)
    live = core.open()
    _init(core, live)
    out = core.receive(live, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": _call("slow", {}, token=1)})
    # the scripted clock advances 1 ms a step: 1, 2, 3 ms after the call, halved
    assert [o.delay_s for o in out] == pytest.approx([0.0005, 0.001, 0.0015])


def test_each_live_session_plays_its_own_recorded_session(tmp_path: Path) -> None:
    # a stdio capture with two handshakes: two recorded sessions with different answers
    path = record(tmp_path / "two.jsonl", [
        *handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": [{"name": "one"}]})),
        *handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": [{"name": "two"}]})),
    ])
    script = script_from_path(str(path))
    assert len(script.sessions) == 2
    core = ServeCore(script)
    names = []
    for _ in range(2):
        live = core.open()
        _init(core, live)
        names.append(core.receive(live, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"})[0].value["result"]["tools"][0]["name"])
    assert names == ["one", "two"]


# -- the matcher --------------------------------------------------------------------------

def test_matcher_ignores_meta_and_volatile_fields_and_prefers_the_group() -> None:
    m: Matcher[str] = Matcher()
    m.add("tools/call", {"name": "t", "arguments": {"at": "2026-01-01T00:00:00Z"}}, "g0", group=0)
    m.add("tools/call", {"name": "t", "arguments": {"at": "2026-02-02T00:00:00Z"}}, "g1", group=1)
    live = {"name": "t", "arguments": {"at": "2027-03-03T10:00:00Z"}, "_meta": {"progressToken": 5}}
    assert m.take("tools/call", live, group=1) == ("g1", "exact")
    assert m.take("tools/call", live, group=1) == ("g0", "exact")
    assert m.take("tools/call", live, group=1) == ("g1", "reused")
    assert m.take("tools/list", None) == (None, "none")


def test_a_client_that_pages_twice_gets_the_page_its_cursor_names() -> None:
    """A cursor is masked as volatile, so every page shares one key: a second
    listing got the next page in line (t0, t2: t1 silently missing; found by a
    breaker helper). Equal params come first, also once all were used."""
    m: Matcher[str] = Matcher()
    for cursor, page in ((None, "p0"), ("c1", "p1"), ("c2", "p2")):
        m.add("tools/list", {"cursor": cursor} if cursor else None, page)
    for rnd, how in ((0, "exact"), (1, "reused")):
        got = [m.take("tools/list", {"cursor": c} if c else None) for c in (None, "c1", "c2")]
        assert got == [("p0", how), ("p1", how), ("p2", how)], rnd
    assert m.take("tools/list", {"cursor": "c9"}) == ("p2", "reused")       # an unknown cursor: the last, as before
    # a page asked again while other pages are still unused gets its own page again (it got the next unused one)
    m2: Matcher[str] = Matcher()
    for cursor, page in ((None, "a"), ("p2", "b"), ("p3", "c"), ("p3", "c2"), (None, "a2")):
        m2.add("tools/list", {"cursor": cursor} if cursor else None, page)
    got = [m2.take("tools/list", {"cursor": c} if c else None)[0] for c in ("p3", "p2", None, "p2")]
    assert got == ["c", "b", "a", "b"]


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12))
def test_matcher_is_fifo_per_key(keys: list[str]) -> None:
    m: Matcher[tuple[str, int]] = Matcher()
    for i, k in enumerate(keys):
        m.add("x", {"k": k}, (k, i))
    for k in "abc":
        expected = [(kk, i) for i, kk in enumerate(keys) if kk == k]
        got = [m.take("x", {"k": k}, group=None)[0] for _ in expected]
        assert got == expected


_CAP: Path | None = None
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error",
                                                                                  "_meta", "progressToken", "requestId", "name"]), inner, max_size=5),
    max_leaves=20)
_methods = st.sampled_from(["initialize", "tools/call", "tools/list", "ping", "notifications/cancelled", "notifications/initialized", "x/y"])


@given(st.lists(_json | st.builds(lambda m, i, p: {"jsonrpc": "2.0", "id": i, "method": m, "params": p}, _methods, _json, _json), max_size=8))
def test_any_client_input_gives_serialisable_answers_and_never_raises(values: list[Any]) -> None:
    global _CAP
    if _CAP is None:
        _CAP = Path(tempfile.mkdtemp(prefix="mcptap-serve-")) / "cap.jsonl"
        record(_CAP, [*handshake(), c2s(req(2, "tools/call", _call("slow", {}, token=1))),
                      s2c(note("notifications/progress", {"progressToken": 1, "progress": 1})),
                      s2c(req(0, "roots/list")), c2s(res(0, {"roots": []})), s2c(res(2, {"content": []}))])
    core = _core(_CAP)
    live = core.open()
    for v in values:
        for out in core.receive(live, v):
            assert json.loads(encode(out.value)) == out.value


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_a_request_id_no_answer_can_carry_back_is_an_invalid_request(cap: Path, bad: float) -> None:
    """A live id of 1e400 (read as infinity): the mock answered with the
    recorded result and ``"id": null``, which no client can match. It is now
    -32600 with id null, as an SDK server rejects it, and uses up no recorded
    answer (the next equal request still gets the first one)."""
    core = _core(cap)
    live = core.open()
    _init(core, live)
    (out,) = core.receive(live, {"jsonrpc": "2.0", "id": bad, "method": "tools/call", "params": _call("add", {"a": 1, "b": 2})})
    assert out.value["id"] is None and out.value["error"]["code"] == -32600 and encode(out.value).startswith(b'{"jsonrpc":"2.0","id":null')
    (ok,) = core.receive(live, {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": _call("add", {"a": 1, "b": 2})})
    assert ok.value == {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "3"}]}}


def test_chained_server_requests_and_what_comes_between_them_ride_the_requests_stream(tmp_path: Path) -> None:
    """A tool that asks the client three times in a row (progress and a log message between): every
    server message up to the result belongs to the tools/call (``via`` its live id, as a real
    Streamable HTTP server sends related requests on that request's stream), what followed the
    result and what the server sent on its own (roots/list after initialized) go to the standalone stream."""
    cap = record(tmp_path / "c.jsonl", [
        *handshake(),
        s2c(req(10, "roots/list")),
        c2s(res(10, {"roots": []})),
        c2s(req(2, "tools/call", _call("ask", {}, token="t"))),
        s2c(note("notifications/progress", {"progressToken": "t", "progress": 1})),
        s2c(req(11, "elicitation/create", {"message": "colour?", "requestedSchema": {"type": "object", "properties": {}}})),
        c2s(res(11, {"action": "accept", "content": {}})),
        s2c(note("notifications/progress", {"progressToken": "t", "progress": 2})),
        s2c(note("notifications/message", {"level": "info", "data": "asking the model"})),
        s2c(req(12, "sampling/createMessage", {"messages": [], "maxTokens": 5})),
        c2s(res(12, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})),
        s2c(req(13, "roots/list")),
        c2s(res(13, {"roots": []})),
        s2c(res(2, {"content": [{"type": "text", "text": "done"}]})),
        s2c(note("notifications/tools/list_changed")),
    ])
    core = _core(cap)
    live = core.open()
    assert core.receive(live, {"jsonrpc": "2.0", "id": "a", "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})[0].answers == "a"
    unrelated = core.receive(live, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert [(o.value["method"], o.via) for o in unrelated] == [("roots/list", None)]
    assert core.receive(live, {"jsonrpc": "2.0", "id": 10, "result": {"roots": []}}) == []
    seen = [(o.value.get("method", "response"), o.via) for o in core.receive(
        live, {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": _call("ask", {}, token="p")})]
    answers = {"elicitation/create": {"action": "accept", "content": {}}, "roots/list": {"roots": []},
               "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "y"}}
    while seen[-1][0] in answers:
        sent = seen[-1]
        sid = {"elicitation/create": 11, "sampling/createMessage": 12, "roots/list": 13}[sent[0]]
        seen += [(o.value.get("method", "response"), o.via)
                 for o in core.receive(live, {"jsonrpc": "2.0", "id": sid, "result": answers[sent[0]]})]
    assert seen == [("notifications/progress", "c"), ("elicitation/create", "c"),
                    ("notifications/progress", "c"), ("notifications/message", "c"), ("sampling/createMessage", "c"),
                    ("roots/list", "c"), ("response", "c"), ("notifications/tools/list_changed", None)]


def test_a_client_on_another_protocol_revision_is_told_once(cap: Path) -> None:
    """The capture was recorded in 2025-06-18; a client offering 2025-11-25 got those answers
    without a word. One line now says so (and none when the revisions agree)."""
    said: list[str] = []
    core = _core(cap, say=said.append)
    live = core.open()
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    core.receive(live, init)
    core.receive(core.open(), {**init, "id": 2})
    assert said == ["the capture's protocol revision is 2025-06-18, the client's is 2025-11-25: "
                    "it gets the answers recorded in 2025-06-18"]
    same: list[str] = []
    core = _core(cap, say=same.append)
    _init(core, core.open())
    assert same == []
