"""http.* / sse.* rules on plain facts."""

from __future__ import annotations

from mcptap.protocol.http_memory import HttpRules
from mcptap.protocol.http_rules import Exchange, ack_findings, media_type, request_findings, response_findings
from mcptap.protocol.sse import parse_all
from mcptap.protocol.sse_rules import endpoint_findings, sse_findings
from mcptap.redact import placeholder

ACCEPT_BOTH = (b"Accept", b"application/json, text/event-stream")
JSON = (b"Content-Type", b"application/json")


def codes(fs):
    return [f.code for f in fs]


def ex(method="POST", headers=(ACCEPT_BOTH,), kinds=("request",), methods=("tools/list",), **kw):
    hs = list(headers)
    if method == "POST" and not any(n.lower() == b"content-type" for n, _ in hs):
        hs.append(JSON)
    return Exchange(method, "/mcp", hs, body_kinds=kinds, methods=methods, **kw)


def test_media_type():
    assert media_type("application/json") == ("application/json", False)
    assert media_type("application/json; charset=utf-8") == ("application/json", False)
    assert media_type("Application/JSON") == ("application/json", True)
    assert media_type("text/event-stream; q=1") == ("text/event-stream", True)


def test_accept_rules():
    assert codes(request_findings(ex(headers=[(b"Accept", b"application/json")]))) == ["http.post_accept_incomplete"]
    assert codes(request_findings(ex())) == []
    assert codes(request_findings(ex("GET", [(b"Accept", b"*/*")], kinds=(), methods=()))) == ["http.get_accept_missing_event_stream"]
    assert codes(request_findings(ex(headers=[(b"Accept", b"*/*")], legacy=True))) == []   # legacy POSTs: no rule


def test_a_jsonrpc_post_not_sent_as_application_json_is_flagged_with_its_origin():
    """Streamable HTTP: a JSON-RPC POST body is application/json (SDK servers
    answer 415 otherwise). A form type (what a web page can POST cross-site
    without a CORS preflight) names the Origin the server must check."""
    for ctype in (b"text/plain", b"application/x-www-form-urlencoded", b"multipart/form-data; boundary=x", b"application/json-rpc"):
        for kinds in (("request",), ("notification",), ("response",)):
            fs = request_findings(ex(headers=[ACCEPT_BOTH, (b"Content-Type", ctype), (b"Origin", b"http://evil.example")], kinds=kinds))
            assert codes(fs) == ["http.post_content_type_not_json"], (ctype, kinds)      # no content_type_params beside it
            assert fs[0].severity.value == "error" and fs[0].data == {"content_type": ctype.decode(), "origin": "http://evil.example"}
            assert ("http://evil.example" in fs[0].message) == (not ctype.startswith(b"application/json"))
    missing = Exchange("POST", "/mcp", [ACCEPT_BOTH], body_kinds=("request",), methods=("tools/list",))
    assert codes(request_findings(missing)) == ["http.post_content_type_not_json"]
    # application/json in any case or with parameters is JSON (the params finding says the rest)
    assert codes(request_findings(ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"application/json; charset=utf-8")]))) == []
    assert codes(request_findings(ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"Application/JSON")]))) == ["http.content_type_params"]
    # not JSON-RPC (no body kinds, or JSON that is not JSON-RPC), legacy HTTP+SSE, GET: no rule
    for other in (ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"text/plain")], kinds=()),
                  ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"text/plain")], kinds=("invalid",)),
                  ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"text/plain")], legacy=True)):
        assert "http.post_content_type_not_json" not in codes(request_findings(other))
    # the server's 415 for it is right (not http.media_type_rejected)
    form = ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"multipart/form-data; boundary=x")])
    form.status, form.resp_headers = 415, []
    assert "http.media_type_rejected" not in codes(response_findings(form))
    params = ex(headers=[ACCEPT_BOTH, (b"Content-Type", b"application/json; v=1")])
    params.status, params.resp_headers = 415, []
    assert "http.media_type_rejected" in codes(response_findings(params))


