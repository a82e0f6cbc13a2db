"""Prose and code are not credentials (mcptap/redact/values.py): the ``bearer`` pattern
took any 8-character word after ``token``/``Basic``/``Bearer`` (``The token «…» failed``),
header lines took prose (``Cookie: this site uses cookies…`` to the line's end), and
``secret-assignment`` took keywords, type names, attribute paths and templates
(``token = «…» getToken()``, ``password: «…»``, ``api_key=«…»``)."""

from __future__ import annotations

import pytest

from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules

R = Redactor(Rules(), Keyer(b"k" * 32))


@pytest.mark.parametrize("text", [
    "The token validation failed because the token signature mismatched",
    "Basic authentication is supported. Use basic settings",
    "Bearer authentication requires a header",
    "Each token represents approximately four characters",
    "Authorization: Requires admin privileges",
    "Cookie: this site uses cookies to improve your experience",
    "cookie: accepted",
    "The Set-Cookie: header must include Secure",
    "2024-01-01T00:00:00Z INFO auth: user bob logged in session=42",
    "auth: github",
    "token: Bearer",
    "const token = await getToken();\nconst apiKey = process.env.API_KEY;",
    "interface User { password: string; token?: string }",
    "function login(password: string, token: Token): Promise<void>",
    "let secret_key: [u8; 32] = rng.gen();",
    "client = Client(api_key=api_key, secret=secret)",
    "client = Client(api_key=settings.API_KEY)",
    "connect(password=args.password, host=args.host)",
    "password: ${{ secrets.DB_PASSWORD }}",
    "password: must be at least 8 characters",
    "secret: stored in vault",
])
def test_prose_and_code_stay(text: str) -> None:
    assert R.string(text)[0] == text


@pytest.mark.parametrize(("text", "secret"), [
    ("bearer abcdefgh1234", "abcdefgh1234"),
    ("curl -H 'Authorization: Bearer eyAbCdEfGhIjKlMnOp' x", "eyAbCdEfGhIjKlMnOp"),
    ("use token ghp_short123 here", "ghp_short123"),
    ("Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),                  # base64 of user:pass, no digit
    ("Authorization: Basic Zm9vOmJhcg==", "Zm9vOmJhcg=="),
    ("Authorization: AbCdEfGhIjKlMn", "AbCdEfGhIjKlMn"),
    ("Cookie: session=abc123; csrftoken=def456", "abc123"),
    ("Set-Cookie: sessionid=abcdef123456; Path=/", "abcdef123456"),
    ("cookie: abcdef0123456789", "abcdef0123456789"),
    ("const token = 'await'", "await"),                     # quoted: a value whatever it says
    ("password = hunter2pw", "hunter2pw"),
    ("password: Secret123 is wrong", "Secret123"),
    ("auth: s3cr3tvalue", "s3cr3tvalue"),
    ("auth=github", "github"),                              # a method only after ``auth:``
    ("token=ya29.a0AfH6SMBabcdefghijk", "ya29.a0AfH6SMBabcdefghijk"),
    ("connect(password=hunter2)", "hunter2"),
    ("password: letmein", "letmein"),
])
def test_credentials_of_the_same_shapes_still_go(text: str, secret: str) -> None:
    out, hits = R.string(text)
    assert secret not in out and hits, out
