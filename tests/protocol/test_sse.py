"""SSE parser: WHATWG rules, exact byte accounting, chunking independence."""

from __future__ import annotations

import dataclasses

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture import pieces
from mcptap.protocol import sse, sse_canonical
from mcptap.protocol.sse import SSEParser, parse_all
from tests.protocol import sse_reference


def feed(chunks: list[bytes]) -> list:
    p = SSEParser()
    out = []
    for c in chunks:
        out += p.receive_data(c)
    return out + p.receive_data(b"")


def sans_chunks(events) -> list:
    return [dataclasses.replace(e, chunks=0) for e in events]


def lf_joined(events) -> list:
    """``events`` with the LF of a CR LF cut after its CR (the first byte of the
    next block's raw, see protocol/sse.py) moved back to the block it ends: the
    one thing a chunking may change."""
    out: list = []
    for e in events:
        if out and e.raw[:1] == b"\n" and out[-1].raw[-1:] == b"\r":
            out[-1] = dataclasses.replace(out[-1], raw=bytes(out[-1].raw) + b"\n", end=out[-1].end + 1)
            if len(e.raw) == 1:
                continue
            e = dataclasses.replace(e, raw=bytes(e.raw[1:]), start=e.start + 1)
        out.append(e)
    return out


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    cuts = sorted({c for c in cuts if 0 < c < len(data)})
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)], strict=False)]


# -- WHATWG field rules ----------------------------------------------------------

def test_basic_event_and_defaults():
    (ev,) = parse_all(b"data: {\"a\":1}\n\n")
    assert ev.type == "message" and ev.data == '{"a":1}' and ev.dispatched
    assert ev.id is None and ev.last_event_id == "" and ev.retry is None
    assert (ev.start, ev.end, ev.raw) == (0, 15, b"data: {\"a\":1}\n\n")


def test_named_event_multiline_data_joined_with_lf():
    (ev,) = parse_all(b"event: endpoint\ndata: a\ndata:b\ndata:  c\n\n")
    assert ev.type == "endpoint"
    assert ev.data == "a\nb\n c"       # exactly one leading space is dropped
    assert ev.multiline and ev.data_lines == 3


def test_field_without_colon_has_empty_value():
    (ev,) = parse_all(b"data\ndata\n\n")
    assert ev.data == "\n" and ev.data_lines == 2


def test_crlf_and_cr_line_ends():
    evs = parse_all(b"data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\r")
    assert [e.data for e in evs] == ["a\nb", "c\nd"]
    assert all(e.cr and e.terminated for e in evs)
    assert not parse_all(b"data: x\n\n")[0].cr


def test_cr_at_chunk_end_followed_by_lf():
    # the LF in the next chunk completes the CR LF, it is not a blank line
    evs = feed([b"data: a\r", b"\ndata: b\r\n\r", b"\n"])
    assert evs[0].data == "a\nb" and evs[0].raw == b"data: a\r\ndata: b\r\n\r"
    assert evs[0].chunks == 2 and evs[0].terminated
    # the LF of the blank line's CR LF came after the event: a block of its own, no event's fields
    assert evs[1].raw == b"\n" and evs[1].blank and evs[1].terminated and not evs[1].data_lines
    assert len(evs) == 2


def test_cr_blank_line_emits_at_once():
    # a CR ends the blank line (WHATWG): the event is complete without waiting for the next byte
    p = SSEParser()
    (ev,) = p.receive_data(b"data: a\r\r")
    assert ev.raw == b"data: a\r\r" and ev.data == "a" and ev.terminated
    (ev2,) = p.receive_data(b"data: b\n\n")
    assert ev2.raw == b"data: b\n\n" and ev2.start == 9
    assert p.receive_data(b"") == []


