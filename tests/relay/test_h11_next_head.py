"""``h11_fast.next_head`` (a received head without h11's full state pass where
nothing can follow from it) gives what h11's own ``next_event`` gives: the same
events, errors and connection state (the peer's HTTP version included) on
twin connections fed the same (random, often invalid) heads split anywhere."""

from __future__ import annotations

from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import h11_fast
from tests.relay._wire_pieces import fed_pieces
from tests.relay.test_h11_fast import _ev, _state

LINES = st.sampled_from([b"Content-Length: 3", b"Content-Length: 0", b"Transfer-Encoding: chunked", b"Connection: close",
                         b"Connection: keep-alive", b"Expect: 100-continue", b"Upgrade: y", b"Connection: upgrade",
                         b"X-A: b", b"Content-Length: x", b"Transfer-Encoding: gzip", b"bad line", b" folded"])


def _events(c: h11.Connection, fast: bool) -> list[Any]:
    got: list[Any] = []
    for _ in range(12):
        try:
            ev: Any = h11_fast.next_body(c) if fast else None
            if ev is None:
                ev = h11_fast.next_head(c) if fast else c.next_event()
        except h11.RemoteProtocolError as exc:
            got.append(("error", str(exc), exc.error_status_hint))
            break
        got.append((_ev(ev), _state(c), c.their_http_version, c._cstate.keep_alive))
        if ev is h11.NEED_DATA or ev is h11.PAUSED or type(ev) is h11.ConnectionClosed:
            break
    return got


def _feed(pair: tuple[h11.Connection, h11.Connection], wire: bytes, cuts: list[int], eof: bool) -> None:
    for p in fed_pieces(wire, cuts, eof):
        got = []
        for c, fast in zip(pair, (False, True), strict=True):
            try:
                c.receive_data(p)
            except RuntimeError as exc:
                got.append(("runtime", str(exc)))
                continue
            got.append(_events(c, fast))
        assert got[0] == got[1]
        assert _state(pair[0]) == _state(pair[1]) and pair[0].their_http_version == pair[1].their_http_version


@settings(max_examples=700, deadline=None)
@given(st.sampled_from([b"POST / HTTP/1.1", b"GET / HTTP/1.1", b"GET / HTTP/1.0", b"HEAD / HTTP/1.1", b"CONNECT x:1 HTTP/1.1",
                        b"GET /", b"\x16\x03 junk"]), st.lists(LINES, max_size=4), st.sampled_from([b"", b"abc", b"3\r\nabc\r\n0\r\n\r\n"]),
       st.lists(st.integers(1, 30), max_size=5), st.booleans(), st.booleans(), st.integers(100, 4000))
def test_request_heads_are_next_event(line: bytes, fields: list[bytes], body: bytes, cuts: list[int], eof: bool, cycle: bool,
                                      limit: int) -> None:
    """A server connection reading a request (after a keep-alive cycle or not; a small head limit: the 431)."""
    pair = (h11.Connection(h11.SERVER, max_incomplete_event_size=limit), h11.Connection(h11.SERVER, max_incomplete_event_size=limit))
    if cycle:
        for c in pair:
            c.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            c.next_event()
            c.next_event()
            c.send(h11.Response(status_code=204, headers=[]))
            c.send(h11.EndOfMessage())
            c.start_next_cycle()
    head = b"\r\n".join([line, b"Host: x", *fields]) + b"\r\n\r\n"
    _feed(pair, head + body + b"GET / HTTP/1.1\r\nHost: y\r\n\r\n", cuts, eof)


@settings(max_examples=700, deadline=None)
@given(st.sampled_from([b"GET", b"HEAD", b"POST", b"CONNECT"]), st.sampled_from(["sending", "done", "nothing", "close"]),
       st.sampled_from([b"HTTP/1.1 200 OK", b"HTTP/1.1 204 No Content", b"HTTP/1.0 200 OK", b"HTTP/1.1 304 Not Modified",
                        b"HTTP/1.1 100 Continue", b"HTTP/1.1 101 Switching", b"HTTP/1.1 404 Nope", b"HTTP/9 x", b"junk"]),
       st.lists(LINES, max_size=4), st.sampled_from([b"", b"abc", b"3\r\nabc\r\n0\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n"]),
       st.lists(st.integers(1, 30), max_size=5), st.booleans(), st.booleans())
def test_response_heads_are_next_event(method: bytes, client: str, line: bytes, fields: list[bytes], body: bytes,
                                       cuts: list[int], eof: bool, upgrade: bool) -> None:
    """A client connection reading a response: its request still sending its body, done,
    not sent at all (a response before any request) or sent with ``Connection: close``."""
    pair = (h11.Connection(h11.CLIENT), h11.Connection(h11.CLIENT))
    for c in pair:
        if client == "nothing":
            continue
        headers = [(b"Host", b"x"), (b"Content-Length", b"2")]
        if client == "close":
            headers.append((b"Connection", b"close"))
        if upgrade:
            headers += [(b"Upgrade", b"y"), (b"Connection", b"upgrade")]
        c.send(h11.Request(method=method, target=b"x:1" if method == b"CONNECT" else b"/", headers=headers))
        if client != "sending":
            c.send(h11.Data(data=b"ab"))
            c.send(h11.EndOfMessage())
    head = b"\r\n".join([line, *fields]) + b"\r\n\r\n"
    _feed(pair, head + body, cuts, eof)


def test_a_plain_head_takes_the_fast_way(monkeypatch: Any) -> None:
    """The request and response heads of a keep-alive exchange skip h11's
    ``_process_event`` (else the tests above compare h11 with itself)."""
    calls: list[Any] = []
    real = h11.Connection._process_event
    monkeypatch.setattr(h11.Connection, "_process_event", lambda self, role, ev: (calls.append(type(ev)), real(self, role, ev)))
    srv, cli = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
    srv.receive_data(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab")
    assert type(h11_fast.next_head(srv)) is h11.Request
    assert calls == []
    cli.send(h11.Request(method=b"GET", target=b"/", headers=[(b"Host", b"x")]))
    cli.send(h11.EndOfMessage())
    calls.clear()
    cli.receive_data(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
    assert type(h11_fast.next_head(cli)) is h11.Response
    assert calls == []
    assert srv.their_state is h11.SEND_BODY and cli.their_state is h11.SEND_BODY
