"""The relay's shortcuts for response heads that name no URL and no fronted
field (the common round trip) give what the field-by-field paths they skip
give: ``rewrite.location`` against ``rewrite._location``, and
``AuthExchange.response_head`` against itself with the shortcut off."""

from __future__ import annotations

from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.relay.http import conn_auth
from mcptap.relay.http.auth import AuthFront
from mcptap.relay.http.conn_auth import AuthExchange
from mcptap.relay.http.events import Upstream
from mcptap.relay.http.rewrite import _location, location

UP = Upstream.parse("http://127.0.0.1:9/mcp")
NAMES = [b"Content-Type", b"Location", b"LINK", b"Refresh", b"content-location", b"Mcp-Session-Id", b"WWW-Authenticate",
         b"Set-Cookie", b"set-cookie", b"x-other", b"Cache-Control", b"Content-Encoding", b"www-authenticate"]
VALUES = [b"http://127.0.0.1:9/mcp/x", b"//127.0.0.1:9/a", b"/relative", b"application/json", b'Bearer resource_metadata='
          b'"http://127.0.0.1:9/.well-known/oauth-protected-resource"', b"0; url=http://127.0.0.1:9/r",
          b"<http://127.0.0.1:9/n>; rel=next", b"sid=1; Path=/", b"gzip", b"", b"http://elsewhere.example/x",
          b'Bearer resource_metadata="http://127.0.0.2:7/.well-known/oauth-protected-resource"', b"http://127.0.0.2:7/authorize",
          b"http://127.0.0.3:7/token", b"/login"]
HEADERS = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([200, 201, 301, 302, 404]), HEADERS)
def test_location_is_its_field_by_field_path(status: int, headers: list[tuple[bytes, bytes]]) -> None:
    assert location(status, headers, UP, "127.0.0.1:8000") == _location(status, headers, UP, "127.0.0.1:8000")


def _head(status: int, headers: list[tuple[bytes, bytes]], target: bytes) -> tuple[Any, ...]:
    front = AuthFront(UP, "http://127.0.0.1:8000")
    front.www_authenticate(b'Bearer resource_metadata="http://127.0.0.3:7/.well-known/oauth-protected-resource"')
    front.take_notes()          # an authorization server fronted by an earlier exchange
    x = AuthExchange.plan(front, 1, 1, target, [(b"Host", b"127.0.0.1:8000")], "/mcp")
    out: list[Any] = []
    got = x.response_head(h11.Response(status_code=status, headers=[], reason=b"R"), headers, out)
    heads = [(e.status_code, e.reason, list(e.headers.raw_items())) for e in got]
    held = x.resp_head and (x.resp_head.status_code, list(x.resp_head.headers.raw_items()))
    return heads, out, held, list(front.origins), sorted(front.prm_paths)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([200, 401, 302]), HEADERS, st.sampled_from([b"/mcp", b"/.well-known/oauth-protected-resource",
                                                                   b"/.mcptap/o/1/x"]))
def test_response_head_is_its_field_by_field_path(status: int, headers: list[tuple[bytes, bytes]], target: bytes) -> None:
    fast = _head(status, headers, target)
    saved = conn_auth._FRONTED
    conn_auth._FRONTED = frozenset(n.lower() for n in NAMES)         # the shortcut never applies
    try:
        slow = _head(status, headers, target)
    finally:
        conn_auth._FRONTED = saved
    assert fast == slow


TARGETS = st.sampled_from([b"/mcp", b"/", b"*", b"mcp", b"http://127.0.0.1:8000/mcp", b"HTTPS://h/x", b"//x", b"/a?b=c",
                           b"ftp://h/x", b"http://u@h/", b"x:y"]) | st.binary(max_size=8)
HOSTS = st.sampled_from([b"127.0.0.1:8000", b"localhost", b"[::1]:80", b"bad host", b"u@h", b"h:", b"%zz"]) | st.binary(max_size=6)


@settings(max_examples=400, deadline=None)
@given(TARGETS, HOSTS)
def test_request_checks_are_their_regex_paths(target: bytes, host: bytes) -> None:
    """``request_problem`` (Host values remembered once valid, origin-form targets never matched as
    absolute) and ``origin_form`` give what the regular expressions alone give."""
    from mcptap.relay.http import guard

    raw = [(b"Host", host)]
    first = guard.request_problem(raw, b"1.1", target, b"POST")
    assert guard.request_problem(raw, b"1.1", target, b"POST") == first       # now with the Host remembered
    guard._VALID_HOSTS.clear()
    assert guard.request_problem(raw, b"1.1", target, b"POST") == first
    m = guard._ABSOLUTE.match(target)
    rest = target[m.end():].partition(b"#")[0] if m else b""
    assert guard.origin_form(target) == (target if m is None else rest if rest.startswith(b"/") else b"/" + rest)
    if m is None:
        return
    assert first is not None or guard._HOST.fullmatch(host) is not None


FIELDS = st.lists(st.tuples(st.sampled_from([b"Content-Type", b"X-A", b"connection", b"Transfer-Encoding", b"Content-Length",
                                             b"Set-Cookie"]),
                            st.sampled_from([b"a", b"close", b"chunked", b"5", b"text/plain", b""])), max_size=4)


def _sent(ev: Any, request_version: bytes) -> tuple[bytes, Any]:
    server = h11.Connection(h11.SERVER)
    server.receive_data(b"GET / HTTP/%s\r\nHost: h\r\n\r\n" % request_version)
    server.next_event()
    try:
        return server.send(ev) or b"", server.our_state
    except h11.LocalProtocolError as exc:
        return b"", type(exc)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([b"1.1", b"1.0"]), st.sampled_from([200, 204, 404]), FIELDS, FIELDS, st.booleans(),
       st.sampled_from([b"1.1", b"1.0"]))
def test_a_passed_response_head_is_the_one_built_again(version: bytes, status: int, fields: list[tuple[bytes, bytes]],
                                                       other: list[tuple[bytes, bytes]], same: bool, request_version: bytes) -> None:
    """``heads.passed`` gives the client the bytes (and h11 the state) that building the head again gives."""
    from mcptap.relay.http import heads

    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
    client.send(h11.EndOfMessage())
    head = b"HTTP/%s %d R\r\n" % (version, status) + b"".join(n + b": " + v + b"\r\n" for n, v in fields) + b"\r\n"
    client.receive_data(head)
    try:
        ev = client.next_event()
    except h11.RemoteProtocolError:
        return
    if type(ev) is not h11.Response:
        return
    headers = list(ev.headers.raw_items()) if same else other
    try:
        built = heads.response(ev.status_code, ev.reason, headers)
    except h11.LocalProtocolError:
        return
    assert _sent(heads.passed(ev, headers), request_version) == _sent(built, request_version)
