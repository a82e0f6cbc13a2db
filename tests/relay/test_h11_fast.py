"""``h11_fast``'s Data events without h11's state pass, and its message ends by
a slimmed one, give what h11's own ``send``/``next_event`` give: the same
bytes, events, errors and connection state, on twin connections fed the same
(random, often invalid) input."""

from __future__ import annotations

import types
from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import h11_fast
from tests.relay._wire_pieces import fed_pieces


def _io(f: Any) -> Any:
    """A reader or writer as compared: h11's function itself, else its class."""
    return f if f is None or isinstance(f, types.FunctionType) else type(f)


def _state(c: h11.Connection) -> tuple[Any, ...]:
    return (c.our_state, c.their_state, c.client_is_waiting_for_100_continue, c.trailing_data, c._cstate.keep_alive,
            set(c._cstate.pending_switch_proposals), c._request_method, _io(c._writer), _io(c._reader),
            type(c._reader), vars(c._writer) if c._writer is not None and hasattr(c._writer, "__dict__") else None,
            vars(c._reader) if c._reader is not None and hasattr(c._reader, "__dict__") else None)


def _ev(ev: Any) -> Any:
    if isinstance(ev, h11.Data):
        return ("Data", bytes(ev.data), ev.chunk_start, ev.chunk_end)
    return ev


def _drain(c: h11.Connection, fast: bool) -> list[Any]:
    got: list[Any] = []
    for _ in range(50):
        try:
            ev: Any = h11_fast.next_body(c) if fast else None
            if ev is None:
                ev = c.next_event()
        except h11.RemoteProtocolError as exc:
            got.append(("error", str(exc), exc.error_status_hint))
            break
        got.append((_ev(ev), _state(c)))
        if ev is h11.NEED_DATA or ev is h11.PAUSED or type(ev) is h11.ConnectionClosed:
            break
    return got


HEAD = st.sampled_from([b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n",
                        b"POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n",
                        b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                        b"POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
                        b"POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
                        b"POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
                        b"POST /mcp HTTP/1.1\r\nHost: x\r\nUpgrade: y\r\nConnection: upgrade\r\nContent-Length: %d\r\n\r\n"])
#: what the server side sends before the request body is read: nothing, a head, a whole response,
#: a response with Connection: close and then its close (the states the end of the body meets)
EARLY = [[], [h11.Response(status_code=200, headers=[(b"Content-Length", b"0")])],
         [h11.Response(status_code=200, headers=[(b"Content-Length", b"0")]), h11.EndOfMessage()],
         [h11.Response(status_code=200, headers=[(b"Content-Length", b"0"), (b"Connection", b"close")]), h11.EndOfMessage(),
          h11.ConnectionClosed()],
         [h11.Response(status_code=200, headers=[(b"Content-Length", b"0")]), h11.EndOfMessage(), h11.ConnectionClosed()]]
CHUNKS = st.lists(st.binary(min_size=0, max_size=12), max_size=4)


def _body(head: bytes, chunks: list[bytes], mangle: int) -> bytes:
    if b"%d" in head:
        body = b"".join(chunks)
        return head % (len(body) + (mangle % 3) - 1 if mangle else len(body)) + body
    wire = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c)
    wire += b"0\r\nx-trailer: 1\r\n\r\n" if mangle % 2 else b"0\r\n\r\n"
    if mangle % 5 == 4 and len(wire) > 3:
        wire = wire[:3] + b"Z" + wire[4:]           # a broken chunk size or footer
    return head + wire


@settings(max_examples=600, deadline=None)
@given(HEAD, CHUNKS, st.integers(0, 9), st.lists(st.integers(1, 40), max_size=8), st.booleans(),
       st.sampled_from([b"", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"garbage\r\n\r\n"]), st.integers(0, len(EARLY) - 1))
