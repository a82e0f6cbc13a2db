"""OAuth fronting in the HTTP relay core (``relay/http/auth.py``, ``conn_auth.py``):
routing, URL mapping both ways, metadata rewriting, request ``resource`` mapping,
and the bounds that keep the tap from being an open proxy. Sans-IO: bytes in,
commands out (the real-peer flow is tests/e2e/test_oauth_tap.py)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.relay.http import auth as oauth
from mcptap.relay.http import events as r
from mcptap.relay.http.auth import AuthFront
from mcptap.relay.http.observe_auth import response_findings, scrub_body, scrub_query
from mcptap.relay.http.proxy import HttpRelay

UP = r.Upstream.parse("http://127.0.0.1:9000/mcp")
TAP = "http://127.0.0.1:7000"


def front() -> AuthFront:
    return AuthFront(UP, TAP)


def test_upstream_urls_map_to_the_tap_and_back() -> None:
    f = front()
    assert f.tap_resource == "http://127.0.0.1:7000/mcp"
    assert f.front("http://127.0.0.1:9000/mcp", learn=False) == "http://127.0.0.1:7000/mcp"
    assert f.unfront("http://127.0.0.1:7000/mcp") == "http://127.0.0.1:9000/mcp"
    # an origin the upstream never named is not fronted unless learned
    assert f.front("http://127.0.0.1:9100/", learn=False) == "http://127.0.0.1:9100/"
    assert f.front("http://127.0.0.1:9100/tenant", learn=True) == "http://127.0.0.1:7000/.mcptap/o/1/tenant"
    assert f.unfront("http://127.0.0.1:7000/.mcptap/o/1/tenant") == "http://127.0.0.1:9100/tenant"


def test_routes_well_known_forms_to_the_fronted_origin() -> None:
    f = front()
    f.front("http://127.0.0.1:9100/tenant", learn=True)
    assert f.route(b"/mcp") == oauth.Route(0, b"/mcp", oauth.MCP)
    assert f.route(b"/.well-known/oauth-protected-resource/mcp").kind == oauth.PRM
    # RFC 8414 §3.1: well-known segment before the issuer path
    r1 = f.route(b"/.well-known/oauth-authorization-server/.mcptap/o/1/tenant")
    assert r1 == oauth.Route(1, b"/.well-known/oauth-authorization-server/tenant", oauth.AS_META)
    # OpenID Discovery: appended after the issuer path
    r2 = f.route(b"/.mcptap/o/1/tenant/.well-known/openid-configuration")
    assert r2 == oauth.Route(1, b"/tenant/.well-known/openid-configuration", oauth.AS_META)
    assert f.route(b"/.mcptap/o/1/token?x=1") == oauth.Route(1, b"/token?x=1", oauth.AS)
    # never named by the upstream: refused, not proxied anywhere
    assert f.route(b"/.mcptap/o/2/token").kind == oauth.UNKNOWN_FRONT
    assert f.route(b"/.mcptap/o/x/token").kind == oauth.UNKNOWN_FRONT
    assert f.route(b"/.mcptap/o/0/token").kind == oauth.UNKNOWN_FRONT


def test_www_authenticate_and_prm_document() -> None:
    f = front()
    v = b'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp"'
    assert f.www_authenticate(v) == v.replace(b"127.0.0.1:9000", b"127.0.0.1:7000")
    doc = {"resource": "http://127.0.0.1:9000/mcp", "authorization_servers": ["http://127.0.0.1:9100/"], "scopes_supported": ["a"]}
    body, notes = f.prm_document(orjson.dumps(doc), "http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp")
    assert notes == []
    assert orjson.loads(body) == {"resource": "http://127.0.0.1:7000/mcp",
                                  "authorization_servers": ["http://127.0.0.1:7000/.mcptap/o/1/"], "scopes_supported": ["a"]}


def test_prm_resource_not_matching_its_url_is_a_finding() -> None:
    f = front()
    doc = {"resource": "http://127.0.0.1:9000/other", "authorization_servers": []}
    _, notes = f.prm_document(orjson.dumps(doc), "http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp")
    assert [c for c, _ in notes] == ["auth.resource_mismatch"]
    # near miss: the root document naming the origin is fine
    _, notes = f.prm_document(orjson.dumps({"resource": "http://127.0.0.1:9000"}), "http://127.0.0.1:9000/.well-known/oauth-protected-resource")
    assert notes == []


@pytest.mark.parametrize("body", [b"<html>", b"[1,2]", b"\xff\xfe"])
def test_metadata_that_does_not_parse_is_passed_on_with_a_finding(body: bytes) -> None:
    f = front()
    out, notes = f.prm_document(body, "http://127.0.0.1:9000/.well-known/oauth-protected-resource")
    assert out == body and [c for c, _ in notes] == ["auth.metadata_invalid"]
    out, notes = f.as_document(body)
    assert out == body and [c for c, _ in notes] == ["auth.metadata_invalid"]


def test_as_metadata_endpoints_on_other_hosts_are_learned() -> None:
    f = front()
    doc = {"issuer": "http://127.0.0.1:9100", "token_endpoint": "http://127.0.0.2:9200/oauth/token",
           "authorization_endpoint": "http://127.0.0.1:9100/authorize", "response_types_supported": ["code"]}
    body, notes = f.as_document(orjson.dumps(doc))
    got = orjson.loads(body)
    assert notes == []
    assert got["issuer"] == "http://127.0.0.1:7000/.mcptap/o/1"
    assert got["token_endpoint"] == "http://127.0.0.1:7000/.mcptap/o/2/oauth/token"
    assert got["authorization_endpoint"] == "http://127.0.0.1:7000/.mcptap/o/1/authorize"


def test_loopback_upstream_never_fronts_a_remote_host() -> None:
    f = front()
    assert f.front("https://auth.example.com/", learn=True) == "https://auth.example.com/"
    assert [c for c, _ in f.take_notes()] == ["auth.metadata_host_refused"]
    assert len(f.origins) == 1


def test_resource_parameter_is_mapped_back_only_when_it_names_the_tap() -> None:
    f = front()
    t = b"/authorize?client_id=c&resource=http%3A%2F%2F127.0.0.1%3A7000%2Fmcp&state=s"
    assert f.request_target(t) == b"/authorize?client_id=c&resource=http%3A%2F%2F127.0.0.1%3A9000%2Fmcp&state=s"
    other = b"/authorize?resource=https%3A%2F%2Felsewhere%2Fmcp"
    assert f.request_target(other) == other
    form = b"grant_type=authorization_code&code=abc&resource=http%3A%2F%2F127.0.0.1%3A7000%2Fmcp"
    assert f.request_form(form) == b"grant_type=authorization_code&code=abc&resource=http%3A%2F%2F127.0.0.1%3A9000%2Fmcp"


def test_iss_of_an_authorization_redirect_is_fronted() -> None:
    f = front()
    f.front("http://127.0.0.1:9100", learn=True)
    loc = b"http://localhost:3030/callback?code=xyz&state=s&iss=http%3A%2F%2F127.0.0.1%3A9100"
    assert f.location(loc) == b"http://localhost:3030/callback?code=xyz&state=s&iss=http%3A%2F%2F127.0.0.1%3A7000%2F.mcptap%2Fo%2F1"


def _relay_roundtrip(relay: HttpRelay, request: bytes, response: bytes) -> tuple[list, bytes, bytes]:
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, request)
    opens = [i for i in items if isinstance(i, r.OpenUpstream)]
    gen = opens[-1].gen if opens else 1
    sent_up = b"".join(i.data for i in items if isinstance(i, r.SendUpstream))
    items2 = relay.upstream_data(cid, gen, response)
    to_client = b"".join(i.data for i in items2 if isinstance(i, r.SendClient))
    return items + items2, sent_up, to_client


def test_relay_rewrites_a_prm_document_and_fixes_its_length() -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    doc = orjson.dumps({"resource": "http://127.0.0.1:9000/mcp", "authorization_servers": ["http://127.0.0.1:9100"]})
    resp = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(doc), doc)
    items, up, down = _relay_roundtrip(relay, b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n", resp)
    head, _, body = down.partition(b"\r\n\r\n")
    assert orjson.loads(body)["resource"] == "http://127.0.0.1:7000/mcp"
    assert b"content-length: %d" % len(body) in head.lower()
    started = [i for i in items if isinstance(i, r.RequestStarted)]
    assert started[0].auth == oauth.PRM
    assert any(isinstance(i, r.AuthRewritten) and i.what == "prm" for i in items)


def test_relay_sends_a_token_request_to_the_fronted_origin_with_resource_mapped_back() -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    assert relay.auth is not None
    relay.auth.front("http://127.0.0.1:9100", learn=True)
    body = b"grant_type=authorization_code&code=abc&resource=http%3A%2F%2F127.0.0.1%3A7000%2Fmcp"
    req = (b"POST /.mcptap/o/1/token HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n"
           b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, req)
    opens = [i for i in items if isinstance(i, r.OpenUpstream)]
    assert opens and opens[0].upstream == r.Upstream("http", "127.0.0.1", 9100, "/")
    up = b"".join(i.data for i in items if isinstance(i, r.SendUpstream))
    head, _, sent = up.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /token HTTP/1.1") and b"Host: 127.0.0.1:9100" in head
    assert sent == body.replace(b"7000", b"9000")
    assert b"Content-Length: %d" % len(sent) in head


def test_relay_refuses_an_unknown_front_with_404_and_opens_nothing() -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    cid, _ = relay.client_opened()
    items = relay.client_data(cid, b"GET /.mcptap/o/5/x HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n")
    assert not any(isinstance(i, (r.OpenUpstream, r.SendUpstream)) for i in items)
    assert b"404" in b"".join(i.data for i in items if isinstance(i, r.SendClient))


def test_no_auth_rewrite_forwards_verbatim() -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000", auth_rewrite=False)
    doc = orjson.dumps({"resource": "http://127.0.0.1:9000/mcp"})
    resp = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(doc), doc)
    _, _, down = _relay_roundtrip(relay, b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n", resp)
    assert down.endswith(doc)


def test_challenge_findings() -> None:
    assert [f.code for f in response_findings(401, [])] == ["auth.challenge_missing"]
    assert response_findings(401, [(b"WWW-Authenticate", b'Bearer resource_metadata="x"')]) == []
    assert [f.code for f in response_findings(403, [(b"WWW-Authenticate", b'Bearer error="insufficient_scope"')])] == ["auth.scope_missing"]
    assert response_findings(403, [(b"WWW-Authenticate", b'Bearer error="insufficient_scope", scope="a b"')]) == []
    assert response_findings(200, []) == []


def test_credentials_in_oauth_bodies_become_placeholders() -> None:
    form = "grant_type=authorization_code&code=SECRETCODE&code_verifier=VERIFIER&client_id=abc&resource=x"
    out = scrub_query(form)
    assert "SECRETCODE" not in out and "VERIFIER" not in out and "client_id=abc" in out and "resource=x" in out
    js = orjson.dumps({"access_token": "AT", "refresh_token": "RT", "token_endpoint": "http://x/token",
                       "nested": {"client_secret": "CS"}, "token_type": "Bearer"})
    got = scrub_body(js, [(b"content-type", b"application/json")]).decode()
    assert all(s not in got for s in ('"AT"', '"RT"', '"CS"'))
    assert "http://x/token" in got and "Bearer" in got


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    f = front()
    f.front("http://127.0.0.1:9100", learn=True)
    f.route(data)
    f.request_target(data)
    f.request_form(data)
    f.www_authenticate(data)
    f.location(data)
    f.location(data, 1)
    f.set_cookie(data, 1, data.decode("latin-1"))
    f.referred_from(data)
    f.prm_document(data, "http://127.0.0.1:9000/.well-known/oauth-protected-resource")
    f.as_document(data)
    scrub_body(data, [(b"content-type", b"application/x-www-form-urlencoded")])


def test_metadata_at_a_custom_path_named_by_the_challenge_is_rewritten_too() -> None:
    # RFC 9728 §5.1: resource_metadata may name any URL (conformance auth/metadata-var3)
    f = front()
    f.www_authenticate(b'Bearer resource_metadata="http://127.0.0.1:9000/custom/prm.json"')
    assert f.route(b"/custom/prm.json").kind == oauth.PRM
    assert f.route(b"/custom/other.json").kind == oauth.MCP


def test_show_marks_the_auth_flow_in_the_timeline() -> None:
    from mcptap.show.render import timeline_line
    req = {"type": "http", "seq": 6, "t_us": 1000, "event": "request", "auth": "prm", "method": "GET",
           "target": "/.well-known/oauth-protected-resource/mcp"}
    assert "auth  ▸ resource metadata: GET /.well-known/oauth-protected-resource/mcp" in timeline_line(req, None)
    rw = {"type": "http", "seq": 7, "t_us": 1000, "event": "auth_rewrite", "auth": "as", "what": "form"}
    assert "resource mapped back to the upstream" in timeline_line(rw, None)
    plain_http = {"type": "http", "seq": 8, "t_us": 1000, "event": "request", "method": "POST", "target": "/mcp"}
    assert "auth" not in timeline_line(plain_http, None)


def test_a_redirect_to_itself_is_a_finding_not_a_hang() -> None:
    from mcptap.relay.http.observe_auth import redirect_findings
    loop = redirect_findings("/authorize?x=1", 302, [(b"Location", b"/authorize?x=1")])
    assert [f.code for f in loop] == ["auth.redirect_loop"]
    absolute = redirect_findings("/authorize?x=1", 307, [(b"Location", b"http://127.0.0.1:9100/authorize?x=1")])
    assert [f.code for f in absolute] == ["auth.redirect_loop"]
    # near misses: the redirect to the client's callback, or another page
    assert redirect_findings("/authorize?x=1", 302, [(b"Location", b"http://localhost:3000/callback?code=c")]) == []
    assert redirect_findings("/authorize?x=1", 302, [(b"Location", b"/login?next=%2Fauthorize")]) == []
    assert redirect_findings("/authorize?x=1", 200, [(b"Location", b"/authorize?x=1")]) == []


def test_notes_taken_from_one_host_view_are_not_lost_by_another() -> None:
    # `at()` views share the notes list with the tap's front: taking the notes must
    # empty that shared list, not swap in a new one only this view sees (a refusal
    # noted through a view after the swap would never be reported, or twice).
    f = front()
    view = f.at("localhost:7000")
    view.front("http://203.0.113.9/as", learn=True)
    assert [c for c, _ in f.take_notes()] == ["auth.metadata_host_refused"]
    view.front("http://203.0.113.10/as", learn=True)
    assert [c for c, _ in f.take_notes()] == ["auth.metadata_host_refused"]
    assert view.take_notes() == [] and f.take_notes() == []



AS_ORIGIN = "http://127.0.0.1:9100"


@pytest.mark.parametrize(("location", "origin", "sent"), [
    # a fronted server's own URLs stay under its prefix (else the browser takes them to the MCP upstream)
    (b"/login?req=abc", 1, b"/.mcptap/o/1/login?req=abc"),
    (b"http://127.0.0.1:9100/login?req=abc", 1, b"http://127.0.0.1:7000/.mcptap/o/1/login?req=abc"),
    (b"//127.0.0.1:9100/login", 1, b"http://127.0.0.1:7000/.mcptap/o/1/login"),
    (b"http://127.0.0.1:9100/login", 0, b"http://127.0.0.1:7000/.mcptap/o/1/login"),
    # near misses: relative to the page (already under the prefix), the upstream's own root-relative path,
    # the client's redirect_uri, another unfronted origin; the upstream's origin is rewrite.location's
    (b"login?req=abc", 1, b"login?req=abc"), (b"/mcp", 0, b"/mcp"),
    (b"http://localhost:3030/callback?code=c&state=s", 1, b"http://localhost:3030/callback?code=c&state=s"),
    (b"http://127.0.0.1:9200/x", 1, b"http://127.0.0.1:9200/x"), (b"http://127.0.0.1:9000/mcp", 0, b"http://127.0.0.1:9000/mcp"),
])
def test_a_fronted_servers_location_stays_under_its_prefix(location: bytes, origin: int, sent: bytes) -> None:
    f = front()
    f.front(AS_ORIGIN, learn=True)
    assert f.location(location, origin) == sent


def test_iss_is_fronted_together_with_a_moved_location() -> None:
    f = front()
    f.front(AS_ORIGIN, learn=True)
    got = f.location(b"/cb?code=x&iss=http%3A%2F%2F127.0.0.1%3A9100", 1)
    assert got == b"/.mcptap/o/1/cb?code=x&iss=http%3A%2F%2F127.0.0.1%3A7000%2F.mcptap%2Fo%2F1"


@pytest.mark.parametrize(("cookie", "path", "sent"), [
    (b"as_session=S; Path=/; HttpOnly", "/authorize", b"mcptap.o1.as_session=S; HttpOnly; Path=/.mcptap/o/1"),
    (b"s=S; path=/oauth; Secure", "/authorize", b"mcptap.o1.s=S; Secure; Path=/.mcptap/o/1/oauth"),
    # no Path: the default path of the server's request path (RFC 6265 §5.1.4), under the prefix
    (b"s=S", "/oauth/authorize", b"mcptap.o1.s=S; Path=/.mcptap/o/1/oauth"),
    (b"s=S; Max-Age=60", "/authorize", b"mcptap.o1.s=S; Max-Age=60; Path=/.mcptap/o/1"),
    # an invalid Path is the default path (§5.2.4); Domain goes: a host-only cookie of the tap's host
    (b"s=S; Path=x; Domain=127.0.0.1", "/a/b", b"mcptap.o1.s=S; Path=/.mcptap/o/1/a"),
    (b"s=S; Domain=.example.com; Path=/", "/", b"mcptap.o1.s=S; Path=/.mcptap/o/1"),
    # __Host- needs Path=/ (browsers refused it scoped): tagged, the name no longer starts with __Host-
    (b"__Host-sid=S; Path=/; Secure; HttpOnly", "/authorize", b"mcptap.o1.__Host-sid=S; Secure; HttpOnly; Path=/.mcptap/o/1"),
    (b"__Secure-sid=S; Secure", "/authorize", b"mcptap.o1.__Secure-sid=S; Secure; Path=/.mcptap/o/1"),
    (b"nameless", "/authorize", b"mcptap.o1.=nameless; Path=/.mcptap/o/1"),
    (b"s=a=b; Path=/", "/authorize", b"mcptap.o1.s=a=b; Path=/.mcptap/o/1"),
])
def test_a_fronted_servers_cookies_are_scoped_to_its_prefix(cookie: bytes, path: str, sent: bytes) -> None:
    f = front()
    f.front(AS_ORIGIN, learn=True)
    assert f.set_cookie(cookie, 1, path) == sent


def test_relay_keeps_an_authorize_redirect_and_its_cookie_on_the_fronted_server() -> None:
    """The tester's case: the fronted AS answers /authorize with 302 /login and a
    Path=/ session cookie. Passed on as is, the browser went to /login on the MCP
    upstream with the AS's cookie."""
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    assert relay.auth is not None
    relay.auth.front(AS_ORIGIN, learn=True)
    resp = (b"HTTP/1.1 302 Found\r\nLocation: /login?req=abc\r\nSet-Cookie: as_session=SECRET; Path=/; HttpOnly\r\n"
            b"Content-Length: 0\r\n\r\n")
    items, up, down = _relay_roundtrip(relay, b"GET /.mcptap/o/1/authorize?client_id=c HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n", resp)
    assert up.startswith(b"GET /authorize?client_id=c ")
    assert b"\r\nLocation: /.mcptap/o/1/login?req=abc\r\n" in down
    assert b"\r\nSet-Cookie: mcptap.o1.as_session=SECRET; HttpOnly; Path=/.mcptap/o/1\r\n" in down
    assert {i.what for i in items if isinstance(i, r.AuthRewritten)} == {"location", "set-cookie"}
    # near miss: the MCP upstream's own cookie and relative Location pass as they are
    relay2 = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    _, _, down = _relay_roundtrip(relay2, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n",
                                  b"HTTP/1.1 302 Found\r\nLocation: /login\r\nSet-Cookie: s=1; Path=/\r\nContent-Length: 0\r\n\r\n")
    assert b"\r\nLocation: /login\r\nSet-Cookie: s=1; Path=/\r\n" in down


