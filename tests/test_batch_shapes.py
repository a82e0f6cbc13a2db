"""``check`` (the recorded annotations kept, schema shape checks added:
reuse_annotations and its fast scan) and ``check --full`` (re-annotation)
give the same findings for captures with JSON-RPC batches: the shape checks
of batch members (requests, notifications, responses to plain requests and
to members of earlier batches, plain responses to batch members, a
task-augmented member) are made on both paths (mcptap/batch_shapes.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import CaptureStream
from mcptap.check import parallel
from mcptap.check.report import CaptureReport, check_capture
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.reannotate import reannotate
from scripted import c2s, handshake, j, note, record, req, res, s2c

BAD_CALL = {"content": "not a list"}          # tools/call result: content must be a list
GOOD_CALL = {"content": [{"type": "text", "text": "ok"}]}
TASK = {"ttl": 60000}


def batch(*items: bytes) -> bytes:
    return j([json.loads(x) for x in items])


KEEP = 10          # every place kept


def _codes(rep: CaptureReport) -> dict[str, Any]:
    return {c: (dict(g.by_severity), sorted((p.seq, p.line, p.message) for p in g.places)) for c, g in rep.groups.items()}


def _shape_findings(path: Path, reuse: bool) -> list[tuple[int, str]]:
    stream = CaptureStream(str(path))
    return [(r["seq"], f["message"]) for r in reannotate(stream.header, stream, shapes=True, reuse=reuse)
            for f in r.get("findings", ()) if f["code"].startswith("shape.")]


def _steps(version: str) -> list[tuple[str, Any]]:
    return handshake(version) + [
        # a batch of requests and a notification, answered by a batch (one result invalid)
        c2s(batch(req(2, "tools/call", {"name": "echo", "arguments": {}}), req(3, "tools/list"),
                  note("notifications/progress", {"progress": 1}))),          # no progressToken: invalid params
        s2c(batch(res(2, BAD_CALL), res(3, {"tools": "nope"}))),
        # a batch of requests answered by plain responses
        c2s(batch(req(4, "tools/call", {"name": "echo"}), req(5, "ping"))),
        s2c(res(5)), s2c(res(4, BAD_CALL)),
        # plain requests answered by one batch
        c2s(req(6, "tools/call", {"name": "echo"})), c2s(req(7, "tools/call", {"name": "echo"})),
        s2c(batch(res(7, GOOD_CALL), res(6, BAD_CALL))),
        # a task-augmented member request answered by a CreateTaskResult member
        c2s(batch(req(8, "tools/call", {"name": "echo", "task": TASK}))),
        s2c(batch(res(8, {"task": {"taskId": "t1", "status": "working", "createdAt": "2025-01-01T00:00:00Z", "ttl": 60000}}))),
        ("eof", "c2s"), ("exit", 0)]


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
def test_check_and_check_full_agree_on_batch_members(tmp_path: Path, version: str) -> None:
    path = record(tmp_path / "batch.jsonl", _steps(version))
    header = json.loads(path.read_text().split("\n", 1)[0])
    assert header["rules"] == rules_fingerprint()          # check reuses its annotations
    full = _shape_findings(path, reuse=False)
    # every kind of member is checked: the notification, both members answered by a batch, a plain
    # answer to a member, a member answering a plain request, a task-augmented member's CreateTaskResult
    assert [s for s, _ in full] == [4, 5, 5, 8, 11, 13]
    if version == "2025-11-25":          # tasks exist from 2025-11-25 on
        assert "tools/call (task-augmented: CreateTaskResult)" in full[-1][1]
    assert _shape_findings(path, reuse=True) == full
    want = _codes(check_capture(str(path), KEEP, reuse=False))
    assert _codes(check_capture(str(path), KEEP)) == want                     # the reference reuse path
    for workers in (1, 2):
        assert _codes(parallel.check_capture(str(path), KEEP, workers=workers)) == want       # what the CLI runs
        assert _codes(parallel.check_capture(str(path), KEEP, reuse=False, workers=workers)) == want


def test_show_sees_batch_member_shapes(tmp_path: Path) -> None:
    """show reads the same re-annotated records: the batch answer carries its members' shape findings."""
    path = record(tmp_path / "batch.jsonl", _steps("2025-03-26"))
    stream = CaptureStream(str(path))
    recs = list(reannotate(stream.header, stream, shapes=True))
    answer = next(r for r in recs if r.get("type") == "message" and r.get("kind") == "batch" and r["dir"] == "s2c")
    assert [f["code"] for f in answer["findings"]].count("shape.invalid_result") == 2


def test_a_capture_cut_short_reports_the_same_unanswered_members(tmp_path: Path) -> None:
    """No end record: member requests still open are unanswered (each with its id), and a plain
    request a batch member answered is not, on the reuse path as in re-annotation."""
    path = record(tmp_path / "cut.jsonl", handshake("2025-03-26") + [
        c2s(req(2, "ping")), s2c(batch(res(2))), c2s(batch(req(3, "ping"), req(4, "tools/list"))),
        c2s(batch(req(5, "ping"))), s2c(res(5))], end=False)
    full = check_capture(str(path), KEEP, reuse=False)
    assert [p.message.split(" has")[0] for p in full.groups["jsonrpc.unanswered_request"].places] == [
        "request #6 ping id=3", "request #6 tools/list id=4"]
    want = _codes(full)
    assert _codes(check_capture(str(path), KEEP)) == want
    assert _codes(parallel.check_capture(str(path), KEEP)) == want