def test_next_body_is_next_event(head: bytes, chunks: list[bytes], mangle: int, cuts: list[int], eof: bool, after: bytes,
                                 early: int) -> None:
    wire = _body(head, chunks, mangle) + after
    plain, fast = h11.Connection(h11.SERVER), h11.Connection(h11.SERVER)
    cut = wire.index(b"\r\n\r\n") + 4
    for c in (plain, fast):     # the head, then the server's early answer (if any) before the body
        c.receive_data(wire[:cut])
        try:
            c.next_event()
        except h11.RemoteProtocolError:
            continue        # a head h11 refuses (a negative length): both connections fail alike below
        for ev in EARLY[early]:
            try:
                c.send(ev)
            except h11.LocalProtocolError:
                break
    wire = wire[cut:]
    for p in fed_pieces(wire, cuts, eof):
        for c in (plain, fast):
            c.receive_data(p)
        assert _drain(fast, True) == _drain(plain, False)
        assert _state(fast) == _state(plain)


#: what the peer has done when our body is sent: nothing more, an early response head (client
#: side) or its request body's end (server side), a whole answer, that answer and its close
PEER = {"client": [b"", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                   b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n"],
        "server": [b"", b"ab", b"ab", b"ab", b"ab"]}


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(["client", "server"]), st.sampled_from(["length", "chunked"]), st.booleans(),
       st.integers(0, 30), st.lists(st.binary(max_size=12), max_size=6), st.sampled_from(["", "eom", "trailers"]),
       st.booleans(), st.integers(0, 4), st.booleans())
