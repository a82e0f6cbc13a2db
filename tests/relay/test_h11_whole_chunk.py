"""``h11_fast.whole_chunk`` (a read's whole chunks passed on past h11's receive
buffer) gives what h11's own ``receive_data``/``next_event`` give: the same
``Data`` events, errors and connection state on twin connections fed the same
(random, often invalid) chunked bodies split anywhere; and the relay gives the
same commands and facts for SSE streams with and without it."""

from __future__ import annotations

from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import h11_fast
from tests.relay._wire_pieces import fed_pieces
from tests.relay.test_h11_fast import _drain, _state

#: a chunk's size line as a peer may write it: hex in either case, leading zeros, an extension, spaces
SIZE_LINE = st.sampled_from([b"%x", b"%X", b"00%x", b"%x;ext=1", b"%x ", b"%x\t", b"%x;", b"%x x", b" %x", b"%x;a\rb"])
CHUNK = st.tuples(st.binary(min_size=0, max_size=20), SIZE_LINE, st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n", b"XY", b"\r"]))
END = st.sampled_from([b"0\r\n\r\n", b"0\r\nx-t: 1\r\n\r\n", b"0\r\nbad trailer\r\n\r\n", b"", b"zz\r\n", b"3\r\nab",
                       b"0\r\n\r\nHTTP/1.1 200 OK\r\n"])


def _wire(chunks: list[tuple[bytes, bytes, bytes]], end: bytes) -> bytes:
    return b"".join(b"%s\r\n%s%s" % (line % len(body) if b"%" in line else line, body, crlf)
                    for body, line, crlf in chunks) + end


def _fast_receive(c: h11.Connection, data: bytes) -> list[Any]:
    """The relay's way (``ConnUpstream.upstream_data``): whole chunks first, the rest to h11."""
    got: list[Any] = []
    pos = 0
    while (span := h11_fast.whole_chunk(c, data, pos)) is not None:
        got.append((("Data", data[span[0]:span[1]], True, True), _state(c)))
        pos = span[1] + 2
        if pos == len(data):
            return got
    if pos < len(data):
        c.receive_data(data[pos:])
    return got + _drain(c, True)


def _same(a: list[Any], b: list[Any]) -> None:
    """The same events (the states in between differ: h11 holds the read's later chunks
    meanwhile), up to the NEED_DATA h11's drain reports where the fast way stopped at a chunk's end."""
    assert [x[0] for x in a if x[0] is not h11.NEED_DATA] == [x[0] for x in b if x[0] is not h11.NEED_DATA]


@settings(max_examples=800, deadline=None)
@given(st.lists(CHUNK, max_size=6), END, st.lists(st.integers(1, 60), max_size=6), st.booleans(), st.booleans(),
       st.sampled_from([b"", b"3\r\nabc\r\n"]))
def test_whole_chunks_are_next_event(chunks: list[tuple[bytes, bytes, bytes]], end: bytes, cuts: list[int], eof: bool,
                                     server: bool, first: bytes) -> None:
    """A response body to a client connection (or a request body to a server
    one: the 100-continue flag), the first chunk parsed by h11 so its CRLF may
    be left in the buffer (as the relay leaves it)."""
    if server:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n" + first
        plain, fast = h11.Connection(h11.SERVER), h11.Connection(h11.SERVER)
    else:
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + first
        plain, fast = h11.Connection(h11.CLIENT), h11.Connection(h11.CLIENT)
        for c in (plain, fast):
            c.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
            c.send(h11.EndOfMessage())
    for c in (plain, fast):
        c.receive_data(head)
        while True:     # the head and the first chunk, as the relay takes them: its CRLF stays buffered
            ev = h11_fast.next_body(c) or c.next_event()
            if ev is h11.NEED_DATA or (type(ev) is h11.Data and ev.chunk_end):
                break
    wire = _wire(chunks, end)
    for p in fed_pieces(wire, cuts):
        plain.receive_data(p)
        _same(_fast_receive(fast, p), _drain(plain, False))
        assert _state(fast) == _state(plain)
        if plain.their_state is h11.ERROR:
            return
    if eof:
        for c in (plain, fast):
            c.receive_data(b"")
        _same(_drain(fast, True), _drain(plain, False))
    assert _state(fast) == _state(plain)


SSE = st.lists(st.tuples(st.sampled_from([b"event: message\ndata: {\"i\":1}\n\n", b"data: x\n\n", b": ping\n\n",
                                          b"event: endpoint\ndata: http://127.0.0.1:9/mcp/messages?s=1\n\n",
                                          b"event: endpoint\r\ndata: /m\r\n\r\n", b"data: " + b"y" * 300 + b"\n\n"]),
                         SIZE_LINE, st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"XY"])), max_size=8)


def _relay_run(resp: bytes, cuts: list[int], eof: bool, fast: bool) -> list[str]:
    from mcptap.relay.http.events import Upstream
    from mcptap.relay.http.proxy import HttpRelay

    saved = h11_fast.SUPPORTED
    h11_fast.SUPPORTED = fast
    try:
        relay = HttpRelay(Upstream.parse("http://127.0.0.1:9/mcp"), listen_authority="127.0.0.1:8000")
        cid, first = relay.client_opened("127.0.0.1:5555")
        seen = [repr(first), repr(relay.client_data(cid, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
                                                         b"Accept: text/event-stream\r\n\r\n"))]
        for p in fed_pieces(resp, cuts, eof):
            seen.append(repr(relay.upstream_data(cid, 1, p)))
        seen.append(repr(relay.client_data(cid, b"")))
        return seen
    finally:
        h11_fast.SUPPORTED = saved


@settings(max_examples=400, deadline=None)
@given(SSE, END, st.lists(st.integers(1, 400), max_size=8), st.booleans(),
       st.sampled_from([b"text/event-stream", b"application/json"]))
def test_the_relay_passes_sse_streams_the_same_with_and_without_whole_chunks(
        events: list[tuple[bytes, bytes, bytes]], end: bytes, cuts: list[int], eof: bool, ctype: bytes) -> None:
    resp = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n%s" % (ctype, _wire(events, end))
    assert _relay_run(resp, cuts, eof, True) == _relay_run(resp, cuts, eof, False)


def test_a_read_of_whole_events_skips_h11s_buffer() -> None:
    """The fast path is taken where it should be: a read of two whole events
    leaves h11's receive buffer untouched (else the tests above compare h11
    with itself)."""
    c = h11.Connection(h11.CLIENT)
    c.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    c.send(h11.EndOfMessage())
    c.receive_data(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert type(c.next_event()) is h11.Response
    data = b"3\r\nabc\r\n2;x\r\nde\r\n"
    assert h11_fast.whole_chunk(c, data, 0) == (3, 6)
    assert h11_fast.whole_chunk(c, data, 8) == (13, 15)
    assert h11_fast.whole_chunk(c, data + b"0\r\n\r\n", 17) is None
    assert not c._receive_buffer
