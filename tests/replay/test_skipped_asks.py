"""Server requests that only a skipped client request can have caused: replay
does not send that request, so the live server has no reason to ask; such a
request is SKIPPED, not MISSING (replay/compare.py, plan.py ``during``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcptap.replay.compare import compare_replay
from mcptap.replay.plan import plan_from_path
from replay.capgen import C2S, META, S2C, Tape
from replay.test_plan import handshake, req, res

ASK = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 3}}


class _Live:
    def __init__(self, response: Any) -> None:
        self.response, self.latency_us, self.live_id = response, 10, None


def _rows(path: str, live_asks: list[Any] = ()) -> list[tuple[str, str]]:
    """The verdicts of a replay in which every sent step got its recorded answer
    and the live server asked ``live_asks`` (objects with method, params, how)."""
    plan = plan_from_path(path)
    live = {s.index: _Live(s.response) for s in plan.steps if not s.skip and s.kind == "request"}
    return [(r.label, r.status) for r in compare_replay(plan, live, list(live_asks), {})]


class _Ask:
    def __init__(self, method: str, params: Any) -> None:
        self.method, self.params, self.how = method, params, "exact"


def _capture(path: str, ask_during: str) -> None:
    """A read-only add and a destructive wipe; the server asks for sampling while
    ``ask_during`` ("wipe", "both", "none") was in flight."""
    t = Tape(path)
    handshake(t)
    if ask_during == "none":
        t.send(S2C, {"jsonrpc": "2.0", "id": 0, **ASK})
        t.send(C2S, res(0, {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}))
    t.send(C2S, req(2, "tools/call", {"name": "wipe", "arguments": {"path": "/x"}}))
    if ask_during == "both":
        t.send(C2S, req(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    if ask_during != "none":
        t.send(S2C, {"jsonrpc": "2.0", "id": 0, **ASK})
        t.send(C2S, res(0, {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}))
    t.send(S2C, res(2, {"content": []}))
    if ask_during != "both":
        t.send(C2S, req(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    t.send(S2C, res(3, {"content": []}))
    t.close()


def test_a_request_asked_while_only_a_skipped_call_was_in_flight_is_skipped(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    _capture(path, "wipe")
    assert _rows(path) == [("initialize", "MATCH"), ("tools/list", "MATCH"), ("tools/call wipe", "SKIPPED"),
                           ("tools/call add", "MATCH"), ("s2c sampling/createMessage", "SKIPPED")]
    # the live server asked all the same (another cause): it is that request, not a NEW one
    assert _rows(path, [_Ask(ASK["method"], ASK["params"])])[-1] == ("s2c sampling/createMessage", "MATCH")


def test_a_request_a_sent_call_may_have_caused_is_still_missing(tmp_path: Path) -> None:
    for during in ("both", "none"):         # a sent call was in flight too / no call was (the server's own)
        path = str(tmp_path / f"{during}.jsonl")
        _capture(path, during)
        assert ("s2c sampling/createMessage", "MISSING") in _rows(path), during
        assert ("s2c sampling/createMessage", "MATCH") in _rows(path, [_Ask(ASK["method"], ASK["params"])])


def test_a_live_request_goes_first_to_the_one_expected_live(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.send(C2S, req(2, "tools/call", {"name": "wipe", "arguments": {"path": "/x"}}))
    t.send(S2C, {"jsonrpc": "2.0", "id": 0, **ASK})
    t.send(C2S, res(0, {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}))
    t.send(S2C, res(2, {"content": []}))
    t.send(C2S, req(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    t.send(S2C, {"jsonrpc": "2.0", "id": 1, **ASK})
    t.send(C2S, res(1, {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}))
    t.send(S2C, res(3, {"content": []}))
    t.close()
    assert _rows(path, [_Ask(ASK["method"], ASK["params"])])[-2:] == [
        ("s2c sampling/createMessage", "SKIPPED"), ("s2c sampling/createMessage", "MATCH")]


def test_input_requests_in_the_answer_of_a_skipped_call_are_skipped(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    meta = {"_meta": META}
    t.send(C2S, req(1, "tools/call", {"name": "wipe", "arguments": {}, **meta}))
    t.send(S2C, res(1, {"resultType": "input_required", "inputRequests": {"k": ASK}, "requestState": "S"}))
    t.send(C2S, req(2, "tools/call", {"name": "wipe", "arguments": {}, "inputResponses": {"k": {"role": "assistant", "model": "m"}},
                                      "requestState": "S", **meta}))
    t.send(S2C, res(2, {"resultType": "complete", "content": []}))
    t.close()
    assert _rows(path) == [("tools/call wipe", "SKIPPED"), ("tools/call wipe", "SKIPPED"), ("s2c sampling/createMessage", "SKIPPED")]


def _many_in_flight(path: str, wipes: int, adds: int = 0) -> None:
    """``wipes`` destructive calls (and ``adds`` read-only ones) sent back to
    back and all in flight when the server asks for sampling; then answered."""
    t = Tape(path)
    handshake(t)
    ids = list(range(2, 2 + wipes + adds))
    for i in ids:
        t.send(C2S, req(i, "tools/call", {"name": "wipe" if i < 2 + wipes else "add",
                                          "arguments": {"path": f"/x{i}"} if i < 2 + wipes else {"a": i, "b": 1}}))
    t.send(S2C, {"jsonrpc": "2.0", "id": 0, **ASK})
    t.send(C2S, res(0, {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}))
    for i in ids:
        t.send(S2C, res(i, {"content": []}))
    t.close()


def test_any_number_of_skipped_calls_in_flight_still_skips_their_request(tmp_path: Path) -> None:
    """Past 64 requests in flight the cause used to be dropped (held as None), so
    a correct server was blamed (MISSING) for not asking; it is exact now."""
    for wipes in (64, 65, 500):
        path = str(tmp_path / f"w{wipes}.jsonl")
        _many_in_flight(path, wipes)
        plan = plan_from_path(path)
        (srv,) = plan.server_requests
        assert srv.in_flight == wipes and srv.only_skipped, wipes
        assert _rows(path)[-1] == ("s2c sampling/createMessage", "SKIPPED"), wipes
        rows = compare_replay(plan, {}, [], {})
        seqs = [s.seq for s in plan.steps if s.method == "tools/call"][:3]
        assert rows[-1].note == f"asked during skipped #{seqs[0]}, #{seqs[1]}, #{seqs[2]} …: not expected live"


def test_one_sent_call_among_many_skipped_ones_keeps_the_request_expected(tmp_path: Path) -> None:
    path = str(tmp_path / "c.jsonl")
    _many_in_flight(path, 200, adds=1)          # the read-only call is the 201st in flight
    (srv,) = plan_from_path(path).server_requests
    assert srv.in_flight == 201 and not srv.only_skipped
    assert _rows(path)[-1] == ("s2c sampling/createMessage", "MISSING")
