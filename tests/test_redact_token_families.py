"""Bare tokens of families that had no pattern are redacted (mcptap/redact/patterns.py):
a Stripe/Svix ``whsec_`` webhook secret, a Google OAuth client secret (``GOCSPX-``) or
access token (``ya29.``), a bare npm token, Databricks (``dapi``), DigitalOcean
(``dop_v1_``), Shopify (``shpat_``), HashiCorp Vault (``hvs.``), Linear (``lin_api_``),
an age secret key and a PuTTY private key file's private lines were kept in clear where no
key or assignment named them (a log line, a tool's text). Ordinary words of the same
beginnings stay."""

from __future__ import annotations

import json

import pytest

from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules

R = Redactor(Rules(), Keyer(b"k" * 32))

PPK_PRIVATE = ("AAABAQDOIOpSGBFTU4Tj792+BrtYA1iFdmymhKly+XCyN4VzfAMaCxAwX2qjXWGR\n"
               "kwROSGqQjaiOcvvppn1KrWf23PuFw3BSN7rPYBtdIILHkCGCZZSL12DPRMwpCKWV\n"
               "nnHJkm+YBMe+YQ0lFq/Ti0/qYY7FuZ4o8VtjjN54+UqUH/JfFUboP4BJaZyl==")
PPK = ("PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
       "AAAAB3NzaC1yc2EAAAADAQABAAABAQDFmWzs2BFLmu0Mf6YKAR6pI7XYGI8BjZ2F\n"
       f"Private-Lines: 3\n{PPK_PRIVATE}\nPrivate-MAC: 5f1e2d3c4b5a69788796a5b4c3d2e1f0\n")

TOKENS = {
    "webhook-secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "google-oauth-client-secret": "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",
    "google-oauth-access-token": "ya29.a0AfH6SMBx3kPq9Zr7Lw2Vn5Tt0Yc8Ud1Ee4Ff6Gg",
    "npm-token": "npm_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
    "databricks-token": "dapi" + "0123456789abcdef0123456789abcdef",
    "digitalocean-token": "dop_v1_" + "0123456789abcdef" * 4,
    "shopify-token": "shpat_" + "0123456789abcdef0123456789ABCDEF",
    "vault-token": "hvs.CAESIP2jTxc9S2K7Z6CtcFWQv7-044m_oSsxnPE1H3nF89l3GiYKHGh2cy5sQmlIZVNyTWJNcDRsYWJpQjlhYjVlb1cQh6PL8wEYAg",
    "linear-api-key": "lin_api_" + "Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Ef3Hi5Kl7N",
    "age-secret-key": "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE",
}


@pytest.mark.parametrize("rule", list(TOKENS))
@pytest.mark.parametrize("where", ["log", "json", "quoted"])
def test_each_family_is_redacted_bare(rule: str, where: str) -> None:
    token = TOKENS[rule]
    text = {"log": f"2026-01-01 INFO using {token} for the call\n",
            "json": json.dumps({"note": f"configured with {token}"}),
            "quoted": f'client("{token}")'}[where]
    out, hits = R.string(text)
    assert token not in out and token[len(token) // 2:] not in out, out
    assert rule in {h.rule.split(" ")[0] for h in hits}


def test_a_putty_key_file_loses_its_private_lines() -> None:
    out, hits = R.string(PPK)
    assert PPK_PRIVATE.splitlines()[0] not in out and PPK_PRIVATE.splitlines()[2] not in out
    # the file stays readable as one: header, public lines and MAC are no secret
    assert out.startswith("PuTTY-User-Key-File-3: ssh-rsa\n") and "Public-Lines: 1\nAAAAB3Nza" in out
    assert "Private-Lines: 3\n«redacted:hmac:" in out and out.endswith("\nPrivate-MAC: 5f1e2d3c4b5a69788796a5b4c3d2e1f0\n")
    assert [h.rule for h in hits] == ["putty-private-key"]
    crlf, _ = R.string(PPK.replace("\n", "\r\n"))
    assert "kwROSGqQjaiOcvvppn1KrWf23" not in crlf


@pytest.mark.parametrize("text", [
    "whsec_test_secret", "paste the whsec_... value from the dashboard", "GOCSPX-xxxxx",
    "npm_config_registry", "npm_package_version", "npm_lifecycle_event", "the dapi endpoint", "dapitoken",
    "shpat_... goes in the header", "hvs.example", "see ya29.", "lin_api_key", "AGE-SECRET-KEY-1 is the prefix",
    "Private-Lines: 3 lines follow in the file", "dop_v1_ prefix",
])
def test_ordinary_words_of_the_same_beginnings_stay(text: str) -> None:
    assert R.string(text)[0] == text