def test_split_crlf_blank_line_emits_at_the_cr_and_swallows_the_lf():
    p = SSEParser()
    (ev,) = p.receive_data(b"event: endpoint\r\ndata: /m\r\n\r")
    assert ev.type == "endpoint" and ev.data == "/m"
    # the LF is the end of that line, not a blank line: the next event is one event, its fields unchanged
    (nxt,) = p.receive_data(b"\ndata: 1\r\n\r\n")
    assert nxt.raw == b"\ndata: 1\r\n\r\n" and nxt.data == "1" and nxt.data_lines == 1
    assert p.receive_data(b"") == []


def test_cr_only_stream_one_event_per_read():
    p = SSEParser()
    for i in range(3):
        (ev,) = p.receive_data(b"event: message\rdata: %d\r\r" % i)
        assert ev.data == str(i)
    assert p.receive_data(b"") == []


def test_comments_and_keepalive_not_dispatched():
    evs = parse_all(b": keep-alive\n\n:x\ndata: 1\n\n")
    assert evs[0].comments == ("keep-alive",) and not evs[0].dispatched
    assert evs[1].comments == ("x",) and evs[1].dispatched


def test_leading_bom_ignored_once():
    (ev,) = parse_all(b"\xef\xbb\xbfdata: x\n\n")
    assert ev.data == "x" and ev.bom
    evs = parse_all(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n")
    assert evs[0].data_lines == 0 and evs[0].unknown_fields == ("\ufeffdata",)


def test_bom_alone_on_first_line_is_a_blank_line():
    evs = parse_all(b"\xef\xbb\xbf\ndata: x\n\n")
    assert [e.raw for e in evs] == [b"\xef\xbb\xbf\n", b"data: x\n\n"]
    assert evs[0].blank


def test_id_persists_and_nul_id_ignored():
    evs = parse_all(b"id: 7\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid\ndata: d\n\n")
    assert [e.id for e in evs] == ["7", None, None, ""]
    assert [e.last_event_id for e in evs] == ["7", "7", "7", ""]
    assert evs[2].id_ignored


def test_priming_event():
    (ev,) = parse_all(b"id: ev-0\nretry: 1500\ndata: \n\n")
    assert ev.priming and ev.dispatched and ev.data == "" and ev.retry == 1500


def test_retry_must_be_digits():
    (ev,) = parse_all(b"retry: 15s\ndata: x\n\n")
    assert ev.retry is None and ev.retry_invalid


def test_unknown_fields_kept():
    (ev,) = parse_all(b"foo: bar\ndata: x\n\n")
    assert ev.unknown_fields == ("foo",)


def test_unterminated_event_at_eof_flagged():
    evs = parse_all(b"data: {\"id\":7}\n\ndata: {\"id\":8}\n")
    assert evs[0].terminated and not evs[1].terminated
    assert evs[1].data == '{"id":8}' and not evs[1].dispatched


def test_unterminated_id_does_not_update_last_event_id():
    p = SSEParser()
    p.receive_data(b"id: 1\ndata: a\n\nid: 2\ndata: b")
    (ev,) = p.receive_data(b"")
    assert ev.id == "2" and p.last_event_id == "1"


def test_event_split_across_chunks_counts_chunks():
    chunks = [b"event: message\ndata: {\"x\":\"first half ", b"second half\"}\n", b"\n"]
    (ev,) = feed(chunks)
    assert ev.chunks == 3 and ev.data == '{"x":"first half second half"}'


def test_invalid_utf8_replaced_and_flagged():
    (ev,) = parse_all(b"data: \xff\xfe\n\n")
    assert ev.invalid_utf8 and ev.data == "\ufffd\ufffd"


def test_blank_lines_are_their_own_blocks():
    evs = parse_all(b"data: a\n\n\n\n")
    assert [e.raw for e in evs] == [b"data: a\n\n", b"\n", b"\n"]
    assert [e.blank for e in evs] == [False, True, True]


def test_large_event_in_many_chunks():
    payload = b"x" * 300_000
    data = b"data: " + payload + b"\n\n"
    evs = feed([data[i:i + 4096] for i in range(0, len(data), 4096)])
    assert len(evs) == 1 and len(evs[0].data) == 300_000 and evs[0].chunks == len(range(0, len(data), 4096))


def test_after_eof_nothing_more():
    p = SSEParser()
    p.receive_data(b"data: a\n\n")
    p.receive_data(b"")
    assert p.receive_data(b"data: b\n\n") == []


# -- properties ------------------------------------------------------------------

_sse_ish = st.lists(
    st.sampled_from([b"data:", b"data: ", b"event: x", b"id: 1", b"id: \x00", b"retry: 10", b":c",
                     b"\n", b"\r", b"\r\n", b"{}", b"\xef\xbb\xbf", b"\xff", b"x", b"data"]),
    max_size=40,
).map(b"".join)

_streams = st.one_of(st.binary(max_size=300), _sse_ish)


@settings(max_examples=400, deadline=None)
@given(data=_streams, cuts=st.lists(st.integers(0, 300), max_size=12))
def test_any_chunking_gives_same_events(data, cuts):
    whole = parse_all(data)
    assert lf_joined(sans_chunks(feed(split_at(data, cuts)))) == sans_chunks(whole)


@settings(max_examples=300, deadline=None)
@given(data=_streams)
def test_one_byte_at_a_time(data):
    assert lf_joined(sans_chunks(feed([data[i:i + 1] for i in range(len(data))]))) == sans_chunks(parse_all(data))


def _due(ev) -> int:
    """Stream offset by which a terminated block's blank line has arrived: a
    CR LF blank line is complete at its CR."""
    return ev.end - 1 if ev.raw.endswith(b"\r\n") else ev.end


@settings(max_examples=500, deadline=None)
@given(data=st.one_of(_streams, st.lists(st.sampled_from([b"data: x", b"event: endpoint", b":c", b"\r", b"\n", b"\r\n"]),
                                         max_size=30).map(b"".join)),
       cuts=st.lists(st.integers(0, 300), max_size=12), kind=st.sampled_from(["full", "lazy", "capped"]))
def test_each_event_is_emitted_once_its_blank_line_has_arrived(data, cuts, kind):
    """No event waits for a byte after its blank line (a CR-only stream's events
    were held until the next event came: recorded one event late)."""
    def parser() -> SSEParser:
        return SSEParser(4) if kind == "lazy" else SSEParser(max_block=12) if kind == "capped" else SSEParser()
    whole = parser()
    dues = [_due(e) for e in whole.receive_data(data) + whole.receive_data(b"") if e.terminated]
    p, fed, emitted = parser(), 0, 0
    for c in split_at(data, cuts):
        evs = p.receive_data(c)
        fed += len(c)
        emitted = evs[-1].end if evs else emitted
        assert all(d <= emitted for d in dues if d <= fed), (fed, emitted, dues)


@settings(max_examples=400, deadline=None)
@given(data=_streams, cuts=st.lists(st.integers(0, 300), max_size=12))
def test_raw_concatenation_and_offsets(data, cuts):
    evs = feed(split_at(data, cuts))
    assert b"".join(e.raw for e in evs) == data
    pos = 0
    for e in evs:
        assert e.start == pos and e.end == pos + len(e.raw) and e.raw
        pos = e.end
    # only the last block may be unterminated
    assert all(e.terminated for e in evs[:-1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=50), max_size=10))