def test_protocol_version_header():
    assert codes(request_findings(ex(revision="2025-06-18"))) == ["http.protocol_version_header_missing"]
    assert codes(request_findings(ex(revision="2025-03-26"))) == []          # header exists from 2025-06-18
    assert codes(request_findings(ex(headers=[ACCEPT_BOTH, (b"MCP-Protocol-Version", b"2025-03-26")], revision="2025-06-18"))) == [
        "http.protocol_version_header_mismatch"]
    assert codes(request_findings(ex(methods=("initialize",), revision="2025-06-18"))) == []    # initialize may lack it
    assert codes(request_findings(ex(meta_version="2026-07-28"))) == ["http.protocol_version_header_missing"]
    assert codes(request_findings(ex(headers=[ACCEPT_BOTH, (b"mcp-protocol-version", b"2026-07-28")], meta_version="2026-07-28"))) == []


def test_ack_rules():
    n = ex(kinds=("notification",), methods=("notifications/initialized",))
    n.status, n.resp_headers = 202, []
    assert codes(response_findings(n)) == [] and codes(ack_findings(n, b"", 0)) == []
    n.status = 204
    assert codes(response_findings(n)) == ["http.ack_status_not_202"]
    n.status = 400                       # a refusal is allowed
    assert codes(response_findings(n)) == []
    n.status, n.resp_headers = 202, [(b"Content-Type", b"application/json")]
    assert codes(ack_findings(n, b"null", 4)) == ["http.ack_body_not_empty"]
    assert codes(ack_findings(n, b"", 0)) == ["http.ack_content_type_unexpected"]
    legacy = ex(kinds=("notification",), legacy=True)
    legacy.status, legacy.resp_headers = 202, [(b"Content-Type", b"text/plain")]
    assert codes(ack_findings(legacy, b"Accepted", 8)) == []


def test_response_rules():
    r = ex()
    r.status, r.resp_headers = 200, [(b"Content-Type", b"text/html")]
    assert codes(response_findings(r)) == ["http.unexpected_content_type"]
    r.resp_headers = [(b"Content-Type", b"text/event-stream"), (b"Content-Encoding", b"gzip")]
    assert codes(response_findings(r)) == ["sse.compressed_stream", "http.content_encoding"]
    r.resp_headers = [(b"Content-Type", b"application/json"), (b"Content-Encoding", b"br")]
    assert codes(response_findings(r)) == ["http.undecodable_encoding"]
    # RFC 9112 §6.1: a sender MUST NOT send Content-Length with Transfer-Encoding (either alone is fine)
    r.resp_headers = [(b"Content-Type", b"application/json"), (b"Content-Length", b"5"), (b"Transfer-Encoding", b"chunked")]
    assert codes(response_findings(r)) == ["http.content_length_with_transfer_encoding"]
    for one in ((b"Content-Length", b"5"), (b"Transfer-Encoding", b"chunked")):
        r.resp_headers = [(b"Content-Type", b"application/json"), one]
        assert codes(response_findings(r)) == []
    s = ex(session="S1")
    s.status, s.resp_headers = 404, []
    assert codes(response_findings(s)) == []        # who ended the session: SessionBook (tests/relay/test_session_book.py)
    g = ex("GET", [(b"Accept", b"text/event-stream")], kinds=(), methods=())
    g.status, g.resp_headers = 501, []
    assert codes(response_findings(g)) == ["http.get_stream_refused_not_405"]
    g.status = 405
    assert codes(response_findings(g)) == []
    i = ex(headers=[ACCEPT_BOTH, (b"MCP-Protocol-Version", b"2025-06-18")], methods=("initialize",))
    i.status, i.resp_headers = 400, []
    assert codes(response_findings(i)) == ["http.protocol_version_rejected_at_initialize"]


