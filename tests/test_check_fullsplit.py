"""check --full of a big stdio capture on two processes (check/fullsplit.py)
gives exactly the one-process report: when the second process's half is
taken (its state at the middle equal to this process's), when it is not (a
request open across the warm-up, an id answered longer ago than the warm-up
holds), when the second process fails, for the handed fault cases, and for
random traffic (hypothesis). The reference: ``report.check_capture`` (the
generator pipeline), every count, first place and line."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fullsplit_helpers import same, split_fixture
from mcptap.capture.source import bytes_read
from mcptap.check import fullsplit, parallel, split_adopt
from mcptap.check.fullscan import FullScan
from mcptap.check.report import check_capture
from mcptap.check.shape_oracle import Batch, ShapeOracle
from scripted import c2s, err, handshake, note, record, req, res, s2c
from test_cases_stdio import record_wire
from test_check_scan import STDIO, _shape

_READY = fullsplit._Split.ready       # (the split fixture makes this process wait for the second one: these tests do not)

__all__ = ["split_fixture"]        # the fixture `split` (fullsplit_helpers)



def traffic(n: int, odd: int = 7, open_early: bool = False) -> list[tuple[str, Any]]:
    """``n`` tools/call rounds after a handshake (progress, stderr, and every
    ``odd``-th round something findings are made of: an unknown tool result
    shape, an id used twice, an answer to nothing, progress of no request, a
    ping, a cancel, stderr lines); ``open_early``: a request never answered, sent first."""
    steps = list(handshake("2025-06-18", server_caps={"tools": {}}))
    if open_early:
        steps.append(c2s(req("forever", "tools/call", {"name": "wait", "arguments": {}})))
    for i in range(10, 10 + n):
        params: dict[str, Any] = {"name": "echo", "arguments": {"text": f"m{i}", "n": i}}
        if i % 4 == 0:
            params["_meta"] = {"progressToken": i}
        steps.append(c2s(req(i, "tools/call", params)))
        if i % 4 == 0:
            steps.append(s2c(note("notifications/progress", {"progressToken": i, "progress": 1})))
        k = i % odd
        if k == 1:
            steps.append(s2c(res(i, {"content": "not a list"})))
        elif k == 2:
            steps += [c2s(req(i, "ping")), s2c(res(i, {})), s2c(res(i, {"content": []}))]
        elif k == 3:
            steps += [s2c(res(i + 100000, {})), s2c(res(i, {"content": []}))]
        elif k == 4:
            steps += [s2c(note("notifications/progress", {"progressToken": "nobody", "progress": 2})), s2c(err(i))]
        elif k == 5:
            steps += [c2s(note("notifications/cancelled", {"requestId": i})), s2c(res(i, {"content": []}))]
        elif k == 6:
            steps += [("err", f"working on {i}\n".encode()), ("err", b"half a line"), s2c(res(i, {"content": []}))]
        else:
            steps.append(s2c(res(i, {"content": [{"type": "text", "text": f"m{i}"}]})))
    return steps + [("eof", "c2s"), ("eof", "s2c"), ("exit", 0)]


def test_the_second_half_is_taken_and_gives_the_same_report(tmp_path: Path, split: list[int]) -> None:
    path = record(tmp_path / "calls.jsonl", traffic(300))
    same(path)
    assert len(split) == 2 and all(at > 0 for at in split)
    before = bytes_read()
    parallel.check_capture(str(path), 3, reuse=False, workers=2)
    assert bytes_read() - before == path.stat().st_size - len(path.read_bytes().split(b"\n", 1)[0]) - 1   # the progress line's count


@pytest.mark.parametrize("late", [1, 3, 10**9])
def test_this_process_goes_on_past_the_middle_meanwhile(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch, late: int) -> None:
    """The second process's half arrives after this process re-annotated
    ``late`` lists of lines past the middle (10**9: never, it was all done
    here first): that work is dropped for the half (counters, groups and
    digests put back to the middle's), or the half for it; the same report,
    and the progress line counts each byte once."""
    looks = [0]

    def ready(self: Any) -> bool:
        looks[0] += 1
        return looks[0] > late and self.child.ready(wait=True)

    monkeypatch.setattr(fullsplit._Split, "ready", ready)
    path = record(tmp_path / "calls.jsonl", traffic(300))
    for keep in (1, 3):
        looks[0] = 0
        want = _shape(check_capture(str(path), keep, reuse=False))
        before = bytes_read()
        assert _shape(parallel.check_capture(str(path), keep, reuse=False, workers=2)) == want
        assert bytes_read() - before == path.stat().st_size - len(path.read_bytes().split(b"\n", 1)[0]) - 1
    assert len(split) == (0 if late > 100 else 2)


def test_the_second_process_is_not_held_up_by_this_one(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Its state at the middle (here bigger than a pipe holds, as a real one
    is) goes through a file: it re-annotates its whole half before this process
    looks at anything it sent (it used to wait on the pipe until then)."""
    orig = fullsplit.snapshot
    for mod in (fullsplit, split_adopt):             # (the second process's, and this one's at the middle)
        monkeypatch.setattr(mod, "snapshot", lambda scan: orig(scan) + b"-" * (1 << 20))

    def ready(self: Any) -> bool:
        if not self.child.eof:
            spilled = self.spill.files["s2c"]
            deadline = time.monotonic() + 120        # (a hang guard, not a timing assertion)
            while os.fstat(spilled.fileno()).st_size == 0:
                assert time.monotonic() < deadline, "the second process did not re-annotate its half"
                time.sleep(0.01)
        return bool(self.child.ready(wait=True))

    monkeypatch.setattr(fullsplit._Split, "ready", ready)
    path = record(tmp_path / "calls.jsonl", traffic(300))
    same(path, keeps=(3,))
    assert len(split) == 1


def test_an_id_reused_across_the_middle(tmp_path: Path, split: list[int]) -> None:
    steps = traffic(150)[:-3]
    steps += [c2s(req(10, "tools/call", {"name": "echo", "arguments": {}})), s2c(res(10, {"content": []}))]
    path = record(tmp_path / "reuse.jsonl", steps + traffic(150)[3:])
    same(path)


@pytest.mark.parametrize("tries", [1, 3])
def test_a_request_open_across_the_warm_up(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch, tries: int) -> None:
    """A request never answered, sent after the first second process was
    forked: that one's state differs at the middle (it never saw it), so this
    process forks another from where it is (the request open there, old), whose
    half is taken; with one try, this process goes on alone, the shape checks'
    process (check/shape_child.py) started there. The same report either way."""
    monkeypatch.setattr(fullsplit, "TRIES", tries)
    made: list[ShapeOracle] = []
    orig = FullScan.speculated

    def spy(self: FullScan, batches: Callable[[], Batch | None], stop: Callable[[], None] = lambda: None) -> ShapeOracle:
        made.append(orig(self, batches, stop))
        return made[-1]

    monkeypatch.setattr(FullScan, "speculated", spy)
    path = record(tmp_path / "open.jsonl", traffic(300, open_early=True))
    same(path)
    assert len(split) == (0 if tries == 1 else 2)
    assert len(made) == (2 if tries == 1 else 0)


@pytest.mark.parametrize("early", ["garbage", "gap"])
def test_a_lasting_line_before_the_warm_up(tmp_path: Path, split: list[int], early: str) -> None:
    """A garbage line or a recording gap early on stays in the annotator's
    state for good: the first second process, forked before it, cannot have it;
    the next one, forked from where this process is, does, and its half is taken.
    (No answers to nothing here: after a gap, each is excused, and remembered, for good.)"""
    steps = traffic(400, odd=3)
    steps.insert(20, s2c(b"not json\n") if early == "garbage" else ("gap", "test"))
    path = record(tmp_path / "early.jsonl", steps)
    same(path)
    assert len(split) == 2


def test_a_failing_second_process(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any) -> None:
        raise RuntimeError("the second process fails")

    monkeypatch.setattr(fullsplit._Split, "_run", fail)
    path = record(tmp_path / "calls.jsonl", traffic(300))
    same(path, keeps=(3,))
    assert split == []


def test_a_state_that_differs_at_the_middle_is_not_taken(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The second process's state edited before its snapshot (a field the
    first half's lines set, as a request open since before the warm-up would):
    its half is not taken, the report is still exact."""
    path = record(tmp_path / "calls.jsonl", traffic(300))
    orig, parent = fullsplit.snapshot, os.getpid()

    def edited(scan: Any) -> bytes | None:
        if os.getpid() != parent:
            scan.rec.annotator.pairing.last_seq += 1
        return orig(scan)

    monkeypatch.setattr(fullsplit, "snapshot", edited)
    same(path, keeps=(3,))
    assert split == []


@pytest.mark.skipif(not STDIO, reason="handed cases not found")
def test_fault_cases(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fullsplit, "HEAD_BYTES", 200)
    monkeypatch.setattr(fullsplit, "WARM_BYTES", 300)
    for i, w in enumerate(STDIO):
        path = tmp_path / f"{i}-{w.case}.jsonl"
        record_wire(w, path)
        same(path, keeps=(3,))


#: (a garbage line or a gap stays in the annotator's state for good: before the warm-up, no split is taken)
EXTRA = st.sampled_from(["progress", "stray", "cancel", "stderr", "notify", "ping", "unknown_token"] * 4 + ["garbage", "gap"])
ANSWER = st.sampled_from(["ok", "ok", "ok", "twice", "bad", "error"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=st.lists(st.tuples(st.lists(EXTRA, max_size=1), ANSWER, st.booleans()), min_size=60, max_size=150),
       warm=st.integers(6000, 12000), head=st.integers(50, 2000))
def test_random_traffic(tmp_path_factory: pytest.TempPathFactory, split: list[int], monkeypatch: pytest.MonkeyPatch,
                        rounds: list[tuple[list[str], str, bool]], warm: int, head: int) -> None:
    """Rounds of a call, things between (findings of their own), its answer."""
    monkeypatch.setattr(fullsplit, "HEAD_BYTES", head)
    monkeypatch.setattr(fullsplit, "WARM_BYTES", warm)
    out = list(handshake("2025-06-18", server_caps={"tools": {}}))
    for n, (extras, answer, token) in enumerate(rounds, 100):
        params: dict[str, Any] = {"name": "echo", "arguments": {"n": n}} | ({"_meta": {"progressToken": n}} if token else {})
        out.append(c2s(req(n, "tools/call", params)))
        for e in extras:
            out += {"progress": [s2c(note("notifications/progress", {"progressToken": n, "progress": 1}))],
                    "unknown_token": [s2c(note("notifications/progress", {"progressToken": "x", "progress": 1}))],
                    "stray": [s2c(res(n + 1000, {}))], "cancel": [c2s(note("notifications/cancelled", {"requestId": n}))],
                    "stderr": [("err", b"log\n")], "garbage": [s2c(b"not json\n")], "gap": [("gap", "test")],
                    "notify": [s2c(note("notifications/tools/list_changed"))], "ping": [c2s(req(n, "ping")), s2c(res(n, {}))]}[e]
        out += {"ok": [s2c(res(n, {"content": []}))], "twice": [s2c(res(n, {"content": []}))] * 2, "bad": [s2c(res(n, {"content": 3}))],
                "error": [s2c(err(n))]}[answer]
    path = record(tmp_path_factory.mktemp("r") / "r.jsonl", out + [("eof", "c2s"), ("eof", "s2c"), ("exit", 0)])
    same(path, keeps=(2,))


def test_this_process_waits_past_the_middle_while_the_half_progresses(tmp_path: Path, split: list[int],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the second process's state at the middle is this one's, this process
    re-annotates nothing past the middle while the half progresses (its core is the
    half's: on a busy machine that work took CPU from the half waited for)."""
    monkeypatch.setattr(fullsplit._Split, "ready", _READY)
    monkeypatch.setattr(fullsplit, "STALL", 60.0)       # (a moving half is waited for, however slow the machine)
    compared, past, looked = [False], [0], [0]
    snap, run, merge = fullsplit._Split.snapshot, FullScan.run, fullsplit._Split.merge_into

    def compare(self: Any, n: int) -> bytes:
        compared[0] = True
        looked[0] += 1
        return snap(self, n)

    def merged(self: Any, *args: Any) -> Any:
        compared[0] = False             # (the lines after its half's stop, the end record: this process's)
        return merge(self, *args)

    def counted(self: FullScan, lines: list[bytes]) -> None:
        past[0] += compared[0]
        run(self, lines)

    monkeypatch.setattr(fullsplit._Split, "snapshot", compare)
    monkeypatch.setattr(fullsplit._Split, "merge_into", merged)
    monkeypatch.setattr(FullScan, "run", counted)
    path = record(tmp_path / "calls.jsonl", traffic(300))
    same(path, keeps=(3,))
    assert len(split) == 1 and looked[0] == 1 and past[0] == 0


def test_a_stalled_half_is_not_waited_for(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The second process stopped (SIGSTOP) once its state at the middle is
    sent: after ``STALL`` without progress, this process goes on alone, to the
    end; the same report (the stopped process is ended with the check)."""
    monkeypatch.setattr(fullsplit._Split, "ready", _READY)
    monkeypatch.setattr(fullsplit, "STALL", 0.05)
    sent = fullsplit.send_frame

    def stop(fd: int, obj: Any) -> None:          # (in the second process: stopped once its state at the middle is sent)
        sent(fd, obj)
        if isinstance(obj, int):
            os.kill(os.getpid(), signal.SIGSTOP)

    monkeypatch.setattr(fullsplit, "send_frame", stop)
    path = record(tmp_path / "calls.jsonl", traffic(300))
    same(path, keeps=(3,))
    assert split == []
