"""Secrets in the HTTP tap's own fields (request targets, URLs, session keys) never reach a
capture in clear: token shapes written plainly in a path, not only in a query string."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptap.redact import placeholder, scrub_url
from mcptap.redact.default import default_redactor
from mcptap.redact.scrub import Scrubber
from mcptap.relay.http.credentials import record_target, scrub_location
from mcptap.relay.http.observe import HttpObserver
from sansio_tap import UP, SansIoTap, post, response

SK = "sk-live-" + "A1b2C3d4E5f6G7h8I9j0K1"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(("url", "secret"), [
    (f"http://h/mcp/{SK}", SK), (f"/u/{GHP}/mcp", GHP), (f"/mcp/{SK}?x=1", SK), (f"/mcp#{GHP}", GHP),
    (f"https://h:8443/a/{GHP}/b?state=ok", GHP),
])
def test_a_token_written_in_a_path_is_redacted_in_every_url_field(url: str, secret: str) -> None:
    for out in (scrub_url(url), record_target(url), scrub_location(b"location", url)):
        assert secret not in out and placeholder(secret) in out, out
        assert scrub_url(out) == out                 # scrubbing twice is once
    assert record_target(url, record_secrets=True) == url


def test_a_path_token_in_a_request_target_never_reaches_the_capture(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "cap.jsonl")
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    tap.client(post(f"/u/{GHP}/mcp".encode(), body))
    tap.upstream(response(200, [(b"Content-Type", b"application/json")], b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in tap.records())
    assert GHP not in text and placeholder(GHP) in text
    assert f"/u/{GHP}/mcp".encode() in tap.to_upstream        # the relay forwards the bytes unchanged



SID = "7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c2e"
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},'
        b'"clientInfo":{"name":"c","version":"1"}}}')


def _legacy_session(path: Path, record_secrets: bool = False, param: str = "session_id") -> list[dict[str, Any]]:
    """A legacy HTTP+SSE session through the sans-IO tap: GET /sse, the endpoint event names
    ``/messages/?session_id=SID``, the client POSTs initialize there (answered on the stream)."""
    tap = SansIoTap(path)
    tap.obs = HttpObserver(tap.rec, UP, "127.0.0.1:7000", record_secrets=record_secrets)
    tap.client(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:7000\r\nAccept: text/event-stream\r\n\r\n")
    tap.upstream(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    ev = f"event: endpoint\ndata: /messages/?{param}={SID}\n\n".encode()
    tap.upstream(b"%x\r\n%s\r\n" % (len(ev), ev))
    tap.cid = None                     # the POST on a connection of its own
    tap.client(post(f"/messages/?{param}={SID}".encode(), INIT))
    tap.upstream(response(202, [], b"Accepted"))
    return tap.records()


def _sessions(recs: list[dict[str, Any]]) -> set[Any]:
    return {r.get("session") for r in recs if r.get("session") is not None} | {
        p.get("session") for r in recs for p in r.get("pending") or []}


@pytest.mark.parametrize("param", ["session_id", "sessionId"])
def test_a_legacy_session_id_is_a_credential_in_every_field(tmp_path: Path, param: str) -> None:
    recs = _legacy_session(tmp_path / "cap.jsonl", param=param)
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in recs)
    assert SID not in text
    ph = placeholder(SID)
    assert _sessions(recs) == {ph}                   # the same placeholder as in the URLs: sessions still correlate
    ep = next(r for r in recs if r.get("event") == "sse")
    assert ep["endpoint"]["data"] == f"/messages/?{param}={ph}"
    post_ = next(r for r in recs if r.get("event") == "request" and r["method"] == "POST")
    assert post_["target"] == f"/messages/?{param}={ph}" and post_["session"] == ph
    msg = next(r for r in recs if r["type"] == "message")
    assert msg["session"] == ph and msg["transport"]["path"] == f"/messages/?{param}={ph}"
    # --record-secrets keeps it, in every field alike
    clear = _legacy_session(tmp_path / "clear.jsonl", record_secrets=True, param=param)
    assert _sessions(clear) == {SID} and ph not in json.dumps(clear, ensure_ascii=False)


def test_scrub_of_a_capture_recorded_with_secrets_gives_the_taps_placeholders(tmp_path: Path) -> None:
    tapped = _legacy_session(tmp_path / "cap.jsonl")
    clear = _legacy_session(tmp_path / "clear.jsonl", record_secrets=True)
    s = Scrubber(default_redactor())
    scrubbed = [s.header(clear[0]), *s.records(clear[1:])]
    assert SID not in json.dumps(scrubbed, ensure_ascii=False)
    assert _sessions(scrubbed) == _sessions(tapped) == {placeholder(SID)}
    tap_ep = next(r for r in tapped if r.get("event") == "sse")["endpoint"]
    assert next(r for r in scrubbed if r.get("event") == "sse")["endpoint"] == tap_ep


def test_a_streamable_http_session_id_is_no_credential_and_stays(tmp_path: Path) -> None:
    """``Mcp-Session-Id`` must not authenticate anything (2025-06-18 security best practices):
    the capture keeps it for show/filter/replay (docs/redaction.md)."""
    tap = SansIoTap(tmp_path / "cap.jsonl")
    tap.client(post(b"/mcp", INIT))
    tap.upstream(response(200, [(b"Content-Type", b"application/json"), (b"Mcp-Session-Id", SID.encode())],
                          b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    recs = tap.records()
    assert SID in _sessions(recs)


def test_a_referer_is_a_url_field_like_location() -> None:
    """A browser client's ``Referer`` names the page it came from: a legacy endpoint with its
    session id, an OAuth callback with its code, a path token; recorded scrubbed as ``Location``."""
    from mcptap.relay.http.credentials import headers_json

    for url, secret in ((f"http://127.0.0.1:7000/messages/?session_id={SID}", SID), (f"http://h/u/{GHP}/app", GHP),
                        ("http://h/cb?code=4/0AbCdEf123&state=x", "4/0AbCdEf123")):
        ((_, value),) = headers_json([(b"Referer", url.encode())])
        assert secret not in value and placeholder(secret) in value, value
        assert headers_json([(b"Referer", url.encode())], record_secrets=True) == [["Referer", url]]


def _leaks(tap: SansIoTap, *secrets: str) -> list[str]:
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in tap.records())
    return [s for s in secrets if s in text]


@pytest.mark.parametrize("body", [f'{{"password":"hunter2-{SK[:6]}x"}}', f'{{"token":"{SK}"}}', f"debug {GHP} done",
                                  '{"password":"p4ss-w0rd-9x","pad":"' + "é" * 300 + '"}'])     # cut short at the 256 bytes kept
def test_a_finding_quoting_an_acknowledgement_body_shows_the_scrubbed_ack_body(tmp_path: Path, body: str) -> None:
    tap = SansIoTap(tmp_path / "cap.jsonl")
    tap.client(post(b"/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
    tap.upstream(response(202, [(b"Content-Type", b"application/json")], body.encode()))
    secret = body.split('"')[3] if body.startswith("{") else GHP
    assert _leaks(tap, secret) == []
    end = next(r for r in tap.records() if r.get("event") == "end")
    f = next(f for f in end["findings"] if f["code"] == "http.ack_body_not_empty")
    assert repr(end["ack_body"][:40])[1:-1][:30] in f["message"]      # it quotes the field, placeholder whole
    assert "«redacted:" in f["message"]


@pytest.mark.parametrize("record_secrets", [False, True])
def test_findings_quoting_header_values_show_them_as_the_header_records_do(tmp_path: Path, record_secrets: bool) -> None:
    """Scrubbed by default; in clear under ``--record-secrets``, as the header fields they quote."""
    tap = SansIoTap(tmp_path / "cap.jsonl", record_secrets)
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    tap.client(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:7000\r\nAccept: " + SK.encode() + b"\r\nContent-Type: application/json; x="
               + GHP.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    tap.upstream(response(200, [(b"Content-Type", b"application/json; t=" + SK.encode())], b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    fs = [f for r in tap.records() for f in r.get("findings", ())]
    assert {"http.post_accept_incomplete", "http.content_type_params"} <= {f["code"] for f in fs}
    assert _leaks(tap, SK, GHP) == ([SK, GHP] if record_secrets else [])
    quotes = [f["message"] for f in fs if f["code"] in ("http.post_accept_incomplete", "http.content_type_params")]
    assert len(quotes) == 3 and all((SK in q or GHP in q) is record_secrets for q in quotes), quotes


@pytest.mark.parametrize("record_secrets", [False, True])
def test_an_http_error_bodys_quote_follows_record_secrets(tmp_path: Path, record_secrets: bool) -> None:
    tap = SansIoTap(tmp_path / "cap.jsonl", record_secrets)
    tap.client(post(b"/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}'))
    err = json.dumps({"error": GHP}).encode()        # whole in the 40-character quote (a cut drops a word it falls in)
    tap.upstream(response(403, [(b"Content-Type", b"application/json")], err))
    f = next(f for r in tap.records() for f in r.get("findings", ()) if f["code"] == "http.error_body")
    assert (GHP[:20] in f["message"]) is record_secrets, f["message"]
    assert ("«redacted:" in f["message"]) is not record_secrets


def test_a_refused_request_target_is_quoted_with_its_credentials_as_placeholders(tmp_path: Path) -> None:
    tap = SansIoTap(tmp_path / "cap.jsonl")
    tap.client(f"GET http://u:{SK}@127.0.0.1:7000/mcp?code=abc123secret HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n".encode())
    end = next(r for r in tap.records() if r.get("event") == "end")
    assert end["how"] == "request_rejected" and "userinfo" in end["detail"]
    assert _leaks(tap, SK, "abc123secret") == []


@pytest.mark.parametrize("record_secrets", [False, True])
@pytest.mark.parametrize(("head", "how"), [
    (f"GET http://u:{SK}@127.0.0.1:7000/mcp HTTP/1.1\r\nHost: 127.0.0.1:7000\r\n\r\n", "request_rejected"),     # guard: target
    (f"GET /mcp HTTP/1.1\r\nHost: a@{GHP}\r\n\r\n", "request_rejected"),                                      # guard: Host
    (f"GET /mcp HTTP/1.1\r\nHost: {GHP}.example\r\n\r\n", "host_rejected"),                                  # not a loopback name
])
def test_a_refusal_quotes_the_peers_host_and_target_as_the_request_record_holds_them(tmp_path: Path, head: str, how: str,
                                                                                      record_secrets: bool) -> None:
    """Scrubbed by default, in clear under ``--record-secrets`` as the request record's
    target and Host are: the refusal's quote used to be scrubbed whatever the setting."""
    tap = SansIoTap(tmp_path / "cap.jsonl", record_secrets, allowed_hosts=frozenset({"127.0.0.1"}))
    tap.client(head.encode())
    recs = tap.records()
    req = next(r for r in recs if r.get("event") == "request")
    end = next(r for r in recs if r.get("event") == "end")
    assert end["how"] == how
    secret = SK if SK in head.split("\r\n")[0] else GHP
    quoted = req["target"] if secret == SK else dict(req["headers"])["Host"]
    assert (secret in quoted) is record_secrets
    assert repr(quoted) in end["detail"], (quoted, end["detail"])
    assert (secret in end["detail"]) is record_secrets
