"""Percent-encoded secrets are redacted (mcptap/redact/urlview.py, scanner.py): a query
value or form body that encodes a secret once more (``?next=%2Fhome%3Fpassword%3Dhunter2``,
``Authorization%3A%20Bearer%20…``, a redirect URL's ``code%3D…``) matched no pattern as
written. The text is also read decoded; a secret found there is replaced where it is
written, with the placeholder of the decoded secret (the same as where it is plain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules
from scripted import c2s, handshake, record, req, res, s2c

R = Redactor(Rules(), Keyer(b"k" * 32))


@pytest.mark.parametrize(("text", "secret", "kept"), [
    ("https://x.io/login?next=%2Fhome%3Fpassword%3Dhunter2pw%26x%3D1", "hunter2pw", "%26x%3D1"),
    ("https://x.io/cb?token=abc%2Bdef1234&state=1", "abc%2Bdef1234", "&state=1"),
    ("GET /a?redirect=https%3A%2F%2Fh%2Fcb%3Fcode%3DAbC123xyz%26state%3Dq", "AbC123xyz", "%26state%3Dq"),
    ("header=Authorization%3A%20Bearer%20abcdef1234567890XYZ", "abcdef1234567890XYZ", "Authorization%3A%20Bearer%20"),
    ("https://x.io/?q=Authorization%3A+Bearer+abcdef1234567890XYZ", "abcdef1234567890XYZ", "Bearer+"),
    ("body: username=bob&password%3Dhunter2pw", "hunter2pw", "username=bob&password%3D"),
    ("client_secret%3Ds3cr3tV4lue%26grant_type%3Dclient_credentials", "s3cr3tV4lue", "%26grant_type%3Dclient_credentials"),
    ("https%3A%2F%2Fuser%3Apa55word%40db.example.com%2F", "pa55word", "%40db.example.com%2F"),
    ("%7B%22password%22%3A%22hunter2pw%22%7D", "hunter2pw", "%22%7D"),
    ("next=%252Fa%253Fpassword%253Dhunter2pw", "hunter2pw", "password%253D"),      # encoded twice
])
def test_an_encoded_secret_is_redacted_where_it_is_written(text: str, secret: str, kept: str) -> None:
    out, hits = R.string(text)
    assert secret not in out and kept in out and "«redacted:hmac:" in out, out
    assert hits
    assert R.string(out)[0] == out


def test_the_placeholder_is_the_decoded_secrets() -> None:
    plain, _ = R.string("password=hunter2pw")
    encoded, hits = R.string("password%3Dhunter2pw")
    assert encoded == plain.replace("=", "%3D", 1) and hits[0].rule == "secret-assignment (url-encoded)"


@pytest.mark.parametrize("text", [
    "q=hello%20world%21&lang=en", "https://x.io/search?q=password%20reset%20help", "100%25 sure",
    "https://x.io/?name=caf%C3%A9&key=home", "%E2%80%9Cquoted%E2%80%9D text", "a+b+c = 3 and 50% off",
])
def test_ordinary_encoded_text_stays(text: str) -> None:
    assert R.string(text)[0] == text


def test_scrub_removes_an_encoded_secret_from_a_capture(tmp_path: Path) -> None:
    url = "https://app.example/cb?next=%2Fsettings%3Fapi_key%3DAbCd1234efgh5678%26tab%3D2"
    src = record(tmp_path / "src.jsonl", handshake() + [
        c2s(req(2, "tools/call", {"name": "fetch", "arguments": {"url": url}})),
        s2c(res(2, {"content": [{"type": "text", "text": json.dumps({"location": url})}]})),
    ])
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "AbCd1234efgh5678" not in text and "%26tab%3D2" in text


NESTED = [
    "https://host/mcp?redirect=https%3A%2F%2Fx%2F%3Ftoken%3Dsk-abc123DEF456ghi789jkl",
    "/cb?redirect=https%3A%2F%2Fx%2F%3Ftoken%3Dabc123def456&state=1",
    "/login?next=%2Fhome%3Fpassword%3Dhunter2pw%26x%3D1",
    "/a?redirect=https%3A%2F%2Fh%2Fcb%3Fcode%3DAbC123xyz%26state%3Dq",
    "/p?h=Authorization%3A%20Bearer%20abcdef1234567890XYZ",
    "/p?u=https%3A%2F%2Fbob%3Apa55word%40db.example.com%2F",
    "/p?next=%252Fa%253Fpassword%253Dhunter2pw",
    "/p?q=password%3A%20must%20be%20at%20least%208%20characters",      # prose, decoded: stays
    "/search?q=hello%20world%21&lang=en",
]


@pytest.mark.parametrize("url", NESTED)
def test_the_taps_scrub_url_reads_encoded_query_values_as_scrub_does(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP tap (request targets, Location, the legacy endpoint: ``scrub_url``) and
    ``scrub``/``report`` (the engine) replace the same encoded secret, with the same placeholder."""
    from mcptap.redact import scrub_url
    from mcptap.redact.default import default_redactor
    from mcptap.relay.http.credentials import record_target, scrub_location

    out = scrub_url(url)
    assert out == default_redactor().string(url)[0]
    assert scrub_url(out) == out and default_redactor().string(out)[0] == out      # and scrubbing twice is once
    assert record_target(url) == out and scrub_location(b"location", url) == out
    for secret in ("abc123DEF456", "abc123def456", "hunter2pw", "AbC123xyz", "abcdef1234567890XYZ", "pa55word"):
        assert secret not in out
    if "must%20be" in url or "hello" in url:
        assert out == url
    else:
        assert "«redacted:hmac:" in out


