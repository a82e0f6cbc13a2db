"""One rule says which names hold secrets: a JSON key, a ``NAME=`` in text, a command-line
option or assignment, an HTTP header and a URL query name all ask ``keys.secret_name``, so a
name that is a secret in one place is a secret in every other."""

from __future__ import annotations

import json

import pytest

from mcptap.redact import is_secret_name, scrub_argv, scrub_url
from mcptap.redact.default import default_redactor
from mcptap.redact.headers import is_secret_header
from mcptap.redact.keys import is_secret_key
from mcptap.redact.patterns import QUERY_SECRET_NAMES

VALUE = "Zq3xY9w8V7u6"
#: names the two old rules disagreed on, and names both agreed on
NAMES = ["dsn", "SENTRY_DSN", "sessionId", "session_id", "jsessionid", "otp", "pin", "connection_string", "code_verifier",
         "client_assertion", "sshpass", "PGPASS", "apiKeys", "authHeader", "X-Foo-Key", "x-custom-key",
         "key", "session", "signature", "private", "pat", "cacheKey", "sort_key", "stripe_key", "passwordHint", "keyName",
         "token", "GITHUB_TOKEN", "clientSecret", "X-Auth-Token", "password", "api_key", "token-file", "KEY_ID", "port",
         "max_tokens", "keyboard", "monkey", "passthrough", "Mcp-Session-Id", "authType", "publicKey"]


@pytest.mark.parametrize("name", NAMES)
def test_a_name_is_a_secret_everywhere_or_nowhere(name: str) -> None:
    secret = is_secret_key(name)
    assert is_secret_name(name) is secret
    red = default_redactor()
    where = {
        "json": red.string(json.dumps({name: VALUE}))[0],
        "text": red.string(f"{name}={VALUE}")[0],
        "assignment": scrub_argv([f"{name}={VALUE}"])[0],
        "option": " ".join(scrub_argv(["srv", f"--{name}", VALUE])),
        "query": scrub_url(f"https://h/x?{name}={VALUE}&a=1"),
    }
    if "-" not in name.strip("-") or name[0].isupper():          # a header name as HTTP spells them
        where["header"] = scrub_argv([f"{name}: {VALUE}"])[0]
    want = dict.fromkeys(where, secret)
    if name.lower() in QUERY_SECRET_NAMES:       # a query's own names (a signed URL's ``?key=``), also leading a form body
        want["query"] = want["text"] = True
    assert {k: VALUE not in v for k, v in where.items()} == want, where
    assert is_secret_header(name) is (secret or name.lower() in ("x-api-key", "api-key"))


def test_a_secret_options_dsn_keeps_what_it_connects_to() -> None:
    out = scrub_argv(["srv", "--dsn", "host=db password=DSN_PASS1", "--dsn=postgresql://app:PW123456@db/x"])
    assert out[2].startswith("host=db password=«redacted:") and "DSN_PASS1" not in out[2]
    assert out[3].startswith("--dsn=postgresql://") and "PW123456" not in out[3]
    assert scrub_argv(["srv", "--dsn", "plainDsnSecret1"])[2].startswith("«redacted:")
