"""The pure HTTP proxy core: what goes where, byte for byte, for each event."""

from __future__ import annotations

import pytest

from mcptap.relay.http import events as r
from mcptap.relay.http.proxy import HttpRelay

POST = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nContent-Type: application/json\r\n"
        b"Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\n{}")
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"


def of(items, t):
    return [i for i in items if type(i) is t]


def sent_up(items):
    return b"".join(i.data for i in of(items, r.SendUpstream))


def sent_client(items):
    return b"".join(i.data for i in of(items, r.SendClient))


@pytest.fixture
def relay():
    return HttpRelay(r.Upstream.parse("http://10.0.0.7:9000/mcp"))


def test_upstream_url_parsing():
    u = r.Upstream.parse("https://user:pw@Example.org/base")
    assert (u.scheme, u.host, u.port, u.path, u.authority, u.origin) == ("https", "example.org", 443, "/base", "example.org", "https://example.org")
    assert r.Upstream.parse("http://[::1]:8000").authority == "[::1]:8000"
    for bad in ("ftp://x", "http://", "127.0.0.1:80", "http://h:99999"):
        with pytest.raises(ValueError):
            r.Upstream.parse(bad)


def test_request_host_rewritten_hop_by_hop_dropped(relay):
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, POST)
    assert of(items, r.OpenUpstream) == [r.OpenUpstream(cid, 1)]
    assert sent_up(items) == (b"POST /mcp HTTP/1.1\r\nHost: 10.0.0.7:9000\r\nContent-Type: application/json\r\n"
                              b"Content-Length: 2\r\n\r\n{}")
    started = of(items, r.RequestStarted)[0]
    assert started.host_rewritten and (b"Host", b"127.0.0.1:8931") in started.headers
    assert of(items, r.RequestBody)[0].data == b"{}" and of(items, r.RequestEnded)


def test_keep_host(relay):
    relay.keep_host = True
    cid, _ = relay.client_opened()
    assert b"Host: 127.0.0.1:8931\r\n" in sent_up(relay.client_data(cid, POST))


