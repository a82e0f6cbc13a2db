"""The HTTP proxy core gives the same result however the peers' bytes are cut
into reads: the bytes forwarded each way (joined), the facts (body facts
joined per exchange) and how each exchange ended. Also the cases where the
relay skips an h11 ``next_event`` call that could only say NEED_DATA: a close
or more bytes arriving behind a complete request are still seen."""

from __future__ import annotations

from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import events as r
from mcptap.relay.http import h11_fast
from mcptap.relay.http.proxy import HttpRelay

BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'
REQUESTS = [
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY),
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8\r\nConnection: X-A\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"%x\r\n%s\r\n0\r\nX-T: 1\r\n\r\n" % (len(BODY), BODY),
    b"GET /mcp HTTP/1.1\r\nHost: localhost:8\r\nAccept: text/event-stream\r\n\r\n",
    b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:8\r\nContent-Length: 0\r\n\r\n",
]
BIG_BODY = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"' + b"z" * 100_000 + b'"}}}'
# request bodies large enough for the relay to take their bytes past h11 (relay/http/passbody.py)
REQUESTS += [
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    % (len(BIG_BODY), BIG_BODY),
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
    % (len(BIG_BODY), BIG_BODY, len(BODY), BODY),
]
EVENT = b"event: endpoint\ndata: http://127.0.0.1:9/messages?s=1\n\n"
BIG = b"data: " + b"0123456789" * 10_000 + b"\n\n"
RESPONSES = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"result\":1}",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\nX-T: 2\r\n\r\n" % (len(EVENT), EVENT, len(EVENT), EVENT),
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    # bodies large enough for the relay to take their bytes past h11 (relay/http/passbody.py)
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(BIG), BIG, len(EVENT), EVENT),
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BIG), BIG),
]


def _relay() -> tuple[HttpRelay, int]:
    relay = HttpRelay(r.Upstream.parse("http://127.0.0.1:9/mcp"), listen_authority="127.0.0.1:8",
                      allowed_hosts=frozenset({"127.0.0.1", "localhost"}))
    cid, _ = relay.client_opened("peer")
    return relay, cid


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    at = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[i:j] for i, j in zip(at, at[1:], strict=False)]


def _messages(role: Any, data: bytes) -> list[Any]:
    """What an h11 peer reads from ``data``: heads, bodies joined, trailers. The
    chunked framing the relay writes follows the reads (one chunk per piece),
    so two cuttings compare equal on this, not on the bytes."""
    conn = h11.Connection(role)
    if role is h11.CLIENT:
        conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
        conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    out: list[Any] = []
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA or ev is h11.PAUSED:
            return out
        if type(ev) is h11.Data and out and type(out[-1]) is h11.Data:
            out[-1] = h11.Data(data=bytes(out[-1].data) + bytes(ev.data))
        elif type(ev) is h11.Data:
            out.append(h11.Data(data=bytes(ev.data)))
        else:
            out.append(ev)
        if type(ev) is h11.EndOfMessage and role is h11.SERVER:
            conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
            conn.send(h11.EndOfMessage())
        if type(ev) is h11.EndOfMessage and conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            if role is h11.CLIENT:
                conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
                conn.send(h11.EndOfMessage())


def _summary(items: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """(what was sent upstream, what was sent to the client, facts with body chunks joined)."""
    up = _messages(h11.SERVER, b"".join(i.data for i in items if type(i) is r.SendUpstream))
    down = _messages(h11.CLIENT, b"".join(i.data for i in items if type(i) is r.SendClient))
    facts: list[Any] = []
    for i in items:
        if type(i) in (r.SendUpstream, r.SendClient):
            continue
        if type(i) in (r.RequestBody, r.ResponseBody):
            if facts and type(facts[-1]) is type(i):
                facts[-1] = type(i)(i.exchange, i.conn, facts[-1].data + i.data)
                continue
        facts.append(i)
    return up, down, facts


def _run(exchanges: list[tuple[int, int]], cuts: list[int]) -> tuple[list[Any], list[Any], list[Any]]:
    relay, cid = _relay()
    items: list[Any] = []
    gen = 0
    for rq, rs in exchanges:
        for piece in _cut(REQUESTS[rq], cuts):
            out = relay.client_data(cid, piece)
            gen = next((i.gen for i in out if type(i) is r.OpenUpstream), gen)
            items += out
        for piece in _cut(RESPONSES[rs], cuts):
            items += relay.upstream_data(cid, gen, piece)
    items += relay.shutdown()
    return _summary(items)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(REQUESTS) - 1), st.integers(0, len(RESPONSES) - 1)), min_size=1, max_size=4),
       st.lists(st.one_of(st.integers(0, 400), st.integers(0, 100_400)), max_size=8))
