"""check (and check --full) of a big stdio capture whose bytes are mostly
``chunk`` records (stored unframed while live analysis fell behind) on two
processes (check/fullsplit.py, check/split_skip.py) gives exactly the
one-process report: lines spanning one, two and many chunk records, CR LF,
chunk and message records of a line mixed, the fork inside the handshake,
requests open across the middle (their state handed over or the half not
taken). It used to run in one process: a re-framed capture was never split.
The reference: ``report.check_capture`` (the generator pipeline), every count,
first place and line; and the CLI's bytes in every format."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fullsplit_helpers import same, split_fixture
from mcptap.capture.reader import CaptureStream
from mcptap.check import fullsplit, parallel, split_warm
from mcptap.check.fullscan import FullScan
from mcptap.check.split_skip import skip
from mcptap.cli.main import mcptap
from mcptap.reannotate import Reannotator, reannotate
from scripted import handshake, note, record, req, res

__all__ = ["split_fixture"]        # the fixture `split` (fullsplit_helpers)



def flood(n: int, piece: int = 500, every: int = 3, crlf: int = 0, calls: int = 0) -> list[tuple[str, Any]]:
    """A handshake, then ``n`` server notifications (every ``crlf``-th ending in CR LF;
    every ``calls``-th round a tools/call answered some lines later) cut into
    ``piece``-byte reads, one in ``every`` framed live, the others stored as chunk records."""
    steps: list[tuple[str, Any]] = list(handshake("2025-06-18", server_caps={"tools": {}, "logging": {}}))
    stream = bytearray()
    reads = 0

    def cut(last: bool = False) -> None:
        nonlocal stream, reads
        while len(stream) >= piece or (last and stream):
            steps.append(("s2c", bytes(stream[:piece])) if reads % every == 0 else ("chunk", ("s2c", bytes(stream[:piece]))))
            del stream[:piece]
            reads += 1

    for i in range(n):
        line = note("notifications/message", {"level": "info", "logger": "flood", "data": f"line {i}" + "x" * (i % 37)})
        stream += line[:-1] + b"\r\n" if crlf and i % crlf == 0 else line
        if calls and i % calls == 0:
            cut(last=True)
            steps.append(("chunk", ("c2s", req(1000 + i, "tools/call", {"name": "echo", "arguments": {"i": i}}))))
        if calls and i % calls == 3:
            stream += res(1000 + i - 3, {"content": []})
        cut()
    cut(last=True)
    return steps + [("eof", "c2s"), ("eof", "s2c"), ("exit", 0)]


def test_a_chunk_flood_is_split_and_gives_the_same_report(tmp_path: Path, split: list[int]) -> None:
    path = record(tmp_path / "flood.jsonl", flood(600))
    same(path, reused=True)
    assert len(split) == 4 and all(at > 0 for at in split)       # (keep 1 and 3, reused or not: taken each time)


@pytest.fixture
def warm_ups(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Warm-ups sized by what the lines name (check/split_warm.py) at this test's
    scale: blocks of 256 bytes, 600 at least, 16 names of a kind; the list of
    each second process's (warm-up start, middle)."""
    monkeypatch.setattr(split_warm, "BLOCK", 256)
    monkeypatch.setattr(split_warm, "WARM_MIN", 600)
    monkeypatch.setattr(split_warm, "EVENTS", 16)
    seen: list[tuple[int, int]] = []
    orig = fullsplit._Split.__init__

    def spy(self: Any, scan: Any, path: str, at: int, w0: int, mid: int, *rest: Any) -> None:
        seen.append((w0, mid))
        orig(self, scan, path, at, w0, mid, *rest)

    monkeypatch.setattr(fullsplit._Split, "__init__", spy)
    return seen


def mid_w0_short(w0_mid: tuple[int, int]) -> bool:
    return w0_mid[1] - w0_mid[0] < 1000


def test_a_flood_is_warmed_up_by_what_it_names(tmp_path: Path, split: list[int], warm_ups: list[tuple[int, int]]) -> None:
    """A notification flood names no id or token: the warm-up is the least
    (it was all of WARM_BYTES, ~20% of a real flood's second half), the half taken."""
    path = record(tmp_path / "flood.jsonl", flood(600))
    same(path, reused=True, keeps=(3,))
    assert split and warm_ups
    assert mid_w0_short(warm_ups[-1]), warm_ups         # (the one taken: a first forked inside the handshake names its ids)