def test_sse_response_streamed_chunk_by_chunk_and_connection_reused(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    items = relay.upstream_data(cid, 1, SSE_HEAD + b"7\r\ndata: 1\r\n")
    assert sent_client(items) == b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7\r\ndata: 1\r\n"
    items = relay.upstream_data(cid, 1, b"2\r\n\n\n\r\n0\r\n\r\n")
    assert sent_client(items) == b"2\r\n\n\n\r\n0\r\n\r\n"
    assert of(items, r.ResponseEnded)[0].how == "complete"
    items = relay.client_data(cid, POST)                 # keep-alive: same upstream connection
    assert not of(items, r.OpenUpstream) and of(items, r.RequestStarted)[0].reused


def test_upstream_close_mid_stream_aborts_client(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    relay.upstream_data(cid, 1, SSE_HEAD + b"7\r\ndata: 1\r\n")
    items = relay.upstream_data(cid, 1, b"")
    assert of(items, r.CloseClient) == [r.CloseClient(cid, True)]
    assert of(items, r.ResponseEnded)[0].how == "upstream_closed"
    assert not sent_client(items)                        # never a fake terminating chunk


def test_connect_failure_gives_502_and_closes(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    items = relay.upstream_failed(cid, 1, "Connection refused")
    out = sent_client(items)
    assert out.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"Connection refused" in out
    end = of(items, r.ResponseEnded)[0]
    assert end.how == "upstream_failed" and end.sent_502 and of(items, r.CloseClient)


def test_garbage_from_upstream_gives_502(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    items = relay.upstream_data(cid, 1, b"SSH-2.0-OpenSSH\r\n\r\n")
    assert sent_client(items).startswith(b"HTTP/1.1 502 ")
    assert of(items, r.ResponseEnded)[0].how == "bad_response"


def test_client_close_during_stream_aborts_upstream(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    relay.upstream_data(cid, 1, SSE_HEAD)
    items = relay.client_data(cid, b"")
    assert of(items, r.CloseUpstream) == [r.CloseUpstream(cid, 1, True)]
    assert of(items, r.ResponseEnded)[0].how == "client_closed"


def test_idle_upstream_close_then_new_connection(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    relay.upstream_data(cid, 1, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    items = relay.upstream_data(cid, 1, b"")
    assert of(items, r.ConnClosed)[0].idle and not of(items, r.CloseClient)
    items = relay.client_data(cid, POST)
    assert of(items, r.OpenUpstream) == [r.OpenUpstream(cid, 2)]
    assert all(i.gen == 2 for i in of(items, r.SendUpstream))
    assert relay.upstream_data(cid, 1, b"HTTP/1.1 200 OK\r\n\r\n") == []     # stale generation ignored


def test_request_lost_on_reused_connection(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    relay.upstream_data(cid, 1, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    relay.client_data(cid, POST)
    items = relay.upstream_data(cid, 1, b"")
    end = of(items, r.ResponseEnded)[0]
    assert end.how == "upstream_closed" and end.reused and not end.response_started
    assert of(items, r.CloseClient) == [r.CloseClient(cid, True)]


def test_bad_request_from_client_answered_400(relay):
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, b"NOT HTTP\r\n\r\n")
    assert sent_client(items).startswith(b"HTTP/1.1 400 Bad Request\r\n") and of(items, r.CloseClient)
    assert not of(items, r.OpenUpstream)


def test_legacy_endpoint_rewritten_only_for_upstream_origin(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:8931\r\nAccept: text/event-stream\r\n\r\n")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    ev = b"event: endpoint\ndata: http://10.0.0.7:9000/messages?s=1\n\n"
    items = relay.upstream_data(cid, 1, head + b"%x\r\n" % len(ev) + ev + b"\r\n")
    new = b"event: endpoint\ndata: http://127.0.0.1:8931/messages?s=1\n\n"
    assert sent_client(items).endswith(b"%x\r\n" % len(new) + new + b"\r\n")
    assert of(items, r.EndpointRewritten) == [r.EndpointRewritten(1, cid, "http://10.0.0.7:9000/messages?s=1", "http://127.0.0.1:8931/messages?s=1")]


def test_pipelined_requests_answered_in_order(relay):
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, POST + POST)
    assert len(of(items, r.RequestStarted)) == 1          # the second waits for the first response
    items = relay.upstream_data(cid, 1, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    assert len(of(items, r.RequestStarted)) == 1 and sent_up(items).startswith(b"POST /mcp")


def test_shutdown_ends_open_exchanges(relay):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    relay.upstream_data(cid, 1, SSE_HEAD)
    items = relay.shutdown()
    assert of(items, r.ResponseEnded)[0].how == "tap_stopped" and relay.open_connections() == 0


def test_international_upstream_host_is_idna_encoded() -> None:
    from mcptap.relay.http.events import Upstream

    assert Upstream.parse("http://exämple.org/mcp").host == "xn--exmple-cua.org"
    import pytest as _pytest

    with _pytest.raises(ValueError, match="international domain name"):
        Upstream.parse("http://" + "ä" * 70 + ".org/")


def test_a_long_parse_error_is_quoted_briefly_in_the_502_and_its_record(relay):
    # h11 quotes the whole refused header line (escaped): up to its 64 KiB head
    # limit of the upstream's bytes would go into the answer and the capture
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    items = relay.upstream_data(cid, 1, b"HTTP/1.1 200 OK\r\nX-Bad" + b"\x1b[31mA" * 1000 + b"\r\n\r\n")
    out = sent_client(items)
    assert out.startswith(b"HTTP/1.1 502 ")
    body = out.split(b"\r\n\r\n", 1)[1]
    assert b"illegal header line" in body and len(body) < 500 and b"more characters)" in body
    assert b"\x1b" not in out                         # escaped by h11's repr, never raw
    end = of(items, r.ResponseEnded)[0]
    assert end.how == "bad_response" and len(end.detail) < 400 and "more characters)" in end.detail


def test_a_long_parse_error_from_the_client_is_quoted_briefly_in_the_400(relay):
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Bad" + b"\x07B" * 3000 + b"\r\n\r\n")
    out = sent_client(items)
    assert out.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert len(out.split(b"\r\n\r\n", 1)[1]) < 500
    closed = of(items, r.ConnClosed)[0]
    assert len(closed.detail) < 400 and "more characters)" in closed.detail


def test_an_illegal_request_line_is_quoted_as_escaped_bytes_not_a_python_repr(relay):
    # h11 says "illegal request line: bytearray(b'POST /mcp\\x1b]0;T\\x07 HTTP/1.1')": the 400 body and the
    # conn_close detail gave that repr; they give the bytes, escaped (escape.unrepr_bytes)
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, b"POST /mcp\x1b]0;T\x07 HTTP/1.1\r\nHost: x\r\n\r\n")
    body = sent_client(items).split(b"\r\n\r\n", 1)[1].decode()
    want = "illegal request line: POST /mcp\\x1b]0;T\\x07 HTTP/1.1"
    assert body == f"mcptap: invalid HTTP request: {want}\n"
    closed = of(items, r.ConnClosed)[0]
    assert closed.detail.endswith(want) and "bytearray" not in closed.detail
    items = relay.client_data(relay.client_opened()[0], b"POST /mcp HTTP/1.1\r\nHo\xffst: x\r\n\r\n")
    assert of(items, r.ConnClosed)[0].detail.endswith("illegal header line: Ho\\xffst: x")


def test_an_http10_request_without_host_is_refused_by_name_not_as_host_none():
    """A loopback tap refuses a request it cannot tell is for a loopback name:
    an HTTP/1.0 request may lack Host. The 403 said "Host None is not a
    loopback name"; it now says there is no Host field."""
    relay = HttpRelay(r.Upstream.parse("http://10.0.0.7:9000/mcp"), allowed_hosts=frozenset({"127.0.0.1", "localhost"}))
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, b"POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    reply = sent_client(items)
    assert reply.startswith(b"HTTP/1.1 403 ") or reply.startswith(b"HTTP/1.0 403 "), reply
    assert b"no Host field (HTTP/1.0)" in reply and b"None" not in reply
    assert [e.how for e in of(items, r.ResponseEnded)] == ["host_rejected"] and not sent_up(items)


@pytest.mark.parametrize(("location", "sent"), [
    # the upstream's own origin (as a Starlette trailing-slash redirect names it): to the tap's origin
    (b"http://10.0.0.7:9000/mcp", b"http://127.0.0.1:8931/mcp"),
    (b"http://10.0.0.7:9000/mcp?x=1#f", b"http://127.0.0.1:8931/mcp?x=1#f"),
    (b"//10.0.0.7:9000/mcp", b"http://127.0.0.1:8931/mcp"),
    # near misses: relative (resolves against the tap already), another origin, another port
    (b"/mcp", b"/mcp"), (b"mcp", b"mcp"), (b"http://10.0.0.8:9000/mcp", b"http://10.0.0.8:9000/mcp"),
    (b"https://10.0.0.7:9000/mcp", b"https://10.0.0.7:9000/mcp"), (b"http://10.0.0.7:9001/mcp", b"http://10.0.0.7:9001/mcp"),
])
def test_a_location_on_the_upstream_origin_points_at_the_tap(relay, location, sent):
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    items = relay.upstream_data(cid, 1, b"HTTP/1.1 307 Temporary Redirect\r\nlocation: " + location + b"\r\ncontent-length: 0\r\n\r\n")
    assert b"\r\nlocation: " + sent + b"\r\n" in sent_client(items)
    rewritten = [(i.what, i.original, i.rewritten) for i in of(items, r.AuthRewritten)]
    assert rewritten == ([("location", location.decode(), sent.decode())] if sent != location else [])
    # with --no-endpoint-rewrite it passes verbatim
    relay.rewrite_endpoint = False
    cid, _ = relay.client_opened()
    relay.client_data(cid, POST)
    items = relay.upstream_data(cid, 1, b"HTTP/1.1 307 Temporary Redirect\r\nlocation: " + location + b"\r\ncontent-length: 0\r\n\r\n")
    assert b"\r\nlocation: " + location + b"\r\n" in sent_client(items)


@pytest.mark.parametrize("clear", [False, True])
def test_a_credential_in_refused_bytes_is_quoted_as_the_records_fields_have_it(clear: bool) -> None:
    # h11 quotes a whole illegal header line or request line: "Authorization: Bearer …" or a target's
    # api_key went into the 400 body and the capture's conn_close detail in clear, where the request
    # record's own fields hold placeholders; under --record-secrets the quote stays in clear as they do
    relay = HttpRelay(r.Upstream.parse("http://10.0.0.7:9000/mcp"), record_secrets=clear)
    for raw, secret in ((b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization Bearer s3cr3tT0kenValue\r\n\r\n", "s3cr3tT0kenValue"),
                        (b"POST /mcp?api_key=k3yK3yK3yValue\x1b HTTP/1.1\r\nHost: x\r\n\r\n", "k3yK3yK3yValue")):
        items = relay.client_data(relay.client_opened()[0], raw)
        detail = of(items, r.ConnClosed)[0].detail
        assert "illegal" in detail, detail
        assert (secret in detail) is clear
        assert clear or "«redacted:hmac:" in detail
