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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.protocol.sse import SSEParser
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


_EVENTS = st.lists(st.sampled_from([
    b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}\r\n\r\n',
    b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":2}}\r\r',
    b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":3}}\n\n',
    b": keep-alive\r\n\r\n", b"id: 7\r\n\r\n", b"\r\n"]), min_size=1, max_size=6).map(b"".join)


def _events(data: bytes, cuts: list[int], path: Path) -> list[tuple[int, int, Any]]:
    """(offset, bytes, raw) of each event the tap recorded of ``data`` as an event stream read in pieces cut at ``cuts``."""
    tap = SansIoTap(path)
    tap.client(b"GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n" % HOST)
    tap.upstream(HEAD)
    cuts = sorted({c for c in cuts if 0 < c < len(data)})
    for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True):
        tap.upstream(_chunk(data[a:b]))
    tap.upstream(b"0\r\n\r\n")
    out = []
    for x in tap.records():
        info = (x.get("transport") or {}).get("sse") if x.get("type") == "message" else x.get("sse")
        if isinstance(info, dict):
            out.append((info["offset"], info["bytes"], info.get("raw")))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_EVENTS, cuts=st.lists(st.integers(0, 400), max_size=6), at_crlf=st.booleans())
def test_each_events_record_holds_its_own_bytes_however_the_stream_was_read(tmp_path: Path, data: bytes, cuts: list[int],
                                                                             at_crlf: bool) -> None:
    """A CR LF cut after its CR: the LF is the end of the event before (the parser emits that
    one at the CR, as forwarded), never the first byte of the next event's record. So every
    event's record is as in one read, but the one ended at a cut CR, which lacks that LF."""
    if at_crlf:         # (each CR LF cut between its CR and LF: the case)
        cuts = cuts + [i + 1 for i in range(len(data)) if data[i:i + 2] == b"\r\n"]
    whole = {off: (n, raw) for off, n, raw in _events(data, [], tmp_path / "whole.jsonl")}
    split = _events(data, cuts, tmp_path / "split.jsonl")
    assert [off for off, _, _ in split] == sorted(whole)
    for off, n, raw in split:
        if (n, raw) != whole[off]:          # the event before a cut CR LF: its record was written at the CR
            assert data[off + n - 1:off + n + 1] == b"\r\n" and whole[off][0] == n + 1
            assert raw is None or whole[off][1] == raw + "\n"
        assert raw is None or not raw.startswith("\n") or (whole[off][1] or "").startswith("\n")



_BIG = st.lists(st.sampled_from([
    b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}\r\n\r\n',
    b"data: " + b"x" * 400 + b"\r\n\r\n", b"data: " + b"y" * 400 + b"\r\r", b"data: " + b"z" * 400 + b"\n\n",
    b": keep-alive\r\n\r\n", b"id: 7\r\n\r\n", b"\r\n"]), min_size=1, max_size=6).map(b"".join)


def _reads(data: bytes) -> list[int]:
    """Cuts every 100 bytes (never between a CR and its LF): a 400-byte event then grows past
    the 200 bytes kept before its end arrives, however else the stream is cut (dropped in every run)."""
    return [c + (data[c - 1:c + 1] == b"\r\n") for c in range(100, len(data), 100)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_BIG, cuts=st.lists(st.integers(0, 2500), max_size=6), at_crlf=st.booleans())
def test_an_event_too_large_to_keep_ending_at_a_cut_cr_lf_leaves_the_next_its_own_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, cuts: list[int], at_crlf: bool) -> None:
    """The same with events too large to keep (``dropped``: here over 200 bytes): any
    chunking gives the same records, but the event ended at a cut CR, which lacks that
    LF. The LF after a dropped event's cut CR was the next event's first byte (its
    offset one early), as it was after a kept event's before the views3 fix."""
    monkeypatch.setattr(SSEParser.__init__, "__defaults__", (None, 200))
    cuts = cuts + _reads(data)
    if at_crlf:
        cuts = cuts + [i + 1 for i in range(len(data)) if data[i:i + 2] == b"\r\n"]
    whole = {off: (n, raw) for off, n, raw in _events(data, _reads(data), tmp_path / "whole.jsonl")}
    split = _events(data, cuts, tmp_path / "split.jsonl")
    assert [off for off, _, _ in split] == sorted(whole), (split, whole)
    for off, n, raw in split:
        if (n, raw) != whole[off]:          # the event before a cut CR LF: its record was written at the CR
            assert data[off + n - 1:off + n + 1] == b"\r\n" and whole[off][0] == n + 1
            assert raw is None or whole[off][1] == raw + "\n"
        assert raw is None or not raw.startswith("\n") or (whole[off][1] or "").startswith("\n")
