"""A stream whose lines end in a lone CR (valid SSE, WHATWG) is recorded as it
is forwarded: each event when its blank line arrives, not when the next byte
of the stream does (the breaker's case: the legacy endpoint event recorded
after the client's first POST, the initialize answer after the next request:
false unmatched/unanswered errors), and a legacy endpoint event recorded with
the rewrite the client actually got, also when the client leaves right after
it (it was recorded as not rewritten, with a false foreign-origin warning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sansio_tap import HOST, SansIoTap

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
ENDPOINT = b"event: endpoint%sdata: http://127.0.0.1:9000/messages?session_id=abc%s%s"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _written(path: Path) -> list[dict[str, Any]]:
    """The records in the capture file so far (each relay batch is flushed)."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _sse(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in records if x.get("event") == "sse"]


@pytest.mark.parametrize("eol", [b"\r", b"\r\n"])
def test_each_event_is_recorded_when_it_is_forwarded(tmp_path: Path, eol: bytes) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(b"GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n" % HOST)
    tap.upstream(HEAD + _chunk(ENDPOINT % (eol, eol, eol[:1])))      # a CR LF blank line cut after its CR
    assert tap.to_client.endswith(b"data: http://127.0.0.1:7000/messages?session_id=abc" + eol + eol[:1] + b"\r\n")
    (ep,) = _sse(_written(tmp_path / "c.jsonl"))
    assert ep["endpoint"]["rewritten"].startswith("http://127.0.0.1:7000/messages")
    if eol == b"\r\n":
        tap.upstream(_chunk(b"\n"))
    msg = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    tap.upstream(_chunk(b"event: message" + eol + b"data: " + msg + eol + eol[:1]))
    frames = [x for x in _written(tmp_path / "c.jsonl") if x.get("type") == "message"]
    assert [f.get("json") for f in frames] == [orjson.loads(msg)]


def test_endpoint_event_of_a_stream_the_client_leaves_is_recorded_as_forwarded(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(b"GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n" % HOST)
    tap.upstream(HEAD + _chunk(ENDPOINT % (b"\r", b"\r", b"\r")))
    assert b"http://127.0.0.1:7000/messages" in tap.to_client
    assert tap.cid is not None
    tap._take(tap.relay.client_data(tap.cid, b""))
    records = tap.records()
    (ep,) = _sse(records)
    assert "rewritten" in ep["endpoint"]
    codes = {f["code"] for x in records for f in x.get("findings", ())}
    assert "sse.endpoint_rewritten" in codes and "sse.endpoint_foreign_origin" not in codes
