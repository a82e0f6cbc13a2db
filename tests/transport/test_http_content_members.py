"""Compressed bodies past the first gzip member (real tap, real TCP upstream:
no MCP server sends these on demand, so test_http_content_coding's canned
upstream does).

RFC 1952 §2.2: a gzip body is a series of members; RFC 9110 §8.4.1.3 adopts it.
The tap decoded the first member and silently ignored every byte after it, so a
body of several members was analysed as its first part and bytes after the end
of the compressed data (garbage, zero padding; after a zlib stream nothing may
follow, RFC 1950) vanished from the analysis without a word. Now every member is
decoded, and bytes after the last one are ``http.content_decoding_failed``: kept
as relayed (``response_body`` with ``offset``), what came before them analysed.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.check.report import check_capture
from tests.transport.test_http_content_coding import EVENT, INIT, RESULT, _codes, answering, send, served
from tests.transport.test_http_tap import canned

FAILED = "http.content_decoding_failed"


def _run(tmp_path: Path, ctype: str, coding: str, body: bytes) -> tuple[list[dict], str]:
    import trio

    async def go() -> None:
        async with served(tmp_path, canned([("Content-Type", ctype), ("Content-Encoding", coding)], body)) as url:
            assert await send(url, json.dumps(INIT).encode()) == (200, body)    # the client gets the bytes as sent
    trio.run(go)
    path = str(tmp_path / "cap.jsonl")
    return read_capture(path).records, path


def _answers(recs: list[dict]) -> list[dict]:
    return [r["json"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"]


@pytest.mark.parametrize("ctype", ["application/json", "text/event-stream"])
def test_every_gzip_member_is_decoded(tmp_path: Path, ctype: str) -> None:
    whole = RESULT if ctype == "application/json" else EVENT
    body = gzip.compress(whole[:25]) + gzip.compress(whole[25:40]) + gzip.compress(whole[40:])
    recs, path = _run(tmp_path, ctype, "gzip", body)
    assert _answers(recs) == [json.loads(RESULT)]
    assert not [r for r in recs if r.get("event") == "response_body" or "undecoded" in r]
    for reuse in (True, False):
        groups = set(check_capture(path, reuse=reuse).groups)
        assert FAILED not in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))


@pytest.mark.parametrize(("ctype", "coding", "body", "after"), [
    ("application/json", "gzip", gzip.compress(RESULT), b"GARBAGE after the member"),
    ("application/json", "gzip", gzip.compress(RESULT), b"\0\0\0\0"),                  # zero padding is no member either
    ("application/json", "gzip", gzip.compress(RESULT), b"\x1f"),                      # a member's first byte, and no more
    ("application/json", "deflate", zlib.compress(RESULT), b"xx"),
    ("text/event-stream", "gzip", gzip.compress(EVENT), b"\xff" * 30),
])
def test_bytes_after_the_compressed_data_are_a_finding_and_kept(tmp_path: Path, ctype: str, coding: str, body: bytes, after: bytes) -> None:
    recs, path = _run(tmp_path, ctype, coding, body + after)
    assert _answers(recs) == [json.loads(RESULT)]          # what came before them is analysed
    kept = [r for r in recs if r.get("event") == "response_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == after and kept[0]["offset"] == len(body), kept
    assert "after the end of its compressed data" in kept[0]["undecoded"]
    assert FAILED in _codes(recs)
    for reuse in (True, False):
        groups = set(check_capture(path, reuse=reuse).groups)
        assert FAILED in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))


def test_a_request_body_of_several_members_is_its_message_and_bytes_after_it_keep_it_undecoded(tmp_path: Path) -> None:
    import trio

    sent = json.dumps(INIT).encode()

    async def go(body: bytes) -> None:
        async with served(tmp_path, answering(RESULT)) as url:
            assert await send(url, body, [("Content-Encoding", "gzip")]) == (200, RESULT)
    trio.run(go, gzip.compress(sent[:30]) + gzip.compress(sent[30:]))
    recs = read_capture(str(tmp_path / "cap.jsonl")).records
    assert [r["json"] for r in recs if r["type"] == "message" and r["dir"] == "c2s"] == [INIT]
    body = gzip.compress(sent) + b"junk"      # compressed once: a gzip header carries the second it was made
    trio.run(go, body)
    recs = read_capture(str(tmp_path / "cap.jsonl")).records
    kept = [r for r in recs if r.get("event") == "request_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == body
    assert "after the end of its compressed data" in kept[0]["undecoded"] and FAILED in _codes(recs)