def test_any_cutting_of_the_reads_gives_the_same_result(exchanges: list[tuple[int, int]], cuts: list[int]) -> None:
    whole = _run(exchanges, [])
    assert _run(exchanges, cuts) == whole
    # every exchange forwarded and completed
    up, down, facts = whole
    ended = [f for f in facts if type(f) is r.ResponseEnded]
    assert [f.how for f in ended] == ["complete"] * len(exchanges)
    assert sum(type(e) is h11.Request for e in up) == len(exchanges)
    assert sum(type(e) is h11.Response for e in down) == len(exchanges)


def test_client_close_behind_a_complete_request_is_seen() -> None:
    relay, cid = _relay()
    relay.client_data(cid, REQUESTS[0])
    items = relay.client_data(cid, b"")
    assert [(type(i), getattr(i, "how", None)) for i in items if type(i) in (r.ResponseEnded, r.CloseClient)] == [
        (r.ResponseEnded, "client_closed"), (r.CloseClient, None)]


def test_bytes_behind_a_connection_close_request_are_refused() -> None:
    relay, cid = _relay()
    req = REQUESTS[0].replace(b"Host:", b"Connection: close\r\nHost:")
    items = relay.client_data(cid, req + b"X")
    ended = [i for i in items if type(i) is r.ResponseEnded]
    assert ended and ended[0].how == "client_closed" and "invalid HTTP" in ended[0].detail
    assert b"400 Bad Request" in b"".join(i.data for i in items if type(i) is r.SendClient)


def test_pipelined_request_behind_an_exchange_is_relayed_after_it() -> None:
    relay, cid = _relay()
    items = relay.client_data(cid, REQUESTS[0] + REQUESTS[3])
    assert sum(type(i) is r.RequestStarted for i in items) == 1      # the second waits for the first response
    items = relay.upstream_data(cid, 1, RESPONSES[0])
    assert [i.method for i in items if type(i) is r.RequestStarted] == ["DELETE"]
    assert b"DELETE /mcp HTTP/1.1\r\n" in b"".join(i.data for i in items if type(i) is r.SendUpstream)


def test_a_large_body_is_forwarded_as_the_object_read() -> None:
    """Inside a large chunk (or Content-Length body) the relay takes the read's bytes
    past h11: the body fact and the forwarded piece are the very object read (no copy),
    and the bytes the client gets still parse as the same response."""
    relay, cid = _relay()
    relay.client_data(cid, REQUESTS[2])
    head, rest = RESPONSES[4][:200], RESPONSES[4][200:]
    items = relay.upstream_data(cid, 1, head)
    piece = rest[:50_000]
    out = relay.upstream_data(cid, 1, piece)
    assert [i.data for i in out if type(i) is r.ResponseBody] == [piece]
    assert next(i.data for i in out if type(i) is r.ResponseBody) is piece
    assert any(i.data is piece for i in out if type(i) is r.SendClient)
    items += out + relay.upstream_data(cid, 1, rest[50_000:])
    down = _messages(h11.CLIENT, b"".join(i.data for i in items if type(i) is r.SendClient))
    assert [type(e) for e in down] == [h11.Response, h11.Data, h11.EndOfMessage]
    assert bytes(down[1].data) == BIG + EVENT.replace(b"127.0.0.1:9", b"localhost:8")      # endpoint rewritten
    assert [i.how for i in items if type(i) is r.ResponseEnded] == ["complete"]


def _raw_run(response: bytes, cuts: list[int]) -> tuple[list[Any], list[Any], list[Any]]:
    """Exchange REQUESTS[2] answered by ``response`` (cut as ``cuts``): ``_summary``."""
    relay, cid = _relay()
    items = relay.client_data(cid, REQUESTS[2])
    gen = next(i.gen for i in items if type(i) is r.OpenUpstream)
    for piece in _cut(response, cuts):
        items += relay.upstream_data(cid, gen, piece)
    items += relay.shutdown()
    return _summary(items)