def test_sse_findings():
    (ev,) = parse_all(b"id: 1\r\nretry: 10\r\ndata:\r\n\r\n")
    assert codes(sse_findings(ev)) == ["sse.priming_event", "sse.retry", "sse.crlf"]
    (ev,) = parse_all(b"data: x\n")
    assert codes(sse_findings(ev)) == ["sse.unterminated_event_at_eof"]


def test_endpoint_findings():
    fs, url = endpoint_findings("/messages/?s=1", "http://127.0.0.1:8931/tools/sse", "http://127.0.0.1:8931", "http://10.0.0.7:9000", None)
    assert url == "http://127.0.0.1:8931/messages/?s=1"
    assert codes(fs) == ["sse.endpoint_event", "sse.endpoint_prefix_ambiguous"]
    fs, _ = endpoint_findings("/tools/messages/?s=1", "http://127.0.0.1:8931/tools/sse", "http://127.0.0.1:8931", "http://10.0.0.7:9000", None)
    assert codes(fs) == ["sse.endpoint_event"]
    fs, _ = endpoint_findings("http://10.0.0.7:9000/m", "http://127.0.0.1:8931/sse", "http://127.0.0.1:8931", "http://10.0.0.7:9000", None)
    assert "sse.endpoint_foreign_origin" in codes(fs)
    fs, _ = endpoint_findings("http://10.0.0.7:9000/m", "http://127.0.0.1:8931/sse", "http://127.0.0.1:8931", "http://10.0.0.7:9000",
                              "http://127.0.0.1:8931/m")
    assert codes(fs) == ["sse.endpoint_event", "sse.endpoint_rewritten"]


def test_cross_exchange_rules():
    rules = HttpRules()
    get = ex("GET", [(b"Accept", b"text/event-stream")], kinds=(), methods=(), session="S")
    get.status = 405
    assert rules.on_request(1, get) == []
    rules.on_response(1, get)
    assert codes(rules.on_request(2, get)) == ["http.get_retried_after_405"]
    init = ex(kinds=("notification",), methods=("notifications/initialized",), session="S")
    assert rules.on_request(3, init) == []
    assert codes(rules.on_request(4, ex(session="S"))) == ["lifecycle.request_before_initialized_ack"]
    rules.on_response(3, init)
    assert rules.on_request(5, ex(session="S")) == []
    rules.stream_broken(6, "S", ["e1", "e2"], [12])
    resume = ex("GET", [(b"Accept", b"text/event-stream"), (b"Last-Event-ID", b"e2")], kinds=(), methods=(), session="S")
    assert codes(rules.on_request(7, resume)) == ["http.stream_resumed"]
    rules.stream_broken(8, "S", ["e3"], [13])
    plain = ex("GET", [(b"Accept", b"text/event-stream")], kinds=(), methods=(), session="S")
    assert codes(rules.on_request(9, plain)) == ["http.resume_without_last_event_id"]


def test_end_findings():
    from mcptap.protocol.http_rules import end_findings
    kw = dict(detail="", response_started=False, reused=True, sent_502=False, sse=False, event_ids=[], response_bytes=0, pending=[])
    assert codes(end_findings(ex(), "upstream_closed", **kw)) == ["http.request_lost_on_closed_connection"]
    r = ex()
    r.resp_headers = [(b"Content-Length", b"10")]
    assert codes(end_findings(r, "upstream_closed", **{**kw, "response_started": True, "response_bytes": 4})) == ["http.body_shorter_than_content_length"]
    sse = {**kw, "response_started": True, "sse": True, "pending": [(3, 7, False)]}
    f = end_findings(ex(), "upstream_closed", **{**sse, "event_ids": ["e1"]})
    assert codes(f) == ["sse.connection_closed_mid_stream"] and f[0].severity.value == "info"
    assert end_findings(ex(), "upstream_closed", **sse)[0].severity.value == "error"
    assert codes(end_findings(ex(), "complete", **sse)) == ["sse.stream_closed_without_response"]
    assert end_findings(ex(), "complete", **sse)[0].severity.value == "error"
    # 2025-11-25 polling (the SDK server's close_sse_stream): ended after the priming event's id, the
    # client resumes with Last-Event-ID; it was an error on a correct session (found by a breaker helper)
    polled = end_findings(ex(), "complete", **{**sse, "event_ids": ["2-3"]})
    assert codes(polled) == ["sse.stream_closed_without_response"] and polled[0].severity.value == "info"
    assert "'2-3'" in polled[0].message and "Last-Event-ID" in polled[0].message
    assert end_findings(ex(), "client_closed", **{**sse, "event_ids": ["2-3"]})[0].severity.value == "error"
    assert end_findings(ex(), "client_closed", **{**sse, "pending": [(3, 7, True)]}) == []     # 2026-07-28 cancellation
    assert codes(end_findings(ex(), "upstream_failed", **{**kw, "detail": "refused", "sent_502": True})) == ["http.upstream_failed"]
    # a chunked JSON body cut by the upstream's close: an HTTP fault, not an event stream's
    cut = end_findings(ex(), "upstream_closed", **{**kw, "response_started": True, "response_bytes": 40, "pending": [(3, 7, False)]})
    assert codes(cut) == ["http.response_body_cut"] and "request(s) 7 lost" in cut[0].message


