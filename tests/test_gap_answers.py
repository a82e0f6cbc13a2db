"""A request whose answer may be in a recording gap is not blamed on the peer
(mcptap/protocol/gap_pending.py): the live recorder and re-annotation (check,
check --full) agree. Sans-IO: a Recorder fed scripted bytes and ``lost``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from mcptap.capture.reader import read_capture
from mcptap.check.parallel import check_capture as fast_check
from mcptap.check.report import check_capture
from mcptap.model import Direction
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from scripted import c2s, handshake, note, record, req, res, s2c

LOG = note("notifications/message", {"level": "info", "data": "x"})
BLAME = {"lifecycle.eof_with_pending_requests", "jsonrpc.unanswered_request"}


def _codes(recs: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for r in recs for f in r.get("findings") or r.get("unanswered") or ()]


def _live(steps: list[tuple[str, Any]], path: Path) -> list[dict[str, Any]]:
    record(path, steps)
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _exit(recs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(f for r in recs if r.get("event") == "exit" for f in r["findings"] if f["code"] == "process.exit")


def test_a_request_open_across_a_gap_in_its_answers_direction_is_not_unanswered(tmp_path: Path) -> None:
    steps = handshake() + [c2s(req(2, "tools/list")), ("lost", ("s2c", 5000)), s2c(LOG), ("eof", "c2s"), ("eof", "s2c"), ("exit", 0)]
    recs = _live(steps, tmp_path / "a.jsonl")
    codes = _codes(recs)
    assert not BLAME & set(codes), codes
    assert codes.count("capture.answers_in_gap") == 1
    end = recs[-1]
    assert end["pending"] == []
    gapf = next(f for f in end["unanswered"] if f["code"] == "capture.answers_in_gap")
    assert gapf["severity"] == "info" and [p["seq"] for p in gapf["data"]["pending"]] == [4]
    assert _exit(recs)["data"]["pending"] == 0 and "pending" not in _exit(recs)["message"]
    # re-annotation with today's rules (check, check --full) says the same
    for reuse in (True, False):
        rep = check_capture(str(tmp_path / "a.jsonl"), reuse=reuse)
        assert not BLAME & set(rep.groups), (reuse, sorted(rep.groups))
        assert rep.groups["capture.answers_in_gap"].severity == "info"
    cap = read_capture(str(tmp_path / "a.jsonl"))
    again = list(reannotate(cap.header, cap.records + [cap.end], reuse=False))
    assert _codes(again) == codes


def test_a_gap_does_not_excuse_what_it_could_not_hide(tmp_path: Path) -> None:
    # the request came after the gap, or the gap was in the request's own direction: still unanswered
    after = _codes(_live(handshake() + [("lost", ("s2c", 5000)), s2c(LOG), c2s(req(2, "tools/list")), ("eof", "s2c")], tmp_path / "b.jsonl"))
    assert "lifecycle.eof_with_pending_requests" in after and "capture.answers_in_gap" not in after
    same_way = _codes(_live(handshake() + [c2s(req(2, "tools/list")), ("lost", ("c2s", 5000)), c2s(LOG), ("eof", "s2c")], tmp_path / "c.jsonl"))
    assert "lifecycle.eof_with_pending_requests" in same_way and "capture.answers_in_gap" not in same_way
    # a server request open while the client's direction lost bytes is the client's possible answer
    srv = _codes(_live(handshake() + [s2c(req(7, "ping")), ("lost", ("c2s", 100)), c2s(LOG), ("eof", "c2s")], tmp_path / "d.jsonl"))
    assert "jsonrpc.unanswered_request" not in srv and "capture.answers_in_gap" in srv


def test_an_answer_after_the_gap_still_pairs(tmp_path: Path) -> None:
    recs = _live(handshake() + [c2s(req(2, "tools/list")), ("lost", ("s2c", 5000)), s2c(LOG), s2c(res(2, {"tools": []})), ("eof", "s2c")],
                 tmp_path / "e.jsonl")
    codes = _codes(recs)
    assert "capture.answers_in_gap" not in codes and "jsonrpc.unmatched_response" not in codes
    assert next(r for r in recs if r.get("id") == 2 and r.get("dir") == "s2c")["pair"] == 4


def test_the_sans_io_recorder_without_a_writer() -> None:
    now = {"t": 0}

    def clock() -> int:
        now["t"] += 1
        return now["t"]

    rec = Recorder(None, clock=clock, started="2026-01-01T00:00:00Z")
    for d, data in handshake() + [c2s(req(2, "tools/list"))]:
        rec.stdio_bytes(Direction(d), data)
    rec.lost(Direction.S2C, 10, "the spill file was full")
    assert rec.stdio_eof(Direction.S2C) == []
    assert rec.annotator.pending() == []
    end = rec.close()
    assert [f["code"] for f in end["unanswered"]] == ["capture.answers_in_gap"]
    # the one error is the gap itself (check's capture.gap): the request it may have answered is no error
    assert end["severities"].get("error", 0) == 1 and end["codes"].get("capture.gap") == 1


def test_a_response_whose_request_may_be_in_a_gap_is_not_blamed_on_its_sender(tmp_path: Path) -> None:
    # the client's tools/list (id 2) was forwarded in a hole of c2s; the server's answer arrives after it
    answer = s2c(res(2, {"tools": []}))
    cases = {"c2s": handshake() + [("lost", ("c2s", 5000)), c2s(LOG), answer, ("eof", "c2s"), ("eof", "s2c")],
             "both": handshake() + [("gap", "the relay was stopped"), answer, ("eof", "s2c")],
             # the converse: a server request lost in s2c, the client's answer after it
             "server": handshake() + [("lost", ("s2c", 300)), s2c(LOG), c2s(res(7, {})), ("eof", "s2c")]}
    for name, steps in cases.items():
        path = tmp_path / f"{name}.jsonl"
        recs = _live(steps, path)
        codes = _codes(recs)
        assert "jsonrpc.unmatched_response" not in codes, (name, codes)
        f = next(f for r in recs for f in r.get("findings") or () if f["code"] == "capture.request_in_gap")
        assert f["severity"] == "info"
        assert recs[-1]["severities"].get("error", 0) == sum(1 for r in recs if r.get("type") == "gap"), (name, recs[-1]["severities"])
        for check, reuse in ((check_capture, True), (check_capture, False), (fast_check, True), (fast_check, False)):
            rep = check(str(path), reuse=reuse)         # check (its fast scan too) and check --full say the same
            assert "jsonrpc.unmatched_response" not in rep.groups, (name, reuse, sorted(rep.groups))
            assert rep.groups["capture.request_in_gap"].severity == "info"
        cap = read_capture(str(path))
        assert _codes(list(reannotate(cap.header, cap.records + [cap.end], reuse=False))) == codes


def test_a_gap_does_not_excuse_a_response_it_could_not_have_hidden(tmp_path: Path) -> None:
    # a gap only in the responder's own direction, or none at all: the unmatched answer is the peer's
    for name, steps in {"own_way": handshake() + [("lost", ("s2c", 5000)), s2c(LOG), s2c(res(2, {}))],
                        "none": handshake() + [s2c(res(2, {}))]}.items():
        codes = _codes(_live(steps + [("eof", "s2c")], tmp_path / f"{name}.jsonl"))
        assert "jsonrpc.unmatched_response" in codes and "capture.request_in_gap" not in codes, (name, codes)


def test_the_excuse_of_a_gap_is_used_up_by_the_requests_it_may_hold(tmp_path: Path) -> None:
    # a 50-byte hole in c2s holds at most 50 // 21 + 2 = 4 requests (gap_pending.MIN_REQUEST); answers long
    # after it: the first four distinct unmatched ids are excused, the rest are the server's errors again,
    # and an id already excused once is not excused twice (its request got its one answer)
    late = [s2c(res(i, {})) for i in (20, 21, 20, 22, 23, 24, 25)]
    path = tmp_path / "late.jsonl"
    recs = _live(handshake() + [("lost", ("c2s", 50)), c2s(LOG), s2c(LOG)] + late + [("eof", "s2c")], path)
    per_answer = [[f["code"] for f in r.get("findings") or ()] for r in recs
                  if r.get("type") == "message" and r.get("dir") == "s2c" and r["json"].get("id") in (20, 21, 22, 23, 24, 25)]
    want = [["capture.request_in_gap"], ["capture.request_in_gap"], ["jsonrpc.unmatched_response"], ["capture.request_in_gap"],
            ["capture.request_in_gap"], ["jsonrpc.unmatched_response"], ["jsonrpc.unmatched_response"]]
    assert per_answer == want
    codes = _codes(recs)
    for check, reuse in ((check_capture, True), (check_capture, False), (fast_check, True), (fast_check, False)):
        rep = check(str(path), reuse=reuse)       # check (its fast scan too) and check --full say the same
        assert rep.groups["jsonrpc.unmatched_response"].count == 3, (reuse, sorted(rep.groups))
        assert rep.groups["capture.request_in_gap"].count == 4
    cap = read_capture(str(path))
    assert _codes(list(reannotate(cap.header, cap.records + [cap.end], reuse=False))) == codes
    # a gap that does not say how much it lost sets no bound; a later gap lets an excused id be excused again
    recs = _live(handshake() + [("gap", "the relay was stopped")] + [s2c(res(i, {})) for i in range(30, 40)]
                 + [("lost", ("c2s", 10)), s2c(res(30, {})), ("eof", "s2c")], tmp_path / "unbounded.jsonl")
    assert "jsonrpc.unmatched_response" not in _codes(recs)