def test_send_data_and_end_are_send(role: str, framing: str, expect: bool, length: int, datas: list[bytes], end: str,
                                    close: bool, peer: int, peer_closes: bool) -> None:
    fields = [(b"Host", b"x")] + ([(b"Content-Length", b"%d" % length)] if framing == "length"
                                  else [(b"Transfer-Encoding", b"chunked")]) + ([(b"Connection", b"close")] if close else [])
    pair = []
    for _ in range(2):
        if role == "client":
            c = h11.Connection(h11.CLIENT)
            c.send(h11.Request(method=b"POST", target=b"/", headers=fields + ([(b"Expect", b"100-continue")] if expect else [])))
        else:
            c = h11.Connection(h11.SERVER)
            c.receive_data(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n")
            c.next_event()
            c.send(h11.Response(status_code=200, headers=fields[1:]))
        c.receive_data(PEER[role][peer])
        if peer_closes:
            c.receive_data(b"")
        try:
            while (ev := c.next_event()) not in (h11.NEED_DATA, h11.PAUSED) and type(ev) is not h11.ConnectionClosed:
                pass
        except h11.RemoteProtocolError:
            pass
        pair.append(c)
    plain, fast = pair
    assert _state(fast) == _state(plain)
    ends = {"eom": h11.EndOfMessage(), "trailers": h11.EndOfMessage(headers=[(b"X-T", b"1")])}
    events: list[Any] = [*datas, *([ends[end]] if end else []), b"after", h11.EndOfMessage()]
    for d in events:
        got: list[Any] = []
        for c, f in ((plain, False), (fast, True)):
            try:
                if isinstance(d, bytes):
                    got.append(h11_fast.send_data(c, d) if f else c.send(h11.Data(data=d)))
                else:
                    got.append(h11_fast.send(c, d) if f else c.send(d))
            except h11.LocalProtocolError as exc:
                got.append(("error", str(exc)))
        assert got[0] == got[1]
        assert _state(fast) == _state(plain)
    cycled: list[Any] = []
    for c, cycle in ((plain, h11.Connection.start_next_cycle), (fast, h11_fast.start_next_cycle)):
        try:
            cycle(c)
            cycled.append(_state(c))
        except h11.LocalProtocolError as exc:
            cycled.append(("error", str(exc), _state(c)))
    assert cycled[0] == cycled[1]


REQUESTS = st.sampled_from([b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
                            b"GET / HTTP/1.0\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                            b"CONNECT x:1 HTTP/1.1\r\nHost: x\r\n\r\n", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n",
                            b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: y\r\nConnection: upgrade\r\n\r\n", b"",
                            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"])
FIELDS = st.lists(st.sampled_from([(b"Content-Length", b"3"), (b"content-length", b"0"), (b"Transfer-Encoding", b"chunked"),
                                   (b"Connection", b"close"), (b"Connection", b"keep-alive"), (b"X-A", b"b"),
                                   (b"Content-Type", b"application/json")]), max_size=4, unique=True)


@settings(max_examples=400, deadline=None)
@given(REQUESTS, st.sampled_from([200, 204, 304, 404, 101]), FIELDS, st.sampled_from([b"1.1", b"1.0"]),
       st.lists(st.sampled_from([b"abc", b"", b"x"]), max_size=2), st.booleans())
def test_send_response_is_send(request: bytes, status: int, fields: list[tuple[bytes, bytes]], version: bytes,
                               datas: list[bytes], eom: bool) -> None:
    try:
        ev = h11.Response(status_code=status, headers=fields, reason=b"OK", http_version=version, _parsed=True)
    except h11.LocalProtocolError:
        return          # no such parsed head (Content-Length and chunked together are h11's parser's refusal too)
    plain, fast = h11.Connection(h11.SERVER), h11.Connection(h11.SERVER)
    for c in (plain, fast):
        c.receive_data(request)
        c.next_event()
    got: list[Any] = []
    for c, send in ((plain, h11.Connection.send), (fast, h11_fast.send_response)):
        try:
            got.append(send(c, ev))
        except h11.LocalProtocolError as exc:
            got.append(("error", str(exc)))
    assert got[0] == got[1]
    assert _state(fast) == _state(plain) and fast._cstate.keep_alive == plain._cstate.keep_alive
    steps: list[Any] = [*datas, *(["eom"] if eom else [])]
    for d in steps:        # the writer and state the head left behave alike
        after: list[Any] = []
        for c in (plain, fast):
            try:
                after.append(c.send(h11.EndOfMessage() if d == "eom" else h11.Data(data=d)))
            except h11.LocalProtocolError as exc:
                after.append(("error", str(exc)))
        assert after[0] == after[1]
        assert _state(fast) == _state(plain)


REQUEST_FIELDS = st.lists(st.sampled_from([(b"Content-Length", b"3"), (b"Transfer-Encoding", b"chunked"), (b"Connection", b"close"),
                                           (b"Connection", b"keep-alive"), (b"Expect", b"100-continue"), (b"Upgrade", b"y"),
                                           (b"X-A", b"b")]), max_size=4, unique=True)
#: what the client side has been through before the head is sent: nothing, a keep-alive cycle,
#: an early answer received (a server may answer before the request), the server's close
BEFORE = st.sampled_from(["", "cycle", "answer", "closed"])


@settings(max_examples=500, deadline=None)
@given(st.sampled_from([b"POST", b"GET", b"HEAD", b"CONNECT"]), REQUEST_FIELDS, st.sampled_from([b"1.1", b"1.0"]), BEFORE,
       st.lists(st.sampled_from([b"abc", b"", b"x"]), max_size=2), st.booleans(),
       st.sampled_from([b"", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", b"HTTP/1.1 100 Continue\r\n\r\n",
                        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nxy", b"HTTP/1.1 101 Switching\r\nUpgrade: y\r\n\r\n"]))
def test_send_request_is_send(method: bytes, fields: list[tuple[bytes, bytes]], version: bytes, before: str, datas: list[bytes],
                              eom: bool, answer: bytes) -> None:
    target = b"x:1" if method == b"CONNECT" else b"/"
    try:
        ev = h11.Request(method=method, target=target, headers=[(b"Host", b"x"), *fields], http_version=version)
    except h11.LocalProtocolError:
        return
    plain, fast = h11.Connection(h11.CLIENT), h11.Connection(h11.CLIENT)
    for c in (plain, fast):
        if before == "cycle":
            c.send(h11.Request(method=b"GET", target=b"/", headers=[(b"Host", b"x")]))
            c.send(h11.EndOfMessage())
            c.receive_data(b"HTTP/1.1 204 No Content\r\n\r\n")
            c.next_event()
            c.next_event()
            c.start_next_cycle()
        elif before in ("answer", "closed"):
            c.receive_data(b"HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n" if before == "answer" else b"")
            try:
                c.next_event()
            except h11.RemoteProtocolError:
                pass
    assert _state(fast) == _state(plain)
    steps: list[Any] = [ev, *[h11.Data(data=d) for d in datas], *([h11.EndOfMessage()] if eom else []), answer]
    for step in steps:
        got: list[Any] = []
        for c, f in ((plain, False), (fast, True)):
            try:
                if isinstance(step, bytes):
                    c.receive_data(step)
                    got.append(_received(c))
                else:
                    got.append(h11_fast.send(c, step) if f else c.send(step))
            except (h11.LocalProtocolError, h11.RemoteProtocolError, RuntimeError, AttributeError) as exc:
                # (RuntimeError: bytes after the peer's close; AttributeError: h11 0.16's message for a
                # Request the server's state refuses formats a tuple's __name__: h11's own, either way)
                got.append(("error", type(exc), str(exc)))
        assert got[0] == got[1]
        assert _state(fast) == _state(plain) and fast.their_http_version == plain.their_http_version


def _received(c: h11.Connection) -> list[Any]:
    """The events ``c`` parses now, up to NEED_DATA, PAUSED or a close."""
    got: list[Any] = []
    for _ in range(10):
        ev = c.next_event()
        got.append(_ev(ev))
        if ev is h11.NEED_DATA or ev is h11.PAUSED or type(ev) is h11.ConnectionClosed:
            break
    return got


REQ = st.sampled_from([b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Length: 5\r\n\r\nhello",
                       b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
                       b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                       b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nConnection: close\r\n\r\n",
                       b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n", b"GET /mcp HTTP/1.0\r\n\r\n",
                       b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Length: 9\r\n\r\nshort",
                       b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n"])
RESP = st.sampled_from([b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n{\"a\"",
                        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{}",
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra",
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XY0\r\n\r\n",
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nbad trailer\r\n\r\n",
                        b"HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=5\r\n\r\n",
                        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close",
                        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
                        b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/mcp/x\r\nContent-Length: 0\r\n\r\n",
                        b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx"])


def _relay_run(exchanges: list[tuple[bytes, bytes, int, bool]], fast: bool) -> list[str]:
    from mcptap.relay.http.events import Upstream
    from mcptap.relay.http.proxy import HttpRelay

    saved = h11_fast.SUPPORTED
    h11_fast.SUPPORTED = fast
    try:
        relay = HttpRelay(Upstream.parse("http://127.0.0.1:9/mcp"), listen_authority="127.0.0.1:8000")
        cid, first = relay.client_opened("127.0.0.1:5555")
        seen = [repr(first)]
        for q, a, cut, eof in exchanges:
            for part in (q[:cut], q[cut:]):
                seen.append(repr(relay.client_data(cid, part)))
            c = relay._conns.get(cid)
            gen = c.gen if c is not None else 0
            for part in (a[:cut], a[cut:], *([b""] if eof else [])):
                seen.append(repr(relay.upstream_data(cid, gen, part)))
        return seen
    finally:
        h11_fast.SUPPORTED = saved


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(REQ, RESP, st.integers(1, 80), st.booleans()), min_size=1, max_size=4))
def test_the_relay_gives_the_same_commands_and_facts_with_and_without_the_fast_paths(
        exchanges: list[tuple[bytes, bytes, int, bool]]) -> None:
    assert _relay_run(exchanges, True) == _relay_run(exchanges, False)


def test_the_fast_paths_are_in_use_with_the_pinned_h11() -> None:
    """With h11 as pinned in pyproject.toml the fast paths are on (a change of the
    internals they read would switch them off silently, and the tests above would
    compare h11 with itself)."""
    assert h11_fast.SUPPORTED
