"""Secrets that reached a scrubbed capture through copies and record fields
the scrubber did not treat like payload (tester's report): an SSE event's own
text, base64 bodies, the header, context records; JSON text re-encoded
without its surrounding whitespace (mcptap/redact/scrub.py, sse_raw.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.keys import is_secret_key
from mcptap.redact.rules import Rules, build_rules
from mcptap.redact.scrub import Scrubber
from mcptap.redact.sse_raw import rewrite

KEY = Keyer(b"k" * 32)


def scrubber(**rules: Any) -> Scrubber:
    return Scrubber(Redactor(build_rules(**rules) if rules else Rules(), KEY))


def sse_message(value: dict[str, Any], raw: str) -> dict[str, Any]:
    return {"type": "message", "seq": 2, "t_us": 20, "dir": "s2c", "kind": "response", "id": 1, "pair": 1, "json": value,
            "eol": "", "transport": {"exchange": 1, "conn": 1, "method": "POST", "path": "/mcp", "stream": "post", "status": 200,
                                     "sse": {"event": "message", "offset": 0, "bytes": len(raw.encode()), "chunks": 1, "raw": raw}}}


SSE_VALUE = {"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"authorization": "SSEAUTHVAL1", "ssn": "123-45-6789",
                                                                          "creds": "SSECREDS1"}}}
SSE_SECRETS = ("SSEAUTHVAL1", "123-45-6789", "SSECREDS1")


def test_sse_raw_gets_the_scrubbed_payload_with_its_framing() -> None:
    data = json.dumps(SSE_VALUE, separators=(",", ":"))
    raw = f"event: message\r\ndata: {data}\r\n\r\n"
    out = scrubber(keys=["ssn"]).record(sse_message(SSE_VALUE, raw))
    new_raw = out["transport"]["sse"]["raw"]
    assert not any(s in json.dumps(out) for s in SSE_SECRETS)
    payload = json.dumps(out["json"], separators=(",", ":"), ensure_ascii=False)
    assert new_raw == f"event: message\r\ndata: {payload}\r\n\r\n"       # same placeholders, CR LF kept


def test_sse_raw_multi_line_data_and_comments() -> None:
    # pretty-printed JSON over several data lines, a comment with a token: the scrubbed payload
    # (one compact line) goes where the data lines were; the comment gets the patterns
    pretty = json.dumps(SSE_VALUE, indent=1).split("\n")
    raw = ": auth token=COMMENTSECRET1\n" + "".join(f"data:{line}\n" for line in pretty) + "\n"
    rec = sse_message(SSE_VALUE, raw)
    rec["raw"] = "\n".join(pretty)
    out = scrubber(keys=["ssn"]).record(rec)
    new_raw = out["transport"]["sse"]["raw"]
    assert not any(s in new_raw for s in SSE_SECRETS + ("COMMENTSECRET1",)), new_raw
    body = "".join(line[5:] for line in new_raw.split("\n") if line.startswith("data:"))
    assert json.loads(body) == out["json"]


def test_sse_raw_rewrite_unit() -> None:
    keep = str.upper
    assert rewrite("id: 7\r\ndata: a\r\ndata: b\r\n\r\n", "x\ny", keep) == "ID: 7\r\ndata: x\r\ndata: y\r\n\r\n"
    assert rewrite("data:a\ndata:b\n\n", "z", keep) == "data:z\n\n"
    assert rewrite("data: a\n\n", None, keep) == "data: a\n\n"          # payload unchanged: data lines kept
    assert rewrite(": only a comment\n\n", "z", keep) == ": ONLY A COMMENT\n\n"


def test_base64_bodies_are_scanned_as_text() -> None:
    body = b"grant_type=x&client_secret=B64SECRETVALUE1&\xff"
    rec = {"type": "http", "seq": 3, "t_us": 1, "event": "request_body", "exchange": 1, "conn": 1,
           "body_b64": base64.b64encode(body).decode()}
    out = scrubber().record(rec)
    assert b"B64SECRETVALUE1" not in base64.b64decode(out["body_b64"])
    assert base64.b64decode(out["body_b64"]).endswith(b"&\xff")       # still bytes, invalid UTF-8 kept


def test_cli_scrub_sse_raw(tmp_path: Path) -> None:
    data = json.dumps(SSE_VALUE, separators=(",", ":"))
    raw = f"event: message\r\ndata: {data}\r\n\r\n"
    header = {"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "0.1.0",
              "started": "2026-01-01T00:00:00.000000Z", "transport": "http", "target": {"upstream": "http://127.0.0.1:9/mcp"}}
    req = {"type": "message", "seq": 1, "t_us": 10, "dir": "c2s", "kind": "request", "id": 1, "method": "tools/call", "eol": "",
           "json": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
           "transport": {"exchange": 1, "conn": 1, "method": "POST", "path": "/mcp", "stream": "post"}}
    cap = tmp_path / "cap.jsonl"
    cap.write_text("".join(json.dumps(r) + "\n" for r in (header, req, sse_message(SSE_VALUE, raw))))
    res = CliRunner().invoke(mcptap, ["scrub", str(cap), "-o", str(tmp_path / "out.jsonl"), "--redact-key", "ssn"])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "out.jsonl").read_text()
    assert not any(s in text for s in SSE_SECRETS)


def test_every_header_field_and_context_state_get_the_rules() -> None:
    sc = scrubber()
    header = {"type": "header", "format": "mcptap-capture", "version": 1, "transport": "stdio", "name": "run token=HDRNAMESECRET1",
              "target": {"argv": ["server", "--token", "ARGVSECRET1"], "cwd": "/srv/Bearer CWDSECRET12345"}}
    out = sc.header(header)
    text = json.dumps(out)
    assert not any(s in text for s in ("HDRNAMESECRET1", "ARGVSECRET1", "CWDSECRET12345")), text
    assert out["scrubbed"] and out["format"] == "mcptap-capture" and out["target"]["argv"][:2] == ["server", "--token"]
    ctx = {"type": "context", "seq": 1, "t_us": 0,
           "state": {"phase": "operation", "client_caps": {"x": {"apiKey": "CTXAPIKEY1", "maxTokens": 100}}}}
    out = sc.record(ctx)
    assert "CTXAPIKEY1" not in json.dumps(out) and out["state"]["client_caps"]["x"]["maxTokens"] == 100
    assert out["state"]["phase"] == "operation"
    assert sc.header(sc.header(header)) == sc.header(header)


R = Redactor(Rules(), KEY)


@pytest.mark.parametrize(("text", "secrets", "kept"), [
    ("password='my secret phrase here' next", ["my secret phrase here"], ["password='", "' next"]),
    ('password="correct horse battery staple"', ["correct horse battery staple", "horse"], ['password="']),
    ('{"level": "info", "msg": "db password: \'pa ss\'"}', ["pa ss"], ["db password:"]),
    ("Cookie: session=s3ss10nVALUE; csrftoken=csrfVALUE12345", ["s3ss10nVALUE", "csrfVALUE12345"], ["Cookie: "]),
    ("Set-Cookie: sid=SIDVALUE987654; Path=/; HttpOnly", ["SIDVALUE987654"], ["Set-Cookie: ", "; Path=/; HttpOnly"]),
    ("Authorization: 3f2a9c8d7e6b5a4f3e2d1c0b", ["3f2a9c8d7e6b5a4f3e2d1c0b"], ["Authorization: "]),
    ("proxy-authorization: Negotiate YIIGhgYGKwYBBQUC", ["YIIGhgYGKwYBBQUC"], ["Negotiate "]),
    ("http://localhost:3000/callback?code=AUTHCODE987654&state=xyz", ["AUTHCODE987654"], ["?code=", "&state=xyz"]),
    ("grant_type=authorization_code&code=FORMCODE123&code_verifier=VERIFIER12345&client_secret=CS12345",
     ["FORMCODE123", "VERIFIER12345", "CS12345"], ["grant_type=authorization_code&code="]),
    ("#access_token=AT12345678&id_token=IDT1234567&refresh_token=RT12345678", ["AT12345678", "IDT1234567", "RT12345678"], []),
    ("csrftoken=abcdef123 sessionid=abcdef456", ["abcdef123", "abcdef456"], []),
])
def test_secret_shapes_in_free_text(text: str, secrets: list[str], kept: list[str]) -> None:
    out, hits = R.string(text)
    assert hits and not any(s in out for s in secrets), out
    assert all(k in out for k in kept), out
    assert R.string(out) == (out, [])          # idempotent


@pytest.mark.parametrize("text", ["exit code=3 done", "error code: 500", "inputTokens: 123 outputTokens: 45",
                                  "nextCursor=abc123 progressToken=7", "the monkey=banana key: value", "password=\"\"",
                                  "Authorization: «redacted:hmac:0123456789ab»", "Mcp-Session-Id: 1868a90c"])
def test_ordinary_text_stays(text: str) -> None:
    assert R.string(text) == (text, [])


def test_tap_and_scrub_agree_on_query_secrets() -> None:
    from mcptap.redact.argv import scrub_url

    for url in ("/cb?code=C0DE1234&state=s", "/token?code_verifier=V3RIFIER1&x=1", "/x?key=K3Y12345&sig=S1G12345"):
        tapped = scrub_url(url)
        scrubbed, _ = R.string(url)
        assert tapped.count("«redacted:") == scrubbed.count("«redacted:") >= 1, (tapped, scrubbed)


@pytest.mark.parametrize("key", ["tokenValue", "secretValue", "passwordConfirmation", "api_key_2", "apiKey2", "SECRET_KEY_BASE",
                                 "authHeader", "passwords", "apiKeys", "accessTokens", "code_verifier", "clientAssertion"])
def test_more_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["inputTokens", "cachedTokens", "tokens", "maxTokens", "progressToken", "nextCursor", "code",
                                 "tokenCount", "secretVersion", "passwordSet", "tokenizer", "keyValue", "authenticated"])
def test_still_harmless_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_secret_lists_maps_and_context_keys() -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {
        "passwords": ["PWLIST1", "PWLIST2"], "apiKeys": {"prod": "APIKEYPROD1"},
        "oauth": {"code": "OAUTHCODE1"}, "callback": {"code": "CBCODE1", "state": "s"},
        "reply": {"code": "SplxlOBeZQQYbYS6WxSbIA", "state": "af0ifjsldkj"},
        "exchange": {"code": "XCODE1", "redirect_uri": "http://localhost/cb"},
        "headers": [{"name": "Authorization", "value": "HDRPAIRVAL123"}, {"key": "X-Api-Key", "value": "KVPAIRVAL123"},
                    {"name": "Accept", "value": "application/json"}],
        "snippet": {"code": "print(1)", "language": "python"}, "usage": {"inputTokens": 123, "outputTokens": 4}}}}
    out, hits = R.message(msg)
    text = json.dumps(out)
    for s in ("PWLIST1", "PWLIST2", "APIKEYPROD1", "OAUTHCODE1", "SplxlOBeZQQYbYS6WxSbIA", "CBCODE1", "XCODE1", "HDRPAIRVAL123", "KVPAIRVAL123"):
        assert s not in text, s
    args = out["params"]["arguments"]
    assert args["headers"][0]["name"] == "Authorization" and args["headers"][2]["value"] == "application/json"
    assert args["snippet"] == {"code": "print(1)", "language": "python"} and args["usage"] == {"inputTokens": 123, "outputTokens": 4}
    error = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad state", "data": {"code": "E_STATE", "state": "x"}}}
    assert R.message(error) == (error, [])
    assert R.message(out) == (out, [])
    # the deep walk (explicit stack) decides the same
    deep: dict[str, Any] = {"name": "Authorization", "value": "DEEPVAL1234"}
    for _ in range(150):
        deep = {"a": deep}
    assert "DEEPVAL1234" not in json.dumps(R.value(deep)[0])


def test_json_text_keeps_its_surrounding_whitespace() -> None:
    sc = scrubber()
    recs = [{"type": "stderr", "seq": 1, "t_us": 1, "data": '{"level": "info", "password": "hunter22"}\n'},
            {"type": "stderr", "seq": 2, "t_us": 2, "data": "next line\n"}]
    data = "".join(sc.record(r)["data"] for r in recs)
    assert "hunter22" not in data and data.endswith('"}\nnext line\n') and data.startswith('{"level":"info","password":"«')
    out, _ = R.string(' \r\n[{"token": "TOK12345"}]\r\n')
    assert out.startswith(" \r\n[{") and out.endswith("}]\r\n") and "TOK12345" not in out


@pytest.mark.parametrize("event", ["request_body", "response_body"])
def test_a_body_stored_still_encoded_is_left_out_of_a_scrubbed_capture(event: str) -> None:
    """A body mcptap could not decode (br, zstd, corrupt gzip) is stored as relayed; the
    patterns cannot see a secret inside compressed bytes, so scrubbing leaves the bytes out
    (their size kept) rather than let a capture that says it holds no secrets carry them."""
    import gzip

    secret = b'{"jsonrpc":"2.0","id":1,"params":{"token":"ghp_' + b"A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + b'"}}'
    packed = gzip.compress(secret)[:-3]          # cut: mcptap could not decode it
    rec = {"type": "http", "event": event, "seq": 3, "t_us": 30, "exchange": 1, "conn": 1, "content_encoding": "gzip", "undecoded": "corrupt gzip",
           "body_b64": base64.b64encode(packed).decode()}
    s = scrubber()
    s.collect = True
    out = s.record(rec)
    assert "body_b64" not in out and "body" not in out and out["body_removed"] == len(packed)
    assert out["undecoded"] == "corrupt gzip" and [h.rule for _, h in s.hits] == ["undecoded:gzip"]
    assert scrubber().record(out) == out                    # scrubbing twice: the same
    plain = {k: v for k, v in rec.items() if k not in ("undecoded", "content_encoding")}
    assert "body_b64" in scrubber().record(plain)          # a readable body is scanned, not removed
