"""A legacy HTTP+SSE (2024-11-05) event stream that stops decoding (sans-IO tap,
tests/sansio_tap.py: no SDK server compresses its stream on demand).

The POSTs of that transport are answered on the session's GET stream, not on
their own (202) responses. When the stream's bytes cannot be decoded from some
point on, the requests it still owed may have been answered there: they are
``http.answer_undecoded``, as on Streamable HTTP, not unanswered; live and under
``check`` / ``check --full``. They used to be called unanswered.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from mcptap.check.report import check_capture
from sansio_tap import SansIoTap, post, response

SID = "7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c2e"
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},'
        b'"clientInfo":{"name":"c","version":"1"}}}')
LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
ANSWER = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05","capabilities":{},' \
         b'"serverInfo":{"name":"s","version":"1"}}}\n\n'


def _codes(recs: list[dict]) -> set[str]:
    return {f["code"] for r in recs for f in (r.get("findings") or []) + (r.get("annotations") or [])}


@pytest.mark.parametrize("end", ["upstream_ends", "tap_stopped"])
def test_the_posts_a_legacy_stream_owed_are_answer_undecoded_when_it_stops_decoding(tmp_path: Path, end: str) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:7000\r\nAccept: text/event-stream\r\n\r\n")
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
    z = zlib.compressobj(wbits=31)
    first = z.compress(f"event: endpoint\ndata: /messages/?session_id={SID}\n\n".encode()) + z.flush(zlib.Z_SYNC_FLUSH)
    tap.upstream(b"%x\r\n%s\r\n" % (len(first), first))
    stream = (tap.cid, tap.gen)
    for body in (INIT, LIST):
        tap.cid = None                     # each POST on a connection of its own
        tap.client(post(f"/messages/?session_id={SID}".encode(), body))
        tap.upstream(response(202, [], b"Accepted"))
        if body is INIT and end == "upstream_ends":
            tap.cid, tap.gen = stream
            second = z.compress(ANSWER) + z.flush(zlib.Z_SYNC_FLUSH)
            tap.upstream(b"%x\r\n%s\r\n" % (len(second), second))      # initialize's answer decodes
    tap.cid, tap.gen = stream
    bad = b"\xff" * 40                                              # tools/list's, if any, does not
    tap.upstream(b"%x\r\n%s\r\n" % (len(bad), bad))
    if end == "upstream_ends":
        tap.upstream(b"0\r\n\r\n")
    recs = tap.records()
    live = _codes(recs)
    undecoded = [f for r in recs for f in r.get("findings") or () if f["code"] == "http.answer_undecoded"]
    assert "http.content_decoding_failed" in live and len(undecoded) == 1, live
    assert ("tools/list" in undecoded[0]["message"]) and (("initialize" in undecoded[0]["message"]) is (end == "tap_stopped"))
    assert "jsonrpc.unanswered_request" not in live, live
    for reuse in (True, False):
        groups = set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups)
        assert "http.answer_undecoded" in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))


def test_streamable_http_a_stream_that_stops_decoding_when_the_tap_stops_excuses_its_request_too(tmp_path: Path) -> None:
    """The same on Streamable HTTP when the tap stopped with the POST's stream open:
    its answer may be in the bytes not read (it was jsonrpc.unanswered_request under check)."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", LIST))
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
    tap.upstream(b"28\r\n%s\r\n" % (b"\xff" * 40))
    recs = tap.records()
    assert {"http.content_decoding_failed", "http.answer_undecoded"} <= _codes(recs)
    for reuse in (True, False):
        groups = set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups)
        assert "http.answer_undecoded" in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))


@pytest.mark.parametrize("coding", ["br", None])
def test_a_legacy_stream_unreadable_from_its_first_byte_excuses_the_posts_too(tmp_path: Path, coding: str | None) -> None:
    """A ``br`` stream hides even the ``endpoint`` event: the tap cannot tell the
    POSTs are HTTP+SSE ones (no session on either side); their exchanges ended
    with 202, so their answers can only have come on the stream it could not
    read. Near miss (``None``: the same stream readable, the answer never sent):
    unanswered, as before."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:7000\r\nAccept: text/event-stream\r\n\r\n")
    enc = b"Content-Encoding: br\r\n" if coding else b""
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n%sTransfer-Encoding: chunked\r\n\r\n" % enc)
    first = b"\x8b" * 16 if coding else f"event: endpoint\ndata: /messages/?session_id={SID}\n\n".encode()
    tap.upstream(b"%x\r\n%s\r\n" % (len(first), first))
    stream = (tap.cid, tap.gen)
    tap.cid = None
    tap.client(post(f"/messages/?session_id={SID}".encode(), INIT))
    tap.upstream(response(202, [], b"Accepted"))
    tap.cid, tap.gen = stream
    rest = b"\x8b" * 16 if coding else b": keep-alive\n\n"
    tap.upstream(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
    recs = tap.records()
    for reuse in (True, False):
        groups = set(check_capture(str(tmp_path / "c.jsonl"), reuse=reuse).groups)
        if coding:
            assert "http.answer_undecoded" in groups and "jsonrpc.unanswered_request" not in groups, (reuse, sorted(groups))
        else:
            assert "jsonrpc.unanswered_request" in groups and "http.answer_undecoded" not in groups, (reuse, sorted(groups))
    assert ("http.answer_undecoded" in _codes(recs)) is bool(coding)
