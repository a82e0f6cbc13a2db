"""A POST off the MCP endpoint whose body mcptap cannot decode (sans-IO tap,
tests/sansio_tap.py: no peer sends such a body on demand).

Off the endpoint (an OAuth token endpoint the tap did not recognise, a webhook)
a POST is MCP only when its body is JSON-RPC; one whose body does not decode
cannot be shown to be, so it is HTTP, as a body that is not JSON-RPC: kept as
sent (``request_body`` with ``content_encoding``, ``undecoded``, ``plain``), no
MCP transport rule judges its request or its response, and its answer is not
framed as a JSON-RPC message. It used to be judged as an MCP POST
(``http.undecodable_encoding``, ``http.unread_request_answered``, Accept rules).
``check --full`` must agree with the live verdict, for every plain exchange.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from mcptap.capture.format import decode_bytes
from mcptap.check.report import check_capture
from sansio_tap import SansIoTap, post, response

ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'
BODIES = [("br", b"\x1b\x05\x00\xf8\xff garbage"), ("zstd", b"\x28\xb5\x2f\xfd junk"), ("gzip", b"{\"grant_type\": 1}"),
          ("gzip", gzip.compress(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')[:-9])]


def _codes(recs: list[dict]) -> set[str]:
    return {f["code"] for r in recs for f in (r.get("findings") or []) + (r.get("annotations") or [])}


@pytest.mark.parametrize("path", [b"/oauth/token", b"/hooks/x"])
@pytest.mark.parametrize(("coding", "body"), BODIES)
def test_an_undecodable_post_off_the_endpoint_is_http_not_mcp(tmp_path: Path, path: bytes, coding: str, body: bytes) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    # no Accept naming both types: an MCP POST would be flagged for it
    tap.client(post(path, body, extra=b"Content-Encoding: %s\r\n" % coding.encode()).replace(
        b"Accept: application/json, text/event-stream\r\n", b""))
    tap.upstream(response(200, [(b"Content-Type", b"application/json")], ANSWER))
    recs = tap.records()
    assert _codes(recs) == set(), _codes(recs)
    assert not [r for r in recs if r["type"] == "message"], [r for r in recs if r["type"] == "message"]
    kept = [r for r in recs if r.get("event") == "request_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == body, kept
    assert kept[0]["content_encoding"] == coding and kept[0]["undecoded"] and kept[0]["plain"] is True
    for reuse in (True, False):
        assert set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups) == set(), reuse


def test_near_miss_on_the_mcp_endpoint_it_is_still_an_mcp_post(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", b"\x1b\x05junk", extra=b"Content-Encoding: br\r\n"))
    tap.upstream(response(200, [(b"Content-Type", b"application/json")], ANSWER))
    recs = tap.records()
    assert "plain" not in next(r for r in recs if r.get("event") == "request_body")
    want = {"http.undecodable_encoding", "http.unread_request_answered"}
    assert want <= _codes(recs)
    for reuse in (True, False):
        assert want <= set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups), reuse


def test_check_full_judges_a_plain_exchange_as_live_did(tmp_path: Path) -> None:
    """A decoded body that is not JSON-RPC off the endpoint: its response head is
    not judged by MCP rules live, and no longer is by ``check --full`` (it raised
    http.undecodable_encoding there for a br answer)."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/hooks/x", b"hello=1", ctype=b"text/plain"))
    tap.upstream(response(415, [(b"Content-Type", b"application/json"), (b"Content-Encoding", b"br")], b"\x1b\x05junk"))
    recs = tap.records()
    assert _codes(recs) == set()
    for reuse in (True, False):
        assert set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups) == set(), reuse
    assert next(r for r in recs if r.get("event") == "request_body")["plain"] is True
