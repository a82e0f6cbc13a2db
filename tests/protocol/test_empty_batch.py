"""An empty JSON array is no batch (JSON-RPC 2.0 §6): from the client it is an
invalid request, which the server answers with one -32600 error with id null;
a server MUST NOT return an empty array. Both were reported as info "JSON-RPC
batch of 0 (legal in 2025-03-26)" and `check` passed. Through `check`'s path
(record, re-annotate from the raw bytes), in every revision."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from mcptap.check.report import check_capture
from mcptap.reannotate import reannotate
from scripted import c2s, err, handshake, record, req, res, s2c

REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def _messages(path: Path) -> list[dict]:
    cap = read_capture(str(path))
    return [r for r in reannotate(cap.header, cap.records) if r.get("type") == "message"]


def _codes(rec: dict) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in rec.get("findings", [])}


@pytest.mark.parametrize("rev", REVISIONS)
def test_an_empty_array_either_way_is_an_error(tmp_path: Path, rev: str) -> None:
    path = record(tmp_path / "c.jsonl", handshake(rev) + [c2s(b"[]\n"), s2c(b"[]\n"), c2s(b" [ ]\n")])
    client, server, spaced = _messages(path)[3:]
    for rec in (client, server, spaced):
        assert _codes(rec).get("jsonrpc.empty_batch") == "error", rec
        assert "framing.batch" not in _codes(rec), rec
    assert "-32600" in next(f["message"] for f in client["findings"] if f["code"] == "jsonrpc.empty_batch")
    assert "MUST NOT" in next(f["message"] for f in server["findings"] if f["code"] == "jsonrpc.empty_batch")
    report = check_capture(str(path))
    assert report.groups["jsonrpc.empty_batch"].count == 3 and report.worst() == "error"


def test_the_correct_rejection_pairs_with_the_empty_array(tmp_path: Path) -> None:
    path = record(tmp_path / "c.jsonl", handshake("2025-03-26") + [c2s(b"[]\n"), s2c(err(None, -32600, "Invalid Request")),
                                                                  c2s(b"[" + req(2, "ping")[:-1] + b"]\n"), s2c(b"[" + res(2)[:-1] + b"]\n")])
    empty, rejection, batch, answer = _messages(path)[3:]
    assert rejection["pair"] == empty["seq"] and rejection["latency_us"] == rejection["t_us"] - empty["t_us"]
    assert _codes(rejection) == {"jsonrpc.error_id_null": "info"}
    assert _codes(batch) == {"framing.batch": "info"} == _codes(answer)      # a batch of one stays legal in 2025-03-26


def test_an_id_null_rejection_inside_a_batch_answer_is_judged_as_an_error(tmp_path: Path) -> None:
    # the batch's own Message is neither an error nor id-less: the member's kind decides. The
    # correct -32600 for the invalid member 5 was judged error result_id_null ("a result carries
    # the id…") while the same error on a line of its own was info
    rejection = err(None, -32600, "Invalid Request")[:-1]
    path = record(tmp_path / "c.jsonl", handshake("2025-03-26") + [
        c2s(b"[" + req(2, "ping")[:-1] + b",5]\n"), s2c(b"[" + res(2)[:-1] + b"," + rejection + b"]\n"),
        c2s(b"[" + req(3, "ping")[:-1] + b"]\n"), s2c(b"[" + res(None)[:-1] + b"]\n")])
    batch, answer, batch2, answer2 = _messages(path)[3:]
    assert "jsonrpc.result_id_null" not in _codes(answer), answer
    assert _codes(answer).get("jsonrpc.error_id_null") == "info", answer
    assert _codes(answer2).get("jsonrpc.result_id_null") == "error", answer2    # a result with id null still is one
    assert "jsonrpc.error_id_null" not in _codes(answer2), answer2
