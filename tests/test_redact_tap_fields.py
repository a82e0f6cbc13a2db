"""Secrets in the HTTP tap's own fields (request targets, URLs, session keys) never reach a
capture in clear: token shapes written plainly in a path, not only in a query string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcptap.redact import placeholder, scrub_url
from mcptap.relay.http.credentials import record_target, scrub_location
from sansio_tap import SansIoTap, post, response

SK = "sk-live-" + "A1b2C3d4E5f6G7h8I9j0K1"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(("url", "secret"), [
    (f"http://h/mcp/{SK}", SK), (f"/u/{GHP}/mcp", GHP), (f"/mcp/{SK}?x=1", SK), (f"/mcp#{GHP}", GHP),
    (f"https://h:8443/a/{GHP}/b?state=ok", GHP),
])
def test_a_token_written_in_a_path_is_redacted_in_every_url_field(url: str, secret: str) -> None:
    for out in (scrub_url(url), record_target(url), scrub_location(b"location", url)):
        assert secret not in out and placeholder(secret) in out, out
        assert scrub_url(out) == out                 # scrubbing twice is once
    assert record_target(url, record_secrets=True) == url


def test_a_path_token_in_a_request_target_never_reaches_the_capture(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "cap.jsonl")
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    tap.client(post(f"/u/{GHP}/mcp".encode(), body))
    tap.upstream(response(200, [(b"Content-Type", b"application/json")], b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in tap.records())
    assert GHP not in text and placeholder(GHP) in text
    assert f"/u/{GHP}/mcp".encode() in tap.to_upstream        # the relay forwards the bytes unchanged

