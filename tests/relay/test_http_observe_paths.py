"""Which exchanges the HTTP tap records as JSON-RPC, and that none is lost
(sans-IO: relay + observer + recorder, tests/sansio_tap.py).

* an authorization server on the MCP server's own origin (the SDK's built-in
  one): its registration, authorization and token endpoints are ``auth``
  exchanges with credentials as placeholders, never JSON-RPC messages;
* the MCP endpoint is never an authorization-server exchange, whatever the
  Content-Type (curl -d sends a form type);
* a request body that arrives after the upstream's early answer is recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from sansio_tap import HOST, SansIoTap, post, response

INIT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})
RESULT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                             "serverInfo": {"name": "s", "version": "1"}}})
JSON = [(b"Content-Type", b"application/json")]


def _codes(recs: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for x in recs for f in x.get("findings", []) + x.get("annotations", [])]


def _messages(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in recs if x["type"] == "message"]


def test_registration_on_the_upstreams_origin_is_an_auth_exchange(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/register", b'{"client_name":"x","redirect_uris":["http://localhost:3030/callback"]}'))
    tap.upstream(response(201, JSON, b'{"client_id":"c1","client_secret":"CLIENT_SECRET_XYZ"}'))
    tap.client(b"GET /authorize?response_type=code&client_id=c1 HTTP/1.1\r\nHost: %s\r\n\r\n" % HOST)
    tap.upstream(response(302, [(b"Location", b"http://localhost:3030/callback?code=AUTHCODE_SECRET_1&state=s")]))
    tap.client(post(b"/token", b"grant_type=authorization_code&code=AUTHCODE_SECRET_1", b"application/x-www-form-urlencoded"))
    tap.upstream(response(200, JSON, b'{"access_token":"AT_SECRET","token_type":"Bearer"}'))
    recs = tap.records()
    assert _messages(recs) == []
    assert {x.get("auth") for x in recs if x.get("event") == "request"} == {"as"}
    assert "SECRET" not in (tmp_path / "c.jsonl").read_text()
    assert not [c for c in _codes(recs) if c.startswith(("jsonrpc.", "http."))]


def test_endpoints_named_by_metadata_on_the_upstreams_origin_are_auth_exchanges(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    meta = orjson.dumps({"issuer": "http://127.0.0.1:9000", "registration_endpoint": "http://127.0.0.1:9000/oauth/clients",
                         "jwks_uri": "http://127.0.0.1:9000/oauth/jwks"})
    tap.client(b"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: %s\r\n\r\n" % HOST)
    tap.upstream(response(200, JSON, meta))
    tap.client(post(b"/oauth/clients", b'{"client_name":"x"}'))
    tap.upstream(response(201, JSON, b'{"client_id":"c1","client_secret":"CLIENT_SECRET_XYZ"}'))
    recs = tap.records()
    assert [x.get("auth") for x in recs if x.get("event") == "request"] == ["as_meta", "as"]
    assert _messages(recs) == [] and "CLIENT_SECRET_XYZ" not in (tmp_path / "c.jsonl").read_text()
    # near miss: the issuer's own path ("/") does not make every request an authorization-server one
    assert tap.relay.auth is not None and "/" not in tap.relay.auth.as_paths


def test_a_non_jsonrpc_post_off_the_mcp_endpoint_is_not_judged_as_jsonrpc(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/hooks/github", b'{"action":"opened","password":"PW_SECRET"}', extra=b"Accept: */*\r\n"))
    tap.upstream(response(200, JSON, b'{"ok":true}'))
    recs = tap.records()
    assert _messages(recs) == []
    assert [x["event"] for x in recs if x["type"] == "http"][:3] == ["request", "request_body", "response"]
    assert not [c for c in _codes(recs) if c.startswith("jsonrpc.") or c == "http.post_accept_incomplete"]
    assert "PW_SECRET" not in (tmp_path / "c.jsonl").read_text()
    # near miss: a JSON-RPC body off the endpoint path (a legacy /messages endpoint) is still a message
    tap2 = SansIoTap(tmp_path / "d.jsonl")
    tap2.client(post(b"/elsewhere", INIT))
    tap2.upstream(response(200, JSON, RESULT))
    assert len(_messages(tap2.records())) == 2


def test_a_jsonrpc_post_to_the_mcp_endpoint_sent_as_a_form_is_jsonrpc(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    tap.client(post(b"/mcp", INIT, b"application/x-www-form-urlencoded"))
    tap.upstream(response(200, JSON, RESULT))
    recs = tap.records()
    assert [m["dir"] for m in _messages(recs)] == ["c2s", "s2c"]
    assert not [x for x in recs if x.get("auth")]


def test_a_body_sent_after_an_early_answer_is_recorded(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    head, _, body = post(b"/mcp", INIT).partition(b"\r\n\r\n")
    tap.client(head + b"\r\n\r\n")
    tap.upstream(response(307, [(b"Location", b"/mcp2")]))
    tap.client(body)
    assert tap.to_upstream.endswith(body)
    recs = tap.records()
    assert [m["dir"] for m in _messages(recs)] == ["c2s"]
    end = next(x for x in recs if x.get("event") == "end")
    assert end["how"] == "complete" and end["request_bytes"] == len(body) and "request_cut" not in end
    assert "http.redirected" in _codes(recs)


def test_a_body_cut_after_an_early_answer_is_kept_and_marked(tmp_path: Path) -> None:
    for target, auth in ((b"/mcp", False), (b"/register", True)):
        tap = SansIoTap(tmp_path / "c.jsonl")
        head, _, body = post(target, INIT).partition(b"\r\n\r\n")
        tap.client(head + b"\r\n\r\n" + body[:10])
        tap.upstream(response(401, [(b"WWW-Authenticate", b"Bearer")]))
        tap.client(b"")
        recs = tap.records()
        bodies = [x for x in recs if x.get("event") == "request_body"]
        assert len(bodies) == 1 and bool(bodies[0].get("auth")) is auth
        end = next(x for x in recs if x.get("event") == "end")
        assert end["request_cut"] is True and end["request_bytes"] == 10
        (tmp_path / "c.jsonl").unlink()


def test_a_held_form_post_with_expect_100_continue_gets_a_100_from_the_tap(tmp_path: Path) -> None:
    """The tap holds a token request's head until its form is complete (resource mapped back):
    the client waiting for 100 Continue stalled until its own timeout (curl: 1 s, or --expect100-timeout)."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    form = b"grant_type=authorization_code&code=c&resource=http%3A%2F%2F127.0.0.1%3A7000%2Fmcp"
    head, _, body = post(b"/token", form, b"application/x-www-form-urlencoded", extra=b"Expect: 100-continue\r\n").partition(b"\r\n\r\n")
    tap.client(head + b"\r\n\r\n")
    assert tap.to_client.startswith(b"HTTP/1.1 100 Continue\r\n") and tap.to_upstream == b""
    tap.client(body)
    sent_head, _, sent_body = bytes(tap.to_upstream).partition(b"\r\n\r\n")
    assert b"expect" not in sent_head.lower() and sent_body == form.replace(b"7000", b"9000")
    tap.upstream(response(200, JSON, b'{"access_token":"x"}'))
    assert tap.to_client.count(b"HTTP/1.1 100 ") == 1 and b"HTTP/1.1 200 " in tap.to_client
    # the capture says what the client received, and that the tap (not the upstream) sent the 100
    resps = [(x["status"], x.get("informational"), x.get("tap")) for x in tap.records() if x.get("event") == "response"]
    assert resps == [(100, True, True), (200, None, None)]
    # near miss: an MCP POST is not held, so its Expect goes upstream and the upstream's 100 is relayed
    tap2 = SansIoTap(tmp_path / "d.jsonl")
    head, _, body = post(b"/mcp", INIT, extra=b"Expect: 100-continue\r\n").partition(b"\r\n\r\n")
    tap2.client(head + b"\r\n\r\n")
    assert tap2.to_client == b"" and b"Expect: 100-continue" in tap2.to_upstream
    tap2.upstream(b"HTTP/1.1 100 Continue\r\n\r\n")
    tap2.client(body)
    tap2.upstream(response(200, JSON, RESULT))
    resps = [(x["status"], x.get("informational"), x.get("tap")) for x in tap2.records() if x.get("event") == "response"]
    assert resps == [(100, True, None), (200, None, None)]      # the upstream's own 100: not the tap's


