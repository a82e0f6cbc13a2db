"""HAR URLs and bodies of exchanges that are not plain MCP POSTs (synthesized records in the shapes
the HTTP tap writes, ``relay/http/observe_auth.py``): an OAuth exchange's ``response_body`` is its
response content; an exchange under ``/.mcptap/o/<n>`` is shown at the origin the tap fronted there
(learned from the metadata rewrites), the client's URL in ``_mcp.clientUrl``; a request target with
no path (``PRI *``) gives the origin with an empty path, a valid absolute URL."""

from __future__ import annotations

import json
from typing import Any

from test_har_serve import har_validator

from mcptap.export.har import har_of

HEADER = {"type": "header", "transport": "http", "started": "2026-12-07T03:07:29.060979Z",
          "target": {"url": "http://127.0.0.1:18202/mcp"}}
TAP = [["Host", "127.0.0.1:19201"]]
AS_DOC = {"issuer": "https://as.example/tenant", "token_endpoint": "https://as.example/tenant/token"}
AS_FRONTED = {"issuer": "http://127.0.0.1:19201/.mcptap/o/1/tenant", "token_endpoint": "http://127.0.0.1:19201/.mcptap/o/1/tenant/token"}


def _exchange(n: int, method: str, target: str, auth: str | None, status: int, body: str | None,
              extra: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:   # type: ignore[assignment]
    tag = {"auth": auth} if auth else {}
    recs: list[dict[str, Any]] = [
        {"type": "http", "event": "request", "exchange": n, "conn": 1, "method": method, "target": target, "version": "1.1",
         "headers": TAP, "t_us": n * 10, **tag},
        *({**x, "type": "http", "exchange": n, "conn": 1, **tag} for x in extra),
        {"type": "http", "event": "response", "exchange": n, "conn": 1, "status": status, "reason": "OK",
         "headers": [["content-type", "application/json"]], "t_us": n * 10 + 1, **tag}]
    if body is not None:
        recs.append({"type": "http", "event": "response_body", "exchange": n, "conn": 1, "body": body, **tag})
    recs.append({"type": "http", "event": "end", "exchange": n, "conn": 1, "how": "complete", "request_bytes": 0,
                 "response_bytes": len((body or "").encode()), "duration_us": 1, "t_us": n * 10 + 2, **tag})
    return recs


def _records() -> list[dict[str, Any]]:
    prm = json.dumps({"resource": "http://127.0.0.1:18202/mcp", "authorization_servers": ["https://as.example/tenant"]})
    fronted = json.dumps({"resource": "http://127.0.0.1:19201/mcp", "authorization_servers": ["http://127.0.0.1:19201/.mcptap/o/1/tenant"]})
    token = json.dumps({"access_token": "«redacted:hmac:d3cb21a23dc3»", "token_type": "Bearer"})
    return [
        *_exchange(1, "GET", "/.well-known/oauth-protected-resource/mcp", "prm", 200, prm,
                   [{"event": "auth_rewrite", "what": "prm", "original": prm, "rewritten": fronted}]),
        *_exchange(2, "GET", "/.well-known/oauth-authorization-server/.mcptap/o/1/tenant", "as_meta", 200, json.dumps(AS_DOC),
                   [{"event": "auth_rewrite", "what": "as_meta", "original": json.dumps(AS_DOC), "rewritten": json.dumps(AS_FRONTED)}]),
        *_exchange(3, "POST", "/.mcptap/o/1/tenant/token", "as", 200, token,
                   [{"event": "request_body", "body": "grant_type=x&resource=http%3A%2F%2F127.0.0.1%3A19201%2Fmcp"},
                    {"event": "auth_rewrite", "what": "form", "original": "grant_type=x&resource=http%3A%2F%2F127.0.0.1%3A19201%2Fmcp",
                     "rewritten": "grant_type=x&resource=http%3A%2F%2F127.0.0.1%3A18202%2Fmcp"}]),
        *_exchange(4, "GET", "/.mcptap/o/7/login", "as", 404, None),
        *_exchange(5, "PRI", "*", None, 400, None),
    ]


def test_oauth_exchanges_show_the_urls_requested_and_their_bodies() -> None:
    har = har_of(HEADER, _records())
    har_validator().validate(har)
    prm, meta, token, unknown, pri = har["log"]["entries"]
    assert prm["request"]["url"] == "http://127.0.0.1:18202/.well-known/oauth-protected-resource/mcp"
    assert json.loads(prm["response"]["content"]["text"])["authorization_servers"] == ["https://as.example/tenant"]
    # RFC 8414 §3.1: the well-known segment sits between the authority and the issuer's path
    assert meta["request"]["url"] == "https://as.example/.well-known/oauth-authorization-server/tenant"
    assert meta["_mcp"]["clientUrl"] == "http://127.0.0.1:19201/.well-known/oauth-authorization-server/.mcptap/o/1/tenant"
    assert json.loads(meta["response"]["content"]["text"]) == AS_DOC
    assert token["request"]["url"] == "https://as.example/tenant/token"
    assert token["request"]["postData"]["text"].endswith("resource=http%3A%2F%2F127.0.0.1%3A18202%2Fmcp")
    content = token["response"]["content"]
    assert json.loads(content["text"])["access_token"] == "«redacted:hmac:d3cb21a23dc3»" and "comment" not in content
    assert content["size"] == len(content["text"].encode())
    # a prefix whose origin the capture never showed: the tap's URL, and the entry says so
    assert unknown["request"]["url"] == "http://127.0.0.1:19201/.mcptap/o/7/login"
    assert "does not show" in unknown["comment"]
    refused = har_of(HEADER, [*_records()[:10], {"type": "http", "event": "request", "exchange": 9, "conn": 1, "method": "GET",
                                                 "target": "/.mcptap/o/7/x", "headers": TAP, "t_us": 99, "auth": "as"},
                              {"type": "http", "event": "end", "exchange": 9, "conn": 1, "how": "auth_not_fronted", "t_us": 99}])
    last = refused["log"]["entries"][-1]
    assert last["request"]["url"] == "http://127.0.0.1:19201/.mcptap/o/7/x" and "comment" not in last
    assert last["response"]["status"] == 404
    assert pri["request"]["url"] == "http://127.0.0.1:18202" and pri["_mcp"]["target"] == "*"


def test_fronted_issuer_with_a_path_in_the_openid_form() -> None:
    recs = _records()[:7] + _exchange(6, "GET", "/.mcptap/o/1/tenant/.well-known/openid-configuration", "as_meta", 200, "{}")
    entry = har_of(HEADER, recs)["log"]["entries"][-1]
    assert entry["request"]["url"] == "https://as.example/tenant/.well-known/openid-configuration"


def test_a_scrubbed_undecodable_body_says_it_was_left_out() -> None:
    """``scrub`` leaves a body mcptap could not decode out (it cannot be scanned for secrets):
    the HAR says so instead of calling it a body that is no JSON-RPC message."""
    import base64
    import gzip

    from mcptap.redact.engine import Redactor
    from mcptap.redact.keyed import Keyer
    from mcptap.redact.rules import Rules
    from mcptap.redact.scrub import Scrubber

    packed = gzip.compress(b'{"jsonrpc":"2.0","id":1,"result":{}}')[:-3]
    recs = _exchange(1, "POST", "/mcp", None, 200, None)
    recs.insert(2, {"type": "http", "event": "response_body", "exchange": 1, "conn": 1, "content_encoding": "gzip",
                    "undecoded": "corrupt gzip", "body_b64": base64.b64encode(packed).decode()})
    recs[-1]["response_bytes"] = len(packed)
    before = har_of(HEADER, recs)["log"]["entries"][0]["response"]["content"]
    assert before["encoding"] == "base64" and "could not decode" in before["comment"]
    scrubber = Scrubber(Redactor(Rules(), Keyer(b"k" * 32)))
    after = har_of(HEADER, [scrubber.record(r) for r in recs])["log"]["entries"][0]["response"]["content"]
    assert "text" not in after and f"({len(packed)} bytes as relayed, still gzip) was left out" in after["comment"]