def test_arbitrary_bytes_never_raise(chunks):
    feed(chunks)


_mixed = st.lists(
    st.sampled_from([b"data:", b"data: ", b"event: x", b"id: 1", b"id: \x00", b"retry: 10", b"retry: x", b":c", b": c", b"::",
                     b"\n", b"\r", b"\r\n", b"{}", b"\xef\xbb\xbf", b"\xff", b"\xe2\x82", b"\xe2\x82\xac", b"x", b"data", b"a:b",
                     b" ", b":", b"data: " + b"y" * 5000, b"\xe2\x82:\xac"]),
    max_size=40,
).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(data=st.one_of(st.binary(max_size=300), _mixed), cuts=st.lists(st.integers(0, 60000), max_size=12))
def test_same_events_as_the_reference_parser(data, cuts):
    """The memchr line scan and the split-then-decode of lines give exactly the
    events of the original regex/whole-line parser (tests/protocol/sse_reference.py)."""
    chunks = split_at(data, sorted({c for c in cuts if 0 < c < len(data)}))
    new, ref = SSEParser(), sse_reference.SSEParser()
    got, want = [], []
    for c in chunks + [b""]:
        got += new.receive_data(c)
        want += ref.receive_data(c)
    assert all(e.data_bytes is None for e in got)
    # the reference held a block ended by a CR at a chunk's end for the next byte; this parser
    # emits it at once (test_each_event_is_emitted_once_its_blank_line_has_arrived), hence
    # lf_joined and no count of chunks
    assert [{k: v for k, v in dataclasses.asdict(e).items() if k not in ("data_bytes", "data_at", "dropped", "data_cuts", "chunks", "last_cr")}
            for e in lf_joined(got)] == [{k: v for k, v in dataclasses.asdict(e).items() if k != "chunks"} for e in want]


