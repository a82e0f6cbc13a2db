"""Credentials in headers whose names were not on the secret-header list never
reach a capture (nor its HAR) in clear, request or response (the breaker's
case: ``Cf-Access-Jwt-Assertion``, ``X-Goog-Iap-Jwt-Assertion``, ``DPoP``,
``X-Upstream-Credential: ghp_…`` and ``Ocp-Apim-Subscription-Key`` stored as
sent; ``scrub`` left ``Ocp-Apim-Subscription-Key`` too). The capture holds
what ``scrub`` leaves of the same capture recorded with ``--record-secrets``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture
from mcptap.export.har import har_of
from mcptap.redact.default import default_redactor
from mcptap.redact.headers import is_secret_header
from mcptap.redact.scrub import Scrubber
from mcptap.relay.http.observe import HttpObserver
from sansio_tap import UP, SansIoTap, post, response

JWT = ("eyJhbGciOiJSUzI1NiIsImtpZCI6ImFiYyJ9.eyJhdWQiOlsiYWJjIl0sImVtYWlsIjoiYm9iQGV4YW1wbGUuY29tIiwiZXhwIjoxODAwMDAwMDAwfQ"
       ".c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl")
GHP = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
APIM = "7f3c9a1b2d4e4f60a8b9c0d1e2f3a4b5"
SK = "sk-live-" + "Q1w2E3r4T5y6U7i8O9p0A1s2"
REQUEST = [(b"Cf-Access-Jwt-Assertion", JWT), (b"X-Goog-Iap-Jwt-Assertion", JWT), (b"Ocp-Apim-Subscription-Key", APIM),
           (b"X-Upstream-Credential", GHP), (b"DPoP", "Zq3xY9w8V7u6Tt5s"), (b"X-Serverless-Authorization", "Bearer Zz9Yy8Xx7Ww6"),
           (b"X-Trace-Note", f"forwarded with {SK}")]
RESPONSE = [(b"X-Pomerium-Jwt-Assertion", JWT), (b"X-Echo", f"token {GHP}")]
SECRETS = (JWT, GHP, APIM, SK, "Zq3xY9w8V7u6Tt5s", "Zz9Yy8Xx7Ww6")


def _session(path: Path, record_secrets: bool = False) -> tuple[SansIoTap, list[dict[str, Any]]]:
    tap = SansIoTap(path)
    tap.obs = HttpObserver(tap.rec, UP, "127.0.0.1:7000", record_secrets=record_secrets)
    extra = b"".join(b"%s: %s\r\n" % (n, v.encode()) for n, v in REQUEST)
    tap.client(post(b"/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', extra=extra))
    tap.upstream(response(200, [(b"Content-Type", b"application/json"), *((n, v.encode()) for n, v in RESPONSE)],
                          b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    return tap, tap.records()


def _heads(recs: list[dict[str, Any]]) -> list[Any]:
    return [r["headers"] for r in recs if r.get("event") in ("request", "response")]


def test_no_header_credential_reaches_the_capture_or_its_har(tmp_path: Path) -> None:
    tap, recs = _session(tmp_path / "c.jsonl")
    text = json.dumps(recs) + json.dumps(har_of(read_capture(str(tmp_path / "c.jsonl")).header, recs))
    assert [s for s in SECRETS if s in text] == []
    # the peers got every value as sent
    assert all(v.encode() in tap.to_upstream for _, v in REQUEST) and all(v.encode() in tap.to_client for _, v in RESPONSE)
    # what helps debugging stays: the auth scheme, the words around a token
    heads = dict(_heads(recs)[0])
    assert heads["X-Serverless-Authorization"].startswith("Bearer «redacted:") and heads["X-Trace-Note"].startswith("forwarded with «")


def test_the_taps_placeholders_are_what_scrub_gives(tmp_path: Path) -> None:
    _, tapped = _session(tmp_path / "c.jsonl")
    _, clear = _session(tmp_path / "clear.jsonl", record_secrets=True)
    assert all(s in json.dumps(clear) for s in SECRETS)
    s = Scrubber(default_redactor())
    s.header(read_capture(str(tmp_path / "clear.jsonl")).header)
    assert _heads(list(s.records(clear))) == _heads(tapped)
    # and scrubbing the tap's capture changes no header
    s = Scrubber(default_redactor())
    s.header(read_capture(str(tmp_path / "c.jsonl")).header)
    assert _heads(list(s.records(tapped))) == _heads(tapped)


@pytest.mark.parametrize("name", ["Ocp-Apim-Subscription-Key", "Cf-Access-Jwt-Assertion", "X-Goog-Iap-Jwt-Assertion", "DPoP",
                                  "X-Upstream-Credential", "X-Forwarded-Authorization", "X-Jwt", "X-Amzn-Oidc-Data"])
def test_credential_shaped_header_names_are_secret(name: str) -> None:
    assert is_secret_header(name) and is_secret_header(name.lower())


@pytest.mark.parametrize("name", ["Sec-WebSocket-Key", "Idempotency-Key", "Content-Type", "Mcp-Session-Id", "Key", "Accept"])
def test_ordinary_header_names_are_not(name: str) -> None:
    assert not is_secret_header(name)
