"""Replay over HTTP: an HTTP error that answers no request is reported at once
as ``error <status>`` quoting its body, whatever the body is. A JSON object that
is no JSON-RPC answer (429 ``{"error":"rate_limit_exceeded"}``, 500
``{"detail":"boom"}``, an OAuth resource server's 401 ``{"error":"invalid_token"}``,
a JSON-RPC error with id null) counted as the answer's payload: the request then
waited out the whole --timeout and was reported as "no answer". A server that
answers those errors on demand is a raw one here (the SDK servers do not); the
timeout is far beyond the hang guard, so waiting it out fails the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay.capgen import Tape
from replay.raw_http import replay_raw, response
from replay.test_plan import handshake


async def _replay(tmp_path: Path, status: int, ctype: str, body: bytes) -> Any:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.close()
    plan, result = await replay_raw(tmp_path, path, lambda _method, _body: response(status, ctype, body, "Refused"))
    init = next(s for s in plan.steps if s.method == "initialize")
    return result.live[init.index].response


@pytest.mark.parametrize(("status", "ctype", "body", "quoted"), [
    (429, "application/json", b'{"error":"rate_limit_exceeded"}', 'answer: {"error":"rate_limit_exceeded"}'),
    (500, "application/json", b'{"detail":"boom"}', 'answer: {"detail":"boom"}'),
    (401, "application/json", b'{"error":"invalid_token","error_description":"no token"}', '"invalid_token"'),
    (400, "application/json", b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad session"}}', "Bad session"),
    (404, "text/plain", b"Not Found\n", "body: Not Found"),
])
async def test_an_http_error_without_an_answer_is_reported_at_once(tmp_path: Path, status: int, ctype: str, body: bytes,
                                                                   quoted: str) -> None:
    answer = await _replay(tmp_path, status, ctype, body)
    assert answer is not None, "the request waited for an answer that never came"
    err = answer["error"]
    assert err["code"] == status and err["message"].startswith(f"HTTP {status} without a JSON-RPC "), err
    assert quoted in err["message"], err
