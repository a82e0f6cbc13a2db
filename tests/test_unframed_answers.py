"""A request whose answer the live stdio recorder stored unframed (``chunk``
records: analysis fell behind, or mcptap was told to stop and stored the rest
as it came) is not judged unanswered live: the answer may be in those bytes,
whose annotation is deferred to re-annotation (docs/capture-format.md, chunk).

On a loaded machine the tap's end (``stdio.CATCH_UP_WAIT``) stored a server's
last answer as a chunk record, and the eof record said
``lifecycle.eof_with_pending_requests`` (error) for a request that was answered,
as did the end record's ``codes``/``pending`` (seen by
tests/e2e/test_bad_server.py, which reads the recorded findings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from scripted import handshake, note, req, res

UNANSWERED = {"lifecycle.eof_with_pending_requests", "jsonrpc.unanswered_request"}


def _record(path: Path, unframed_s2c: bytes) -> None:
    """A session: tools/call id 2 framed live, then ``unframed_s2c`` stored unframed, then both eofs and exit 0."""
    ticks = iter(range(1000, 10 ** 9, 1000))
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["server"]}, clock=lambda: next(ticks),
                   started="2026-01-01T00:00:00.000000Z")
    for d, data in handshake():
        rec.stdio_bytes(Direction(d), data)
    rec.stdio_bytes(Direction.C2S, req(2, "tools/call", {"name": "echo", "arguments": {}}))
    rec.stdio_unframed(Direction.S2C, unframed_s2c)
    rec.stdio_eof(Direction.C2S)
    rec.stdio_eof(Direction.S2C)
    rec.exit(code=0)
    rec.close(exit_code=0)


def _recorded_codes(path: Path) -> set[str]:
    c = read_capture(str(path))
    codes = {f["code"] for r in c.records for f in r.get("findings", ())}
    assert c.end is not None
    return codes | set(c.end["codes"])


def _checked(path: Path) -> dict[str, Any]:
    r = CliRunner().invoke(mcptap, ["check", "--format", "json", str(path)])
    return {c["code"]: c for c in json.loads(r.stdout)["captures"][0]["codes"]}


def test_an_answer_stored_unframed_is_not_judged_missing_live(tmp_path: Path) -> None:
    cap = tmp_path / "answered.jsonl"
    _record(cap, res(2, {"content": []}))
    assert not _recorded_codes(cap) & UNANSWERED
    c = read_capture(str(cap))
    assert c.end is not None and c.end["pending"] == []
    exit_finding = [f for r in c.records if r.get("event") == "exit" for f in r["findings"]][0]
    assert (exit_finding["severity"], exit_finding["data"]["pending"]) == ("info", 0), exit_finding
    assert not set(_checked(cap)) & UNANSWERED                  # re-annotation pairs it


def test_re_annotation_still_judges_a_request_the_unframed_bytes_do_not_answer(tmp_path: Path) -> None:
    cap = tmp_path / "unanswered.jsonl"
    _record(cap, note("notifications/message", {"level": "info", "data": "x"}))
    assert not _recorded_codes(cap) & UNANSWERED                # live: the answer might have been in them
    assert _checked(cap)["lifecycle.eof_with_pending_requests"]["severity"] == "error"


def test_a_flood_stored_unframed_costs_no_walk_of_the_open_requests_per_chunk(tmp_path: Path) -> None:
    # 2,000 requests open while 2,000 chunks of their answers' direction are stored unframed: the open
    # requests are looked at a bounded number of times (at the judgements), not once per chunk
    ticks = iter(range(1000, 10 ** 9, 1000))
    rec = Recorder(CaptureWriter.open(str(tmp_path / "flood.jsonl")), "stdio", {"argv": ["server"]}, clock=lambda: next(ticks),
                   started="2026-01-01T00:00:00.000000Z")
    for d, data in handshake():
        rec.stdio_bytes(Direction(d), data)
    n = 2000
    for i in range(n):
        rec.stdio_bytes(Direction.C2S, req(10 + i, "tools/call", {"name": "echo", "arguments": {}}))
    walked = [0]
    pending = rec.annotator.pairing.pending

    def counted() -> list[Any]:
        out = pending()
        walked[0] += len(out) + 1
        return out

    rec.annotator.pairing.pending = counted  # type: ignore[method-assign]
    log = note("notifications/message", {"level": "info", "data": "x"})
    for _ in range(n):
        rec.stdio_unframed(Direction.S2C, log)
    assert walked[0] <= 4 * n, walked[0]
    # framing resumes: a request sent after that and never answered is judged live again, while
    # the ones open during the flood (their answers may be in it) are left to re-annotation
    rec.stdio_bytes(Direction.S2C, log)
    rec.stdio_bytes(Direction.C2S, req(99999, "tools/call", {"name": "late", "arguments": {}}))
    rec.stdio_eof(Direction.S2C)
    rec.close(exit_code=0)
    c = read_capture(str(tmp_path / "flood.jsonl"))
    eof = [f for r in c.records if r.get("type") == "eof" for f in r.get("findings", ())]
    assert [f["code"] for f in eof] == ["lifecycle.eof_with_pending_requests"]
    assert [p["id"] for p in eof[0]["data"]["pending"]] == [99999]
    assert walked[0] <= 10 * n, walked[0]


def test_answers_the_framing_recorder_stores_unframed_are_deferred_too(tmp_path: Path) -> None:
    # the other two ways the live recorder stores a direction unframed: the rest of a chunk once
    # analysis is behind (``behind``), and a line longer than ``long_line``; framing then resumes
    answer = res(2, {"content": [{"type": "text", "text": "x" * 300}]})
    for name in ("behind", "long_line"):
        path = tmp_path / f"{name}.jsonl"
        ticks = iter(range(1000, 10 ** 9, 1000))
        rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["server"]}, clock=ticks.__next__,
                       started="2026-01-01T00:00:00.000000Z")
        for d, data in handshake():
            rec.stdio_bytes(Direction(d), data)
        rec.stdio_bytes(Direction.C2S, req(2, "tools/call", {"name": "echo", "arguments": {}}))
        log = note("notifications/message", {"level": "info", "data": "x"})
        if name == "behind":
            rec.stdio_bytes(Direction.S2C, log + answer, behind=iter([False, True]).__next__)
        else:
            rec.long_line = 100
            rec.stdio_bytes(Direction.S2C, answer[:150])
            rec.stdio_bytes(Direction.S2C, answer[150:])
        rec.stdio_bytes(Direction.S2C, log)                 # framed again
        rec.stdio_eof(Direction.C2S)
        rec.stdio_eof(Direction.S2C)
        rec.exit(code=0)
        rec.close(exit_code=0)
        assert any(r.get("type") == "chunk" for r in read_capture(str(path)).records), name
        assert not _recorded_codes(path) & UNANSWERED, name
        assert not set(_checked(path)) & UNANSWERED, name      # re-annotation pairs it
