"""A request whose id no answer can carry (null, true, an object, an array) is answered, as
JSON-RPC 2.0 §5 asks, by a -32600 error with id null: that error answers it. It stayed pending,
so the server that answered correctly was blamed (``lifecycle.eof_with_pending_requests``,
error) — as `check` blamed ``mcptap serve``'s own capture after it rejected such requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcptap.check.report import check_capture
from scripted import c2s, err, handshake, record, req, res, s2c


@pytest.mark.parametrize("bad", [b"null", b"true", b'{"x":1}', b"[1]"])
def test_the_minus_32600_with_id_null_answers_the_request_with_an_unusable_id(tmp_path: Path, bad: bytes) -> None:
    path = record(tmp_path / "c.jsonl", [*handshake(),
                                         c2s(b'{"jsonrpc":"2.0","id":' + bad + b',"method":"ping"}\n'), s2c(err(None, -32600, "Invalid Request")),
                                         c2s(req(2, "ping")), s2c(res(2)), ("eof", "c2s"), ("eof", "s2c")])
    report = check_capture(str(path))
    assert "lifecycle.eof_with_pending_requests" not in report.groups and "jsonrpc.unanswered_request" not in report.groups
    assert report.groups["jsonrpc.error_id_null"].count == 1 and report.groups["jsonrpc.invalid_id"].count == 1


def test_an_error_with_id_null_still_answers_no_valid_request(tmp_path: Path) -> None:
    path = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(err(None, -32600, "Invalid Request")),
                                         ("eof", "c2s"), ("eof", "s2c")])
    assert "lifecycle.eof_with_pending_requests" in check_capture(str(path)).groups