def test_a_redirect_loop_on_the_mcp_endpoint_is_a_finding(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "c.jsonl")
    for _ in range(4):      # the client follows the (rewritten) Location: the same request again
        tap.client(post(b"/old", INIT))
        tap.upstream(response(307, [(b"Location", b"http://127.0.0.1:9000/old")]))
    recs = tap.records()
    codes = _codes(recs)
    assert codes.count("http.redirect_loop") == 1 and codes.count("http.redirected") == 4
    msg = next(f["message"] for x in recs for f in x.get("findings", []) if f["code"] == "http.redirected")
    assert "'http://127.0.0.1:9000/old'" in msg and "'http://127.0.0.1:7000/old'" in msg
    # near miss: a redirect chain that moves on (/a -> /b -> /mcp) is no loop
    tap2 = SansIoTap(tmp_path / "d.jsonl")
    for src, dst in ((b"/a", b"/b"), (b"/b", b"/mcp")):
        tap2.client(post(src, INIT))
        tap2.upstream(response(307, [(b"Location", dst)]))
    assert "http.redirect_loop" not in _codes(tap2.records())


def test_a_session_id_given_again_to_a_new_session_starts_afresh(tmp_path: Path) -> None:
    """A server with deterministic (or reused) session ids answers the new
    initialize after a 404 or a DELETE with the same id: that was
    lifecycle.reinitialize (error) and jsonrpc.id_reused blamed on the client,
    and a later 404 said the client used a session it had deleted (found by a
    breaker helper)."""
    sid = [(b"Mcp-Session-Id", b"S1")]
    hdr = b"Mcp-Session-Id: S1\r\nMCP-Protocol-Version: 2025-06-18\r\n"
    listing = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    listed = orjson.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}})
    initialized = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tap = SansIoTap(tmp_path / "c.jsonl")
    for end in ("DELETE", "404"):
        tap.client(post(b"/mcp", INIT))
        tap.upstream(response(200, JSON + sid, RESULT))
        tap.client(post(b"/mcp", initialized, extra=hdr))
        tap.upstream(response(202, []))
        tap.client(post(b"/mcp", listing, extra=hdr))
        tap.upstream(response(200, JSON, listed))
        if end == "DELETE":
            tap.client(b"DELETE /mcp HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (HOST, hdr))
            tap.upstream(response(200, []))
        else:
            tap.client(post(b"/mcp", listing.replace(b'"id":2', b'"id":3'), extra=hdr))
            tap.upstream(response(404, []))
    recs = tap.records()
    codes = _codes(recs)
    assert "lifecycle.reinitialize" not in codes and "jsonrpc.id_reused" not in codes, codes
    assert "http.session_used_after_delete" not in codes and codes.count("lifecycle.session_terminated") == 1, codes
    inits = [m for m in _messages(recs) if m.get("method") == "initialize"]
    assert [m["session"] for m in inits] == ["S1", "S1"] and all(m["transport"].get("session_from_response") for m in inits)
    # check --full derives the same from the records
    from mcptap.check.report import check_capture
    full = check_capture(str(tmp_path / "c.jsonl"), reuse=False)
    assert "lifecycle.reinitialize" not in full.groups and "jsonrpc.id_reused" not in full.groups


def test_the_cookies_kept_from_a_fronted_server_are_recorded_as_placeholders(tmp_path: Path) -> None:
    """The tap removes the MCP upstream's cookies from a fronted server's request
    (relay/http/cookies.py): an auth_rewrite record says so, values redacted."""
    tap = SansIoTap(tmp_path / "c.jsonl")
    assert tap.relay.auth is not None
    tap.relay.auth.front("http://127.0.0.1:9100", learn=True)
    tap.client(b"GET /.mcptap/o/1/authorize HTTP/1.1\r\nHost: %s\r\nCookie: mcp=MCPSECRET1; mcptap.o1.sid=ASSECRET2\r\n\r\n" % HOST)
    assert b"\r\nCookie: sid=ASSECRET2\r\n" in tap.to_upstream
    tap.upstream(response(200, []))
    recs = tap.records()
    (rw,) = [x for x in recs if x.get("event") == "auth_rewrite" and x["what"] == "cookie"]
    assert rw["original"].startswith("mcp=«redacted:") and rw["rewritten"].startswith("sid=«redacted:")
    assert "SECRET" not in (tmp_path / "c.jsonl").read_text()
