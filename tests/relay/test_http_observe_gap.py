"""Relay facts the HTTP recorder never got (a LOST frame past the spill bound, or
batches skipped at the end) cut the exchanges they carried: the observer never
reads the bytes after the hole as if they followed the bytes before it. An SSE
stream drops the event under way and is framed again from the next event
boundary; a JSON body or a request body under way is not framed; nothing the
hole made is blamed on a peer: the gap record is the only finding."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.recorder import Recorder
from mcptap.relay.http import events as r
from mcptap.relay.http.observe import HttpObserver
from mcptap.relay.http.proxy import HttpRelay
from mcptap.transport import fact_codec as fc
from mcptap.transport.http_recorder_child import Hooks, lost, record_stream
from mcptap.transport.spill import SpillFile
from tests.sansio_tap import UP, SansIoTap, post

ROOT = Path(__file__).resolve().parents[2]
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'


def _event(i: int) -> bytes:
    return b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%d"}}\n\n' % i


EVENTS = [_event(i) for i in range(10)]
ANSWER = b'data: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n'
BODY = b"".join(EVENTS) + ANSWER


def _chunk(b: bytes) -> bytes:
    return b"%x\r\n" % len(b) + b + b"\r\n"


def _drop(t: SansIoTap, items: list[Any], exchanges: set[int] | None) -> None:
    """``items`` (a relay batch) never reach the recorder: one LOST frame says so, with
    the ends of the response bodies it held, as the relay writes it (``fc.body_tails``)."""
    c2s = sum(len(i.data) for i in items if isinstance(i, r.SendUpstream))
    s2c = sum(len(i.data) for i in items if isinstance(i, r.SendClient))
    enc = fc.encode(items)
    tails = fc.body_tails(enc[0], enc[1]) if enc is not None else {}
    lost(t.rec, fc.lost_meta(1, 999, c2s, s2c, 1, exchanges, tails), t.obs.lost)


def _codes(recs: list[dict[str, Any]]) -> set[str]:
    return {f["code"] for x in recs for f in x.get("findings", ())}


def _checked(path: Path) -> set[str]:
    """The finding codes ``check --full`` gives the capture (re-judged from its records)."""
    out = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--full", "--format", "json", str(path)],
                         capture_output=True, timeout=120, cwd=ROOT)
    return {c["code"] for c in orjson.loads(out.stdout)["captures"][0]["codes"]}


#: where the hole starts (it is 140 bytes long; events are 95 bytes): at the stream's start, mid-event,
#: at an event boundary (95, 190), one past it, ending exactly on a boundary (50), or on an event's
#: last LF (144: the bytes after the hole start with it)
@pytest.mark.parametrize("cut", [0, 30, 50, 95, 96, 144, 150, 189, 190, 191, 300, 451])
def test_an_sse_stream_cut_by_a_gap_is_framed_again_from_the_next_event(tmp_path: Path, cut: int) -> None:
    t = SansIoTap(tmp_path / "c.jsonl")
    t.client(post(b"/mcp", CALL))
    t.upstream(SSE_HEAD)
    hole = 140
    if cut:
        t.upstream(_chunk(BODY[:cut]))
    _drop(t, t.relay.upstream_data(t.cid, t.gen, _chunk(BODY[cut:cut + hole])), {1})
    t.upstream(_chunk(BODY[cut + hole:]) + b"0\r\n\r\n")
    recs = t.records()
    assert _codes(recs) <= {"capture.gap"}, _codes(recs)
    got = [x["json"] for x in recs if x["type"] == "message" and x["dir"] == "s2c"]
    # every event wholly before the hole is framed; after it, the first block is taken off (the rest of
    # the event the hole cut, or one whose start may be in the hole: mcptap cannot tell) and every
    # event from the next boundary on is framed; when the hole ends on an event boundary (its last
    # bytes a blank line: cut 50) the event right after it is framed too
    every = EVENTS + [ANSWER]
    starts = [sum(map(len, every[:i])) for i in range(11)]
    before = [i for i in range(11) if starts[i] + len(every[i]) <= cut]
    after = [i for i in range(11) if starts[i] >= cut + hole]
    want = [orjson.loads(every[i][6:]) for i in before + after]
    assert got == want
    cuts = [x for x in recs if x.get("event") == "sse" and x["sse"].get("cut") == "gap"]
    assert cuts and all(not x.get("findings") for x in cuts)
    end = next(x for x in recs if x.get("event") == "end")
    assert end["gap"] is True
    assert _checked(t.path) == {"capture.gap"}


def test_an_exchange_the_lost_batches_did_not_carry_is_not_cut(tmp_path: Path) -> None:
    t = SansIoTap(tmp_path / "c.jsonl")
    t.client(post(b"/mcp", CALL))
    t.upstream(SSE_HEAD + _chunk(BODY[:150]))
    _drop(t, [r.SendClient(7, b"x" * 40)], {99})          # another exchange's batch
    t.upstream(_chunk(BODY[150:]) + b"0\r\n\r\n")
    recs = t.records()
    assert len([x for x in recs if x["type"] == "message" and x["dir"] == "s2c"]) == 11
    assert not [x for x in recs if x.get("event") == "sse"] and "gap" not in next(x for x in recs if x.get("event") == "end")


def test_a_json_response_body_cut_by_a_gap_is_no_message_and_its_request_no_fault(tmp_path: Path) -> None:
    t = SansIoTap(tmp_path / "c.jsonl")
    t.client(post(b"/mcp", CALL))
    answer = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + b"y" * 300 + b'"}]}}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer)
    t.upstream(head + answer[:100])
    _drop(t, t.relay.upstream_data(t.cid, t.gen, answer[100:200]), {1})
    t.upstream(answer[200:])
    recs = t.records()
    assert _codes(recs) <= {"capture.gap"}
    assert not [x for x in recs if x["type"] == "message" and x["dir"] == "s2c"]
    end = next(x for x in recs if x.get("event") == "end")
    cap_end = read_capture(str(t.path)).end
    assert end["gap"] is True and cap_end["pending"] == []      # type: ignore[index]
    # its answer may be in the hole: said once, at the end (info), live and re-judged alike
    assert [f["code"] for f in cap_end["unanswered"]] == ["capture.answers_in_gap"]      # type: ignore[index]
    assert _checked(t.path) == {"capture.gap", "capture.answers_in_gap"}


def test_a_request_body_cut_by_a_gap_is_kept_but_not_judged(tmp_path: Path) -> None:
    t = SansIoTap(tmp_path / "c.jsonl")
    whole = post(b"/mcp", CALL)
    at = whole.index(b"\r\n\r\n") + 4
    t.client(whole[:at + 20])
    _drop(t, t.relay.client_data(t.cid, whole[at + 20:at + 40]), {1})
    t.client(whole[at + 40:])
    t.upstream(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    recs = t.records()
    assert _codes(recs) <= {"capture.gap"}, _codes(recs)
    assert not [x for x in recs if x["type"] == "message"]
    body = [x for x in recs if x.get("event") == "request_body"]
    assert len(body) == 1 and body[0]["gap"] is True and body[0]["body"] == CALL[:20].decode() + CALL[40:].decode()


def test_batches_skipped_at_the_end_are_gaps_with_their_bytes_each_way_and_cut_their_exchange(tmp_path: Path) -> None:
    """mcptap is ending and the recorder is behind (``HURRY``): the batches still in the spill
    file are skipped. The gap records say how many bytes they forwarded each way (counted in the
    end record, as a LOST frame's are; the skip gap used to have no direction and no bytes) and
    the exchanges they carried are cut as for a LOST frame."""
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    cid, opened = relay.client_opened()
    first = opened + relay.client_data(cid, post(b"/mcp", CALL))
    gen = next(i.gen for i in first if isinstance(i, r.OpenUpstream))
    first += relay.upstream_data(cid, gen, SSE_HEAD + _chunk(BODY[:150]))
    skipped = [relay.upstream_data(cid, gen, _chunk(BODY[150:250])), relay.upstream_data(cid, gen, _chunk(BODY[250:400]))]
    last = relay.upstream_data(cid, gen, _chunk(BODY[400:]) + b"0\r\n\r\n") + relay.shutdown()
    forwarded = {d: sum(len(i.data) for b in [first, *skipped, last] for i in b if isinstance(i, k))
                 for d, k in (("c2s", r.SendUpstream), ("s2c", r.SendClient))}
    lost_s2c = sum(len(i.data) for b in skipped for i in b if isinstance(i, r.SendClient))
    assert lost_s2c and not any(isinstance(i, r.SendUpstream) for b in skipped for i in b)

    def frame(t: int, items: list[Any]) -> list[Any]:
        enc = fc.encode(items)
        assert enc is not None
        return fc.frame(fc.BATCH, t, enc[0], enc[1])

    spill = SpillFile(None, str(tmp_path))
    places = []
    for t, b in ((20, skipped[0]), (30, skipped[1])):
        bufs = frame(t, b)
        places.append(fc.frame(fc.SPILLED, t, marshal.dumps([(spill.append_pieces(bufs), sum(map(len, bufs)))])))
    frames = [fc.frame(fc.START, 1, marshal.dumps("127.0.0.1:7000")), frame(10, first), *places, frame(40, last),
              fc.frame(fc.END, 50, marshal.dumps((0, {})))]
    fact_r, fact_w = os.pipe()
    status_r, status_w = os.pipe()
    os.write(fact_w, b"".join(bytes(b) for f in frames for b in f))
    os.close(fact_w)
    rec = Recorder(CaptureWriter.open(str(tmp_path / "c.jsonl")), "http", {"url": "sansio"}, clock=lambda: 0, started="2026-01-01T00:00:00.000000Z")
    hooks = Hooks(rec, lambda authority: HttpObserver(rec, UP, authority), lambda: None,
                  lambda code, extra: rec.close(exit_code=code, **extra))
    record_stream(fact_r, status_w, spill, hooks, hurry=[True])
    for fd in (fact_r, status_r, status_w):
        os.close(fd)
    c = read_capture(str(tmp_path / "c.jsonl"))
    gaps = [x for x in c.records if x["type"] == "gap"]
    assert [(g.get("dir"), g.get("bytes")) for g in gaps] == [("s2c", lost_s2c)], gaps
    assert "2 batch(es)" in gaps[0]["reason"] and "mcptap was ending" in gaps[0]["reason"]
    assert c.end is not None and {d: c.end[d]["bytes"] for d in ("c2s", "s2c")} == forwarded
    assert _codes(c.records) <= {"capture.gap"}, _codes(c.records)
    assert next(x for x in c.records if x.get("event") == "end")["gap"] is True
    assert _checked(tmp_path / "c.jsonl") == {"capture.gap"}


def test_an_event_too_large_to_hold_cut_by_a_gap_is_recorded_with_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event under way when the hole came was beyond what the tap holds
    (its bytes only counted): it was not recorded at all (its size and the
    server's sse.event_too_large were lost with it); now it is an sse record
    cut by the gap, with its bytes, what was not kept, and that finding."""
    from mcptap.protocol.sse import SSEParser

    monkeypatch.setattr(SSEParser.__init__, "__defaults__", (None, 4096))      # max_block: 4 KiB
    t = SansIoTap(tmp_path / "c.jsonl")
    t.client(post(b"/mcp", CALL))
    t.upstream(SSE_HEAD + _chunk(EVENTS[0]) + _chunk(b"data: " + b"x" * 10_000))
    _drop(t, t.relay.upstream_data(t.cid, t.gen, _chunk(b"x" * 500)), {1})
    t.upstream(_chunk(b"x" * 100 + b"\n\n" + EVENTS[1]) + b"0\r\n\r\n")
    recs = t.records()
    cuts = [x for x in recs if x.get("event") == "sse" and x["sse"].get("cut") == "gap"]
    first = cuts[0]
    assert first["sse"]["offset"] == len(EVENTS[0]) and first["sse"]["bytes"] == 10_006 and first["sse"]["dropped"] > 4000
    assert [f["code"] for f in first["findings"]] == ["sse.event_too_large"]
    assert all(not x.get("findings") for x in cuts[1:])
    assert [x["json"]["params"]["data"] for x in recs if x["type"] == "message" and x["dir"] == "s2c"] == ["0", "1"]
    assert _codes(recs) == {"sse.event_too_large"}


def test_the_har_of_an_exchange_cut_by_a_gap_says_so(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mcptap.cli.main import mcptap

    t = SansIoTap(tmp_path / "c.jsonl")
    t.client(post(b"/mcp", CALL))
    t.upstream(SSE_HEAD + _chunk(BODY[:150]))
    _drop(t, t.relay.upstream_data(t.cid, t.gen, _chunk(BODY[150:900])), {1})    # the answer (the last event) is in the hole
    t.upstream(_chunk(BODY[900:]) + b"0\r\n\r\n")
    t.client(post(b"/mcp", b'{"jsonrpc":"2.0","id":2,"method":"ping"}'))
    t.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n" + b'{"jsonrpc":"2.0","id":2,"result":{}}')
    t.records()
    har = tmp_path / "c.har"
    out = CliRunner().invoke(mcptap, ["export", str(t.path), "-f", "har", "-o", str(har)])
    assert out.exit_code == 0, out.output
    cut, whole = orjson.loads(har.read_bytes())["log"]["entries"]
    for where in (cut["comment"], cut["response"]["content"]["comment"]):
        assert "recording gap" in where and "incomplete" in where
    assert [f["code"] for f in cut["_mcp"]["findings"]] == ["capture.gap"]
    assert "comment" not in whole and "comment" not in whole["response"]["content"] and "findings" not in whole["_mcp"]


def test_a_hole_that_held_none_of_a_stream_at_an_event_boundary_keeps_the_next_event(tmp_path: Path) -> None:
    # a LOST frame for every open exchange (None) whose batches held no byte of this stream, cut
    # between two events: resynchronisation is certain, every event is framed; not so when the
    # relay could not say what the hole held (tails None, an older frame): the first block goes
    for tails, framed in (({}, 11), (None, 10)):
        t = SansIoTap(tmp_path / f"{tails is None}.jsonl")
        t.client(post(b"/mcp", CALL))
        t.upstream(SSE_HEAD + _chunk(BODY[:190]))
        lost(t.rec, fc.lost_meta(1, 999, 0, 40, 1, None, tails), t.obs.lost)
        t.upstream(_chunk(BODY[190:]) + b"0\r\n\r\n")
        recs = t.records()
        assert len([x for x in recs if x["type"] == "message" and x["dir"] == "s2c"]) == framed


def test_the_lost_frame_carries_where_each_lost_response_body_ended() -> None:
    items = [r.ResponseBody(1, 1, b"data: x\n\n"), r.ResponseBody(2, 1, b"y" * (fc.OOB_FROM + 5) + b"\r\n\r\n"),
             r.RequestBody(3, 1, b"zz\n\n"), r.ResponseBody(1, 1, b"\n")]
    enc = fc.encode(items)
    assert enc is not None
    tails = fc.body_tails(enc[0], enc[1])
    assert tails == {1: b"x\n\n\n", 2: b"\r\n\r\n"}            # exchange 3 lost request bytes only: no response tail
    merged = fc.add_tails(dict(tails), {1: b"ab", 4: b"\n"})
    assert merged == {1: b"\n\nab", 2: b"\r\n\r\n", 4: b"\n"}
    meta = fc.lost_meta(2, 10, 0, 5, 1, {1, 2}, merged)
    assert fc.read_lost(meta)[5] == [1, 2] and fc.read_tails(meta) == merged
    old = fc.LOST_META.pack(1, 10, 0, 5, 1) + marshal.dumps([1, 2])      # a frame without tails
    assert fc.read_lost(old)[5] == [1, 2] and fc.read_tails(old) is None


@pytest.mark.parametrize("eol", [b"\r", b"\r\n"])
def test_a_cr_ended_stream_cut_by_a_gap_on_event_boundaries_loses_only_the_hole(tmp_path: Path, eol: bytes) -> None:
    """Lines ending in CR (valid SSE): the event completed right before the hole
    is a message (it was held for the next byte and so cut by the gap), and a
    hole whose last bytes are a CR-ended blank line ends on an event boundary
    (the event right after it was taken off as cut)."""
    evs = [e.replace(b"\n", eol) for e in EVENTS]
    if eol == b"\r\n":
        evs = [e[:-1] for e in evs[:3]] + [b"\n" + e[:-1] for e in evs[3:5]] + [b"\n" + e for e in evs[5:6]] + evs[6:]
    t = SansIoTap(tmp_path / "c.jsonl")
    t.client(post(b"/mcp", CALL))
    t.upstream(SSE_HEAD + _chunk(b"".join(evs[:3])))
    _drop(t, t.relay.upstream_data(t.cid, t.gen, _chunk(b"".join(evs[3:5]))), {1})
    t.upstream(_chunk(b"".join(evs[5:])) + b"0\r\n\r\n")
    recs = t.records()
    got = [x["json"] for x in recs if x["type"] == "message" and x["dir"] == "s2c"]
    assert got == [orjson.loads(EVENTS[i][6:]) for i in (0, 1, 2, 5, 6, 7, 8, 9)]
    assert _codes(recs) <= {"capture.gap", "sse.crlf"}, _codes(recs)