@pytest.mark.parametrize(("sent", "kept"), [
    # the browser sends the MCP upstream's Path=/ cookies with the fronted server's requests too
    (b"mcp_session=M; mcptap.o1.as_session=A; mcptap.o2.other=O", b"as_session=A"),
    (b"mcptap.o1.__Host-sid=A;mcptap.o1.=nameless; theme=dark", b"__Host-sid=A; nameless"),
    (b"mcp_session=M", None),                  # none of its own: no Cookie field at all
])
def test_a_fronted_server_gets_back_only_its_own_cookies_named_as_it_set_them(sent: bytes, kept: bytes | None) -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    assert relay.auth is not None
    relay.auth.front(AS_ORIGIN, learn=True)
    req = b"GET /.mcptap/o/1/authorize?client_id=c HTTP/1.1\r\nHost: 127.0.0.1:7000\r\nCookie: %s\r\nAccept: */*\r\n\r\n" % sent
    items, up, _ = _relay_roundtrip(relay, req, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    head = up.partition(b"\r\n\r\n")[0].split(b"\r\n")
    assert [h for h in head if h.lower().startswith(b"cookie:")] == ([b"Cookie: " + kept] if kept is not None else [])
    assert b"Accept: */*" in head
    rewrites = [(i.what, i.original, i.rewritten) for i in items if isinstance(i, r.AuthRewritten)]
    assert ("cookie", sent.decode(), (kept or b"").decode()) in rewrites
    # near miss: the MCP upstream gets the Cookie field as the client sent it
    relay2 = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    _, up2, _ = _relay_roundtrip(relay2, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:7000\r\nCookie: %s\r\n\r\n" % sent,
                                 b"HTTP/1.1 405 No\r\nContent-Length: 0\r\n\r\n")
    assert b"\r\nCookie: " + sent + b"\r\n" in up2


@pytest.mark.parametrize(("referer", "refused"), [
    (b"http://127.0.0.1:7000/.mcptap/o/1/authorize?x=1", True),
    (b"http://127.0.0.1:7000/.mcptap/o/1", True),
    # near misses: a page of the MCP upstream, another host, an unknown front, no Referer
    (b"http://127.0.0.1:7000/mcp", False), (b"http://evil.example/.mcptap/o/1/authorize", False),
    (b"http://127.0.0.1:7000/.mcptap/o/2/authorize", False), (None, False),
])
def test_a_root_relative_request_from_a_fronted_page_never_reaches_the_mcp_upstream(referer: bytes | None, refused: bool) -> None:
    relay = HttpRelay(UP, listen_authority="127.0.0.1:7000")
    assert relay.auth is not None
    relay.auth.front(AS_ORIGIN, learn=True)
    cid, _ = relay.client_opened()
    ref = b"Referer: " + referer + b"\r\n" if referer is not None else b""
    items = relay.client_data(cid, b"POST /session HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n" + ref +
                              b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 15\r\n\r\npassword=hunter")
    to_client = b"".join(i.data for i in items if isinstance(i, r.SendClient))
    assert any(isinstance(i, r.SendUpstream) for i in items) is not refused
    assert to_client.startswith(b"HTTP/1.1 404 ") is refused
    notes = [c for i in items if isinstance(i, r.AuthRewritten) for c, _ in i.notes]
    assert notes == (["auth.root_relative_refused"] if refused else [])