def test_a_field_mcp_needs_named_by_connection_is_a_finding():
    """A client (or server) whose Connection header names Mcp-Session-Id,
    MCP-Protocol-Version or Authorization: every proxy removes those fields
    (RFC 9110 §7.6.1), so the receiver never got them although the capture
    holds them. Connection: close / keep-alive / Upgrade are not findings."""
    h = [ACCEPT_BOTH, (b"Mcp-Session-Id", b"s1"), (b"Connection", b"Mcp-Session-Id, keep-alive"),
         (b"connection", b" MCP-Protocol-Version ,authorization")]
    fs = [f for f in request_findings(ex(headers=h)) if f.code == "http.connection_drops_field"]
    assert [f.message.split("names ")[1].split(":")[0] for f in fs] == ["mcp-session-id", "mcp-protocol-version", "authorization"]
    assert all("the server never received it" in f.message for f in fs)
    for plain in (b"close", b"keep-alive", b"Upgrade, HTTP2-Settings", b"x-custom"):
        assert "http.connection_drops_field" not in codes(request_findings(ex(headers=[ACCEPT_BOTH, (b"Connection", plain)])))
    resp = ex(status=200, resp_headers=[(b"Content-Type", b"application/json"), (b"Connection", b"Mcp-Session-Id")])
    assert [f.message for f in response_findings(resp) if f.code == "http.connection_drops_field"] == [
        "the server's Connection header names mcp-session-id: proxies remove the fields it names (this tap did), "
        "so the client never received it"]


def test_an_endpoint_with_its_default_port_spelled_out_is_the_same_origin():
    """``https://h:443/m`` is on ``https://h``'s origin (and ``HTTP://H:80`` on
    ``http://h``): it used to be compared as text, judged foreign, and its
    session lost."""
    from mcptap.relay.http.sessions import SessionKeys

    for data, origin in (("https://h.example:443/m?session_id=x", "https://h.example"),
                         ("HTTP://H.EXAMPLE:80/m?session_id=x", "http://h.example"),
                         ("https://h.example/m?session_id=x", "https://h.example:443")):
        fs, _ = endpoint_findings(data, origin + "/sse", origin, "http://10.0.0.7:9000", None)
        assert [f.code for f in fs] == ["sse.endpoint_event"], data
        assert SessionKeys(record_secrets=True).bind_endpoint(data, origin) == "x", data
        assert SessionKeys().bind_endpoint(data, origin) == placeholder("x"), data      # a legacy session id is a credential
    assert SessionKeys().bind_endpoint("http://h.example/m?session_id=x", "https://h.example") is None
    fs, _ = endpoint_findings("http://h.example/m", "https://h.example/sse", "https://h.example", "http://10.0.0.7:9000", None)
    assert "sse.endpoint_foreign_origin" in [f.code for f in fs]