@settings(max_examples=300, deadline=None)
@given(data=_mixed, big=st.integers(0, 3), tail=st.sampled_from([b"\n\n", b"\r\n\r\n", b"\nretry: 5\n\n", b"\n"]))
def test_is_canonical_equals_building_the_canonical_bytes(data, big, tail):
    """Large events are compared piecewise; the answer is the plain comparison's."""
    blob = ("\u00e9" * (sse_canonical._PIECE // 2 + 7) if big == 1 else "x" * (big << 20)).encode()
    for ev in parse_all(b"id: 9\nevent: m\ndata: " + blob + data + tail):
        assert sse_canonical.is_canonical(ev) == (ev.raw == sse_canonical.canonical_event(ev))


def test_is_canonical_large_event_both_ways():
    blob = b"x" * (3 << 20)
    ok = parse_all(b'id: 1\nevent: message\ndata: {"a":"' + blob + b'"}\n\n')[0]
    assert ok.raw == sse_canonical.canonical_event(ok) and sse_canonical.is_canonical(ok)
    crlf = parse_all(b'data: {"a":"' + blob + b'"}\r\n\r\n')[0]
    assert not sse_canonical.is_canonical(crlf)
    late = parse_all(b'data: {"a":"' + blob + b'"}\n\n')[0]
    assert sse_canonical.is_canonical(late)
    bad = parse_all(b'data: {"a":"' + blob[:-1] + b'\xff"}\n\n')[0]
    assert not sse_canonical.is_canonical(bad) and bad.raw != sse_canonical.canonical_event(bad)


@settings(max_examples=400, deadline=None)
@given(data=_streams, cuts=st.lists(st.integers(0, 300), max_size=12))
def test_handed_over_buffers_give_the_same_events(data, cuts):
    # HAND_OVER_ABOVE = 0: every block that fills the buffer is handed over as
    # its raw (a bytearray) instead of copied; nothing else may change
    chunks = split_at(data, cuts)
    expected = feed(chunks)
    old, sse.HAND_OVER_ABOVE = sse.HAND_OVER_ABOVE, 0
    try:
        got = feed(chunks)
    finally:
        sse.HAND_OVER_ABOVE = old
    assert got == expected
    assert b"".join(e.raw for e in got) == data


def test_large_event_filling_the_buffer_is_handed_over():
    ev = b"data: " + b"x" * (sse.HAND_OVER_ABOVE + 10) + b"\n\n"
    p = SSEParser()
    (got,) = p.receive_data(ev[:1000]) + p.receive_data(ev[1000:])
    assert isinstance(got.raw, bytearray) and got.raw == ev and got.data == "x" * (sse.HAND_OVER_ABOVE + 10)
    assert p.buffered == 0
    (nxt,) = p.receive_data(b"data: 1\n\n")
    assert nxt.raw == b"data: 1\n\n" and nxt.start == len(ev) and isinstance(nxt.raw, bytes)


# -- lazy data lines (the tap's parser: SSEParser(lazy_above=...)) -----------------------------------
def lazy_feed(chunks: list[bytes], above: int) -> list:
    p = SSEParser(lazy_above=above)
    out = []
    for c in chunks + [b""]:
        out += p.receive_data(c)
    return out


_lazy_mixed = st.lists(
    st.sampled_from([b"data: ", b"data:", b"data", b"event: x", b"event: message", b"id: 7", b"retry: 5", b": c", b"\n",
                     b"\r\n", b"\r", b"\n\n", b"\xef\xbb\xbf", b"\xff", b"\xe2\x82", b"\xe2\x82\xac", b"xyz" * 5,
                     b'{"jsonrpc":"2.0","method":"m","params":{"t":"' + b"q" * 30 + b'"}}']),
    max_size=30,
).map(b"".join)


@settings(max_examples=800, deadline=None)
@given(data=_lazy_mixed, cuts=st.lists(st.integers(0, 400), max_size=8), above=st.integers(0, 40))
def test_lazy_events_decode_to_the_full_parsers_events(data, cuts, above):
    """Any chunking: a lazy parser's events, decoded, are the full parser's;
    ``big_data`` gives the payload bytes ``data.encode()``, the 40-character
    quote and the raw text exactly when the event is not canonical."""
    chunks = split_at(data, cuts)
    full = feed(chunks)
    lazy = lazy_feed(chunks, above)
    assert [(e.start, e.end) for e in lazy] == [(e.start, e.end) for e in full]
    for lz, ev in zip(lazy, full, strict=True):
        if lz.data_bytes is None:
            assert lz == dataclasses.replace(ev, chunks=lz.chunks) and bytes(lz.raw) == bytes(ev.raw)
            continue
        ev = dataclasses.replace(ev, chunks=lz.chunks)
        assert len(ev.data.encode("utf-8", "surrogateescape")) > above
        assert (ev.data_lines > 1) == bool(lz.data_cuts) and lz.data_at == (lz.data_cuts or (lz.data_at,))[0]
        assert sse_canonical.decoded(lz) == ev
        big = sse_canonical.big_data(lz)
        if big is None:
            assert ev.invalid_utf8
            continue
        payload, quote, text = big
        assert payload == ev.data.encode() and quote == ev.data[:40]
        assert (text is None) == sse_canonical.is_canonical(ev)
        assert text is None or str(text) == bytes(ev.raw).decode("utf-8", "replace")
        assert text is None or b"".join(pieces.lazy_pieces(text)) == orjson.dumps(str(text))[1:-1]


def test_a_long_data_line_is_held_once():
    """A long data line arriving in chunks goes to the spill, not the parser's
    buffer: the event's raw is the rest of the block, its bytes are data_bytes."""
    body = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"z" * (2 << 20) + b'"}}'
    stream = b"event: message\ndata: " + body + b"\nid: 4\n\n"
    p = SSEParser(lazy_above=1 << 20)
    out = []
    for k in range(0, len(stream), 65536):
        out += p.receive_data(stream[k:k + 65536])
        assert len(p._buf) <= (1 << 20) + 65536
    (ev,) = out + p.receive_data(b"")
    assert ev.data_bytes == body and ev.raw == b"event: message\ndata: \nid: 4\n\n" and ev.data_at == 21
    assert (ev.start, ev.end, ev.id, ev.data, ev.data_lines) == (0, len(stream), "4", "", 1) and not ev.priming
    payload, quote, text = sse_canonical.big_data(ev)
    assert payload is ev.data_bytes and quote == body[:40].decode() and str(text) == stream.decode()