SECRET = "p@ss/w+rd&x=y é"


@pytest.mark.parametrize("encode", [lambda v: __import__("urllib.parse").parse.quote(v, safe=""),
                                    lambda v: __import__("urllib.parse").parse.quote_plus(v)])
def test_one_secret_gets_one_placeholder_in_a_url_a_form_body_and_a_message(encode) -> None:
    """A secret percent-encoded in a URL query (``%2B``/``%20``) or a form body (``+`` a space)
    is the decoded text: the tap's request target, its form-body scrub, ``scrub`` of either and
    the secret written plainly in a message all give it one placeholder."""
    from mcptap.redact import placeholder, scrub_url
    from mcptap.redact.default import default_redactor
    from mcptap.relay.http.credentials import record_target, scrub_query

    enc = encode(SECRET)
    want = placeholder(SECRET)
    red = default_redactor()
    got = {
        "target": record_target(f"/cb?password={enc}&state=x"),
        "target-first": scrub_url(f"/token?client_secret={enc}"),
        "form-body": scrub_query(f"grant_type=password&username=u&password={enc}"),
        "form-body-first": scrub_query(f"password={enc}&username=u"),
        "scrub-target": red.string(f"/cb?password={enc}&state=x")[0],
        "scrub-form-body": red.string(f"grant_type=password&username=u&password={enc}")[0],
        "scrub-form-body-first": red.string(f"password={enc}&username=u")[0],
        "scrub-query-name": red.string(f"https://h/cb?code={enc}&state=x")[0],
        "fragment": scrub_url(f"https://h/cb#access_token={enc}&token_type=bearer"),
        "message": red.string(json.dumps({"password": SECRET}))[0],
    }
    assert {k: want in v and enc not in v for k, v in got.items()} == dict.fromkeys(got, True), got


def test_a_known_url_secret_is_found_encoded_and_decoded() -> None:
    """``record --upstream URL?token=…%2B…``: the URL shows the decoded value's placeholder; a
    server that repeats the value, as written or decoded, gets the same one."""
    from mcptap.known_secrets import redacted_values
    from mcptap.redact import placeholder, scrub_command_url

    url = "https://h/mcp?token=Ab%2Bcd%2Fef123456&key=K3y%3D9876543"
    found = redacted_values([url], [scrub_command_url(url)], placeholder)
    assert found["Ab%2Bcd%2Fef123456"] == found["Ab+cd/ef123456"] == placeholder("Ab+cd/ef123456")
    assert found["K3y%3D9876543"] == found["K3y=9876543"] == placeholder("K3y=9876543")
