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