#: large responses whose framing breaks where the relay has just taken a body past h11
DAMAGED = [
    # a chunk not followed by its CRLF (h11 0.16 refuses it: CVE-2025-43859)
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"%x\r\n%sXY0\r\n\r\n" % (len(BIG), BIG),
    # a chunk longer than its size line says, then garbage for the next size line
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"%x\r\n%s\r\nzz\r\n" % (len(BIG) - 7, BIG),
    # more body bytes than Content-Length, then the upstream closes
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%sEXTRA" % (len(BIG) - 3, BIG),
    # a body cut short by the upstream closing
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BIG) + 10, BIG),
]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(DAMAGED) - 1), st.lists(st.one_of(st.integers(0, 400), st.integers(0, 100_400)), max_size=6))
def test_damaged_framing_after_a_passed_body_ends_as_through_h11(which: int, cuts: list[int]) -> None:
    """Whatever the upstream's framing does right after a body the relay took
    past h11 (passbody.py), the client gets the bytes and the capture the facts
    that h11 parsing every byte gives (the shortcut off: PASS_FROM beyond any read)."""
    from mcptap.relay.http import conn as conn_mod
    from mcptap.relay.http import conn_upstream as up_mod

    response = DAMAGED[which]
    head = response.index(b"\r\n\r\n") + 4
    # the head alone, then a few bytes into the body: the next read starts inside it (a chunk's data)
    cuts = [head, response.index(b"data: ", head) + 100, *cuts]
    fast = _raw_run(response, cuts)
    saved = conn_mod.PASS_FROM
    conn_mod.PASS_FROM = up_mod.PASS_FROM = 1 << 40
    try:
        slow = _raw_run(response, cuts)
    finally:
        conn_mod.PASS_FROM = up_mod.PASS_FROM = saved
    assert fast == slow


def test_passbody_is_in_use_with_the_pinned_h11() -> None:
    """The shortcut is on with the h11 pyproject.toml pins (a change of h11's
    reader state would switch it off silently and bring the copies back)."""
    from mcptap.relay.http import passbody

    assert passbody.SUPPORTED


def test_no_h11_parse_per_sse_event_read_whole(monkeypatch):
    """A read holding one whole chunk: the relay takes it past h11's parser
    (``h11_fast.whole_chunk``: not even the call that would discard the chunk's
    CRLF, which could only say NEED_DATA), and the stream still ends as h11 says."""
    relay, cid = _relay()
    relay.client_data(cid, REQUESTS[2])
    gen = relay._conns[cid].gen
    relay.upstream_data(cid, gen, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    calls = []
    real, fast = h11.Connection.next_event, h11_fast.next_body

    def counting(self: h11.Connection) -> Any:
        ev = real(self)
        calls.append(ev if ev is h11.NEED_DATA or ev is h11.PAUSED else type(ev))
        return ev

    def counting_fast(conn: h11.Connection) -> Any:
        ev = fast(conn)
        if ev is not None:      # an event taken past next_event (h11_fast): a call all the same
            calls.append(type(ev))
        return ev

    monkeypatch.setattr(h11.Connection, "next_event", counting)
    monkeypatch.setattr(h11_fast, "next_body", counting_fast)
    ev = b'data: {"jsonrpc":"2.0","method":"notifications/message"}\n\n'
    for _ in range(3):
        items = relay.upstream_data(cid, gen, b"%x\r\n%s\r\n" % (len(ev), ev))
        assert [i.data for i in items if type(i) is r.ResponseBody] == [ev]
        assert b"".join(i.data for i in items if type(i) is r.SendClient) == b"%x\r\n%s\r\n" % (len(ev), ev)
    assert calls == []
    items = relay.upstream_data(cid, gen, b"0\r\n\r\n")
    assert [(i.how, i.reused) for i in items if type(i) is r.ResponseEnded] == [("complete", False)]
    assert b"".join(i.data for i in items if type(i) is r.SendClient) == b"0\r\n\r\n"


def test_a_large_request_body_is_forwarded_as_the_object_read() -> None:
    """The same for a request body: the body fact and the piece sent upstream are the
    object the client read produced, and the upstream still reads the same request."""
    relay, cid = _relay()
    req = REQUESTS[5]
    items = relay.client_data(cid, req[:300])
    piece = req[300:60_300]
    out = relay.client_data(cid, piece)
    assert [i.data for i in out if type(i) is r.RequestBody] == [piece]
    assert next(i.data for i in out if type(i) is r.RequestBody) is piece
    assert any(i.data is piece for i in out if type(i) is r.SendUpstream)
    items += out + relay.client_data(cid, req[60_300:])
    up = _messages(h11.SERVER, b"".join(i.data for i in items if type(i) is r.SendUpstream))
    assert [type(e) for e in up] == [h11.Request, h11.Data, h11.EndOfMessage]
    assert bytes(up[1].data) == BIG_BODY + BODY
    assert sum(type(i) is r.RequestEnded for i in items) == 1
