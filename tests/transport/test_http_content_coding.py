"""Bodies the HTTP tap cannot decode, and a body framed two ways (real tap,
real TCP upstream).

No MCP server sends br, zstd or a corrupt gzip body on demand, so a small h11
upstream does. What the client got must be in the capture (a ``response_body``
record with the bytes as relayed, still encoded), a finding must say why it was
not analysed, and the request it answered must not be called unanswered: live,
by ``check`` and by ``check --full`` alike; HAR carries the bytes as base64.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import h11
import pytest
import trio

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.check.report import check_capture
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.export.har import har_of
from mcptap.recorder import Recorder
from mcptap.transport.http import HttpTap, HttpTapConfig
from tests.transport.test_http_tap import canned, read_response

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
RESULT = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                         "serverInfo": {"name": "s", "version": "1"}}}).encode()
EVENT = b"event: message\ndata: " + RESULT + b"\n\n"
NOISE = bytes(range(256)) * 2      # not UTF-8: stored base64


@asynccontextmanager
async def served(tmp_path: Path, handler: Any):
    """(tap url) with ``handler`` as the upstream; the capture is tmp_path/cap.jsonl once it exits."""
    rec = None
    async with trio.open_nursery() as n:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        await n.start(trio.serve_listeners, handler, listeners)
        upstream = f"http://127.0.0.1:{port}/mcp"
        rec = Recorder(CaptureWriter.open(str(tmp_path / "cap.jsonl")), "http", {"url": upstream},
                       clock=monotonic_us_clock(), started=utc_timestamp())
        url = await n.start(HttpTap(HttpTapConfig(upstream=upstream), rec).serve)
        yield url
        n.cancel_scope.cancel()
    rec.close()


async def send(url: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> tuple[int, bytes]:
    """POST ``body`` through the tap; (status, body bytes the client got)."""
    host, rest = url.split("//")[1].split("/", 1)
    h, p = host.split(":")
    s = await trio.open_tcp_stream(h, int(p))
    c = h11.Connection(h11.CLIENT)
    hdrs = [("Host", host), ("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
            ("Content-Length", str(len(body)))] + (headers or [])
    await s.send_all(c.send(h11.Request(method="POST", target="/" + rest, headers=hdrs)) + c.send(h11.Data(data=body)) + c.send(h11.EndOfMessage()))
    status, out = await read_response(c, s)
    await s.aclose()
    return status, out


def _codes(recs: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for r in recs for f in (r.get("findings") or []) + (r.get("annotations") or [])]


CASES = [
    # coding, content type, body the upstream sends, finding on the head, finding at the end
    ("br", "application/json", RESULT, "http.undecodable_encoding", None),
    ("zstd", "application/json", NOISE, "http.undecodable_encoding", None),
    ("x-unknown", "application/json", RESULT, "http.undecodable_encoding", None),
    ("gzip", "application/json", RESULT, "http.content_encoding", "http.content_decoding_failed"),        # a gzip label on plain JSON
    ("gzip", "application/json", gzip.compress(RESULT)[:-12], "http.content_encoding", "http.content_decoding_failed"),   # cut short
    ("deflate", "application/json", NOISE, "http.content_encoding", "http.content_decoding_failed"),
    ("br", "text/event-stream", EVENT, "http.undecodable_encoding", None),
    ("gzip", "text/event-stream", EVENT, "http.content_encoding", "http.content_decoding_failed"),
    # an event stream that decodes as far as it goes but stops inside its compressed data: what decoded was
    # analysed, no byte failed to decode (nothing to keep raw), the end says the stream is unfinished
    ("gzip", "text/event-stream", gzip.compress(EVENT)[:-12], "http.content_encoding", "http.content_decoding_failed"),
]
UNFINISHED_STREAM = CASES[-1][2]


@pytest.mark.parametrize(("coding", "ctype", "body", "head_code", "end_code"), CASES)
async def test_a_response_body_mcptap_cannot_decode_is_kept_and_its_request_is_not_unanswered(
        tmp_path: Path, coding: str, ctype: str, body: bytes, head_code: str, end_code: str | None) -> None:
    async with served(tmp_path, canned([("Content-Type", ctype), ("Content-Encoding", coding)], body)) as url:
        status, got = await send(url, json.dumps(INIT).encode())
    assert status == 200 and got == body                       # the client got the bytes as sent
    path = str(tmp_path / "cap.jsonl")
    recs = read_capture(path).records
    kept = [r for r in recs if r["type"] == "http" and r.get("event") == "response_body"]
    end = next(r for r in recs if r["type"] == "http" and r.get("event") == "end")
    assert end["undecoded"]
    if body is UNFINISHED_STREAM:
        assert kept == [] and "unfinished" in end["undecoded"]
    else:
        assert len(kept) == 1 and decode_bytes(kept[0], "body") == body, kept
        assert kept[0]["content_encoding"] == coding and kept[0]["undecoded"] == end["undecoded"]
    live = _codes(recs)
    want = {head_code} | ({end_code} if end_code else set())
    if body is not UNFINISHED_STREAM:       # (that one's event decoded whole: it answers the request)
        want.add("http.answer_undecoded")
        assert not [r for r in recs if r["type"] == "message" and r["dir"] == "s2c"]
    assert want <= set(live), live
    if end_code is None:
        assert "http.content_decoding_failed" not in live
    for reuse in (True, False):                                 # check, and check --full: the same verdict
        groups = set(check_capture(path, reuse=reuse).groups)
        assert want <= groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))
    if body is UNFINISHED_STREAM:
        return
    cap = read_capture(path)
    har = har_of(cap.header, cap.records)["log"]["entries"][0]["response"]["content"]
    assert har["encoding"] == "base64" and base64.b64decode(har["text"]) == body, har
    assert coding in har["comment"] and "could not decode" in har["comment"]


async def test_a_body_that_decodes_is_still_framed_and_not_kept_raw(tmp_path: Path) -> None:
    """Near miss: a gzip body that decodes is the message, as before (no raw record, no failure)."""
    for coding, data in (("gzip", gzip.compress(RESULT)), ("deflate", zlib.compress(RESULT))):
        async with served(tmp_path, canned([("Content-Type", "application/json"), ("Content-Encoding", coding)], data)) as url:
            status, got = await send(url, json.dumps(INIT).encode())
        assert status == 200 and got == data
        recs = read_capture(str(tmp_path / "cap.jsonl")).records
        assert [r["json"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == [json.loads(RESULT)]
        assert not [r for r in recs if r.get("event") == "response_body"]
        assert not {"http.content_decoding_failed", "http.answer_undecoded"} & set(_codes(recs))


async def test_a_response_with_content_length_and_transfer_encoding_is_a_finding_and_read_as_chunked(tmp_path: Path) -> None:
    """RFC 9112 §6.1: a sender MUST NOT send both; Transfer-Encoding is what
    counts. The tap read the chunked body (the whole message), forwarded it
    chunked without the Content-Length, kept the head as received and said so,
    live and when re-judged."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"

    async def upstream(stream: trio.abc.Stream) -> None:
        got = b""
        while b"\r\n\r\n" not in got or not got.endswith(b"}"):
            got += await stream.receive_some(65536)
        await stream.send_all(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(RESULT), RESULT))
        await stream.receive_some(65536)       # until the tap closes

    async with served(tmp_path, upstream) as url:
        host = url.split("//")[1].split("/", 1)[0]
        h, p = host.split(":")
        s = await trio.open_tcp_stream(h, int(p))
        body = json.dumps(INIT).encode()
        await s.send_all(b"POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
        c = h11.Connection(h11.CLIENT)
        c.send(h11.Request(method="POST", target="/mcp", headers=[("Host", host), ("Content-Length", str(len(body)))]))
        c.send(h11.Data(data=body))
        c.send(h11.EndOfMessage())
        client_head, got = None, b""
        while True:
            ev = c.next_event()
            if ev is h11.NEED_DATA:
                c.receive_data(await s.receive_some(65536))
            elif isinstance(ev, h11.Response):
                client_head = dict(ev.headers)
            elif isinstance(ev, h11.Data):
                got += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                break
        await s.aclose()
    assert got == RESULT and client_head is not None
    assert b"content-length" not in client_head and client_head[b"transfer-encoding"] == b"chunked"
    path = str(tmp_path / "cap.jsonl")
    recs = read_capture(path).records
    resp = next(r for r in recs if r.get("event") == "response")
    assert ["Content-Length", "5"] in resp["headers"] and ["Transfer-Encoding", "chunked"] in resp["headers"]   # as received
    assert [r["json"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == [json.loads(RESULT)]
    assert "http.content_length_with_transfer_encoding" in _codes(recs)
    for reuse in (True, False):
        assert "http.content_length_with_transfer_encoding" in check_capture(path, reuse=reuse).groups


async def test_an_empty_body_under_a_coding_is_no_unread_answer(tmp_path: Path) -> None:
    """Near miss: a br label on an empty body hides no answer: the request is still unanswered."""
    async with served(tmp_path, canned([("Content-Type", "application/json"), ("Content-Encoding", "br")], b"")) as url:
        assert await send(url, json.dumps(INIT).encode()) == (200, b"")
    path = str(tmp_path / "cap.jsonl")
    recs = read_capture(path).records
    assert not [r for r in recs if r.get("event") == "response_body" or "undecoded" in r]
    for reuse in (True, False):
        groups = set(check_capture(path, reuse=reuse).groups)
        assert "jsonrpc.unanswered_request" in groups and "http.answer_undecoded" not in groups, sorted(groups)


def answering(body: bytes):
    """An upstream that answers every POST with the JSON ``body`` (whatever the request's coding)."""
    return canned([("Content-Type", "application/json")], body)


@pytest.mark.parametrize(("coding", "sent", "codes"), [
    ("br", json.dumps(INIT).encode(), {"http.undecodable_encoding"}),
    ("zstd", NOISE, {"http.undecodable_encoding"}),
    ("gzip", json.dumps(INIT).encode(), {"http.content_encoding", "http.content_decoding_failed"}),     # a gzip label on plain JSON
])
async def test_a_request_body_mcptap_cannot_decode_is_kept_and_its_answer_is_not_unmatched(
        tmp_path: Path, coding: str, sent: bytes, codes: set[str]) -> None:
    async with served(tmp_path, answering(RESULT)) as url:
        assert await send(url, sent, [("Content-Encoding", coding)]) == (200, RESULT)
    path = str(tmp_path / "cap.jsonl")
    recs = read_capture(path).records
    kept = [r for r in recs if r.get("event") == "request_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == sent and kept[0]["content_encoding"] == coding and kept[0]["undecoded"]
    assert not [r for r in recs if r["type"] == "message" and r["dir"] == "c2s"]
    want = codes | {"http.unread_request_answered"}
    assert want <= set(_codes(recs)), _codes(recs)
    for reuse in (True, False):
        groups = set(check_capture(path, reuse=reuse).groups)
        assert want <= groups and not {"jsonrpc.unmatched_response", "jsonrpc.parse_error"} & groups, (reuse, sorted(groups))
    cap = read_capture(path)
    post = har_of(cap.header, cap.records)["log"]["entries"][0]["request"]["postData"]
    assert coding in post["comment"] and "could not decode" in post["comment"]


async def test_a_request_body_that_decodes_is_its_message(tmp_path: Path) -> None:
    """Near miss: a gzip POST body that decodes is framed (decoded) and its answer pairs with it."""
    async with served(tmp_path, answering(RESULT)) as url:
        assert await send(url, gzip.compress(json.dumps(INIT).encode()), [("Content-Encoding", "gzip")]) == (200, RESULT)
    path = str(tmp_path / "cap.jsonl")
    recs = read_capture(path).records
    assert [r["json"]["method"] for r in recs if r["type"] == "message" and r["dir"] == "c2s"] == ["initialize"]
    assert not [r for r in recs if r.get("event") == "request_body"]
    for reuse in (True, False):
        groups = set(check_capture(path, reuse=reuse).groups)
        assert "http.content_encoding" in groups and not {"jsonrpc.unmatched_response", "http.unread_request_answered",
                                                           "jsonrpc.unanswered_request"} & groups, sorted(groups)
