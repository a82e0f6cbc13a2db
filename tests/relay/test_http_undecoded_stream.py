"""An event stream that stops decoding part-way (sans-IO: relay + observer +
recorder, tests/sansio_tap.py; the chunks arrive as separate reads).

The events before the fault are analysed as usual; the bytes from the chunk
that did not decode on are a ``response_body`` record with ``offset``, the
request the stream still owed is ``http.answer_undecoded`` (not unanswered),
and HAR says which bytes it does not show.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import orjson

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.check.report import check_capture
from mcptap.export.har import har_of
from sansio_tap import SansIoTap, post

LIST = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
PROGRESS = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n'


def test_a_stream_that_stops_decoding_keeps_its_events_and_the_rest_raw(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", LIST))
    c = zlib.compressobj(wbits=31)
    first = c.compress(PROGRESS) + c.flush(zlib.Z_SYNC_FLUSH)       # decodes whole: the first event
    bad = b"\xff" * 40                                              # not deflate data
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
    tap.upstream(b"%x\r\n%s\r\n" % (len(first), first))
    tap.upstream(b"%x\r\n%s\r\n" % (len(bad), bad))
    tap.upstream(b"0\r\n\r\n")
    recs = tap.records()
    assert [r["json"]["method"] for r in recs if r["type"] == "message" and r["dir"] == "s2c"] == ["notifications/message"]
    kept = [r for r in recs if r.get("event") == "response_body"]
    assert len(kept) == 1 and decode_bytes(kept[0], "body") == bad and kept[0]["offset"] == len(first), kept
    path = str(tmp_path / "c.jsonl")
    for reuse in (True, False):
        groups = set(check_capture(path, reuse=reuse).groups)
        assert {"http.content_decoding_failed", "http.answer_undecoded"} <= groups, sorted(groups)
        assert "jsonrpc.unanswered_request" not in groups
    cap = read_capture(path)
    content = har_of(cap.header, cap.records)["log"]["entries"][0]["response"]["content"]
    assert "notifications/message" in content["text"] and f"from byte {len(first)}" in content["comment"], content


def test_a_client_gone_inside_a_compressed_json_body_cut_it_and_nothing_failed_to_decode(tmp_path: Path) -> None:
    """Near miss: an unfinished gzip body the client walked away from is a cut
    answer (http.client_closed_mid_response), not the server's decoding fault."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", LIST))
    body = zlib.compress(orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}) * 50, wbits=31)
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(body), body[: len(body) // 2]))
    tap.client(b"")
    recs = tap.records()
    codes = {f["code"] for r in recs for f in r.get("findings") or ()}
    assert "http.client_closed_mid_response" in codes, codes
    assert not {"http.content_decoding_failed", "http.answer_undecoded"} & codes
    assert not [r for r in recs if r.get("event") == "response_body" or "undecoded" in r]