def test_a_short_warm_up_that_misses_a_request_is_not_taken(tmp_path: Path, split: list[int], warm_ups: list[tuple[int, int]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests answered across the middle: the warm-up sized by the names;
    too few taken for enough (EVENTS 1): the second process finds names in what
    it skips and warms up on all of WARM_BYTES; that not looked at either, the
    short warm-up's state is found different at the middle and another process
    forked with all of it. The report is the one process's each time."""
    path = record(tmp_path / "calls.jsonl", flood(600, 300, 3, 0, calls=5))
    same(path, reused=True, keeps=(3,))
    assert split
    monkeypatch.setattr(split_warm, "EVENTS", 1)
    split.clear()
    same(path, reused=True, keeps=(3,))
    assert split
    monkeypatch.setattr(split_warm, "named", lambda fp, at, end: False)
    warm_ups.clear()
    same(path, reused=True, keeps=(3,))
    assert mid_w0_short(warm_ups[0]) and any(mid - w0 > 19000 for w0, mid in warm_ups[1:]), warm_ups


@pytest.mark.parametrize(("piece", "every", "crlf"), [(40, 3, 0), (90, 2, 5), (3000, 3, 2), (64, 4, 7)])
def test_lines_across_chunk_records_and_crlf(tmp_path: Path, split: list[int], piece: int, every: int, crlf: int) -> None:
    """Lines in one record, across two, across many (40-byte reads); CR LF line ends."""
    path = record(tmp_path / "flood.jsonl", flood(500, piece, every, crlf))
    same(path, reused=True, keeps=(3,))
    assert split


def test_requests_answered_across_the_middle(tmp_path: Path, split: list[int]) -> None:
    path = record(tmp_path / "calls.jsonl", flood(600, 300, 3, 0, calls=5))
    same(path, reused=True, keeps=(3,))
    assert split


def test_the_first_fork_before_the_first_chunk_record(tmp_path: Path, split: list[int]) -> None:
    """Forked while the streams were not yet re-framed, the second process stops
    at the first chunk record (it cannot frame from there): another is forked
    from where this process is then, re-framing, and its half taken."""
    steps = flood(600)
    head = steps[:3]
    body = [("s2c", note("notifications/message", {"level": "info", "data": f"framed {i}"})) for i in range(60)]
    path = record(tmp_path / "late.jsonl", head + body + steps[3:])
    same(path, reused=True, keeps=(3,))
    assert len(split) == 2      # (reused or not: the second try taken each time)


def _formats(path: Path, args: list[str]) -> list[bytes]:
    out = []
    for fmt in ("text", "json", "sarif", "junit"):
        r = CliRunner().invoke(mcptap, ["check", *args, "--format", fmt, "--fail-on", "info", str(path)], catch_exceptions=False)
        out.append(r.stdout_bytes + str(r.exit_code).encode())
    return out


@pytest.mark.parametrize("full", [False, True])
def test_the_cli_output_is_the_same_in_every_format(tmp_path: Path, split: list[int], monkeypatch: pytest.MonkeyPatch, full: bool) -> None:
    path = record(tmp_path / "calls.jsonl", flood(600, 300, 3, 4, calls=7))
    args = ["--full"] if full else []
    monkeypatch.setattr(parallel, "_cores", lambda: 1)
    one = _formats(path, args)
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    assert _formats(path, args) == one
    assert split


#: (a garbage line stays in the annotator's state for good: before the warm-up, no split is taken)
MESSAGE = st.sampled_from(["note", "note", "long", "round", "round", "round", "progress", "crlf"] * 8 + ["call", "answer", "garbage"])


def chunked(msgs: list[tuple[str, str]], cuts: list[tuple[int, bool, int]], chunked_hello: bool) -> list[tuple[str, Any]]:
    """The steps of test_random_chunk_captures' capture (its doc)."""
    hello = list(handshake("2025-06-18", server_caps={"tools": {}, "logging": {}}))
    steps: list[tuple[str, Any]] = [("chunk", s) if chunked_hello else s for s in hello]
    pending = {"c2s": bytearray(), "s2c": bytearray()}
    turn = [0]

    def read(d: str, all_of_it: bool = False) -> None:
        buf = pending[d]
        while buf:
            n, framed, _ = cuts[turn[0] % len(cuts)]
            if n > len(buf) and not all_of_it:
                return
            turn[0] += 1
            steps.append((d, bytes(buf[:n])) if framed else ("chunk", (d, bytes(buf[:n]))))
            del buf[:n]

    open_ids: list[int] = []
    for i, (kind, d) in enumerate(msgs):
        if kind == "round":         # a call answered at once
            pending["c2s"] += req(i, "tools/call", {"name": "echo", "arguments": {"i": i}})
            read("c2s", True)
            d, data = "s2c", res(i, {"content": []})
        elif kind == "call":
            d = "c2s"
            open_ids.append(i)
            data = req(i, "tools/call", {"name": "echo", "arguments": {"i": i}})
        elif kind == "answer" and open_ids:
            d = "s2c"
            data = res(open_ids.pop(0), {"content": [{"type": "text", "text": "ok"}]})
        elif kind == "progress":
            data = note("notifications/progress", {"progressToken": i, "progress": 1})
        elif kind == "garbage":
            data = b"not json at all\n"
        else:
            data = note("notifications/message", {"level": "info", "data": ("y" * 2500 if kind == "long" else f"m{i}")})
            if kind == "crlf":
                data = data[:-1] + b"\r\n"
        pending[d] += data
        read(d)
        other = "s2c" if d == "c2s" else "c2s"
        if cuts[turn[0] % len(cuts)][2] == 0:
            read(other)
    read("c2s", True)
    read("s2c", True)
    return steps + [("eof", "c2s"), ("eof", "s2c"), ("exit", 0)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(msgs=st.lists(st.tuples(MESSAGE, st.sampled_from(["s2c", "c2s"])), min_size=40, max_size=120),
       cuts=st.lists(st.tuples(st.integers(1, 900), st.booleans(), st.integers(0, 3)), min_size=1, max_size=50),
       warm=st.integers(1500, 8000), head=st.integers(50, 2000), chunked_hello=st.booleans(),
       sized=st.tuples(st.integers(50, 3000), st.integers(50, 3000), st.integers(0, 30)))
def test_random_chunk_captures(tmp_path_factory: pytest.TempPathFactory, split: list[int], monkeypatch: pytest.MonkeyPatch,
                               msgs: list[tuple[str, str]], cuts: list[tuple[int, bool, int]], warm: int, head: int,
                               chunked_hello: bool, sized: tuple[int, int, int]) -> None:
    """Messages of each direction cut into reads at arbitrary points (``cuts``,
    used in turn: bytes read, framed live or stored as a chunk, reads of the
    other direction in between), so a line spans 1, 2 or many records; the
    handshake stored as chunks too (the fork then inside it, ``head`` small)."""
    monkeypatch.setattr(fullsplit, "HEAD_BYTES", head)
    monkeypatch.setattr(fullsplit, "WARM_BYTES", warm)
    # warm-ups sized by the names counted (check/split_warm.py), short or too short
    monkeypatch.setattr(split_warm, "BLOCK", sized[0])
    monkeypatch.setattr(split_warm, "WARM_MIN", sized[1])
    monkeypatch.setattr(split_warm, "EVENTS", sized[2])
    steps = chunked(msgs, cuts, chunked_hello)
    path = record(tmp_path_factory.mktemp("r") / "r.jsonl", steps)
    same(path, reused=True, keeps=(2,))


def _framing_state(scan: FullScan) -> Any:
    rec = scan.rec
    return (rec.seq, rec.chunks, rec.chunk_bytes, sorted(rec._resync), rec._seg, scan.last_seq,
            scan.t_floor, rec.t_us, scan.n, scan.cut, scan.counts, scan.bufs, scan.pending, scan.gap_since_last,
            [(d, s.bytes, s.messages) for d, s in rec.streams.items()],
            [(d, pickle.dumps(f)) for d, f in rec._framers.items()])


@settings(max_examples=40, deadline=None)
@given(msgs=st.lists(st.tuples(MESSAGE, st.sampled_from(["s2c", "c2s"])), min_size=5, max_size=60),
       cuts=st.lists(st.tuples(st.integers(1, 900), st.booleans(), st.integers(0, 3)), min_size=1, max_size=30),
       chunked_hello=st.booleans(), a=st.floats(0, 1), b=st.floats(0, 1))
def test_skipped_lines_leave_the_framing_state_exact(tmp_path_factory: pytest.TempPathFactory, msgs: list[tuple[str, str]],
                                                     cuts: list[tuple[int, bool, int]], chunked_hello: bool, a: float, b: float) -> None:
    """split_skip.skip of any run of lines after re-framing began leaves the
    sequence, chunk counts, stream bytes and messages, and the framers (held
    bytes, offsets) as re-annotating those lines does."""
    path = record(tmp_path_factory.mktemp("s") / "s.jsonl", chunked(msgs, cuts, chunked_hello))
    data = path.read_bytes().splitlines(keepends=True)
    header, lines = orjson.loads(data[0]), data[1:]
    first = next((i for i, line in enumerate(lines) if b'"type":"chunk"' in line), None)
    if first is None:
        return
    i = first + 1 + int(a * (len(lines) - first - 1))
    j = i + int(b * (len(lines) - i))
    whole, skipped = FullScan(header, 3, True, lambda n, d: None), FullScan(header, 3, True, lambda n, d: None)
    whole.run(lines[:j])
    skipped.run(lines[:i])
    assert skipped.rec.reframing
    skip(skipped, [lines[i:j]])
    assert _framing_state(skipped) == _framing_state(whole)


@settings(max_examples=30, deadline=None)
@given(msgs=st.lists(st.tuples(MESSAGE, st.sampled_from(["s2c", "c2s"])), min_size=5, max_size=60),
       cuts=st.lists(st.tuples(st.integers(1, 900), st.booleans(), st.integers(0, 3)), min_size=1, max_size=30),
       chunked_hello=st.booleans())
def test_re_framed_lines_annotated_by_feed_line_as_by_feed(tmp_path_factory: pytest.TempPathFactory, msgs: list[tuple[str, str]],
                                                            cuts: list[tuple[int, bool, int]], chunked_hello: bool) -> None:
    """The re-annotator's re-framed lines of default facts go through
    ``Annotator.feed_line`` (``RecordingState.LINES``): every record, finding
    and the end record as through ``feed``, light or not."""
    path = record(tmp_path_factory.mktemp("l") / "l.jsonl", chunked(msgs, cuts, chunked_hello))
    for light in (False, True):
        got = []
        for lines in (True, False):
            stream = CaptureStream(str(path))
            try:
                with pytest.MonkeyPatch.context() as mp:
                    mp.setattr(Reannotator, "LINES", lines)
                    got.append(list(reannotate(stream.header, stream, light=light, reuse=False)))
            finally:
                stream.close()
        assert got[0] == got[1]


@pytest.mark.parametrize(("piece", "every", "crlf", "calls"), [(300, 3, 0, 0), (97, 2, 0, 7), (500, 3, 5, 4), (64, 4, 3, 0)])
def test_skipped_message_records_counted_as_re_annotation_frames_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     piece: int, every: int, crlf: int, calls: int) -> None:
    """split_skip counts most message records framed live itself (no ``FullScan.run``):
    from any line on, the state it leaves is re-annotation's (held bytes between
    records, CR LF lines, requests in chunk records of the other direction)."""
    path = record(tmp_path / "f.jsonl", flood(300, piece, every, crlf, calls))
    data = path.read_bytes().splitlines(keepends=True)
    header, lines = orjson.loads(data[0]), data[1:]
    first = next(i for i, line in enumerate(lines) if b'"type":"chunk"' in line)
    run = FullScan.run
    ran = [0]

    def counted(self: FullScan, batch: list[bytes]) -> None:
        ran[0] += len(batch)
        run(self, batch)

    for i in range(first + 1, len(lines), 7):
        whole, skipped = FullScan(header, 3, True, lambda n, d: None), FullScan(header, 3, True, lambda n, d: None)
        whole.run(lines)
        skipped.run(lines[:i])
        ran[0] = 0
        with monkeypatch.context() as mp:
            mp.setattr(FullScan, "run", counted)
            skip(skipped, [lines[i:]])
        assert _framing_state(skipped) == _framing_state(whole)
    assert ran[0] < len(lines) - i or len(lines) - i < 10       # (the message records went the fast way)
