"""Secrets in argv never reach a capture in clear (mcptap/redact/argv.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.redact import is_secret_name, placeholder, scrub_argv, scrub_url

PH = re.compile(r"«redacted:hmac:[0-9a-f]{12}»")
SECRET = "s3cr3t-VALUE-123"


def test_placeholder_is_stable_and_short_hash() -> None:
    assert placeholder(SECRET) == placeholder(SECRET)
    assert placeholder(SECRET) != placeholder(SECRET + "x")
    assert PH.fullmatch(placeholder(SECRET))


@pytest.mark.parametrize(("argv", "expected"), [
    (["srv", "--token", SECRET], ["srv", "--token", placeholder(SECRET)]),
    (["srv", "--api-key=" + SECRET], ["srv", "--api-key=" + placeholder(SECRET)]),
    (["srv", "--client-secret", SECRET, "--port", "8080"], ["srv", "--client-secret", placeholder(SECRET), "--port", "8080"]),
    (["srv", "--apiKey", SECRET], ["srv", "--apiKey", placeholder(SECRET)]),
    (["env", "GITHUB_TOKEN=" + SECRET, "srv"], ["env", "GITHUB_TOKEN=" + placeholder(SECRET), "srv"]),
    (["env", "DB_PASSWORD=" + SECRET], ["env", "DB_PASSWORD=" + placeholder(SECRET)]),
    (["env", "OPENAI_API_KEY=" + SECRET], ["env", "OPENAI_API_KEY=" + placeholder(SECRET)]),
    (["srv", "-H", "Authorization: Bearer " + SECRET], ["srv", "-H", "Authorization: Bearer " + placeholder(SECRET)]),
    (["srv", "--header", "X-Api-Key: " + SECRET], ["srv", "--header", "X-Api-Key: " + placeholder(SECRET)]),
])
def test_secret_options_assignments_and_headers(argv: list[str], expected: list[str]) -> None:
    assert scrub_argv(argv) == expected


@pytest.mark.parametrize("argv", [
    ["python", "-u", "server.py", "--port", "8080", "--verbose"],
    ["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"],
    ["srv", "--token-file", "/run/secrets/tok", "--key-id", "abc", "LOG_LEVEL=debug"],
    ["srv", "--monkey", "banana", "--keyboard", "us", "https://example.com/path?q=mcp&page=2"],
    ["srv", "--max-tokens", "1000"],
])
def test_harmless_arguments_are_untouched(argv: list[str]) -> None:
    assert scrub_argv(argv) == argv


def test_url_credentials_and_token_params() -> None:
    url = f"https://alice:{SECRET}@api.example.com/v1/mcp?access_token={SECRET}&page=2&sig=abc#frag"
    out = scrub_url(url)
    assert SECRET not in out and "alice" not in out
    assert out.startswith("https://" + placeholder(f"alice:{SECRET}") + "@api.example.com/v1/mcp?")
    assert f"access_token={placeholder(SECRET)}" in out
    assert "page=2" in out and f"sig={placeholder('abc')}" in out and out.endswith("#frag")


def test_urls_inside_option_values_and_free_text() -> None:
    argv = ["srv", f"--upstream=https://u:{SECRET}@h/x", f"see https://h/?apiKey={SECRET} now"]
    out = scrub_argv(argv)
    assert all(SECRET not in a for a in out)
    assert out[1].startswith("--upstream=https://«redacted:hmac:")


@pytest.mark.parametrize("token", [
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2",
    "github_pat_" + "11ABCDEFG0123456789_abcdefghijkl",
    "sk-" + "proj-abcdefghijklmnopqrstuvwxyz012345",
    "xoxb-" + "1234567890-abcdefghij",
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
])
def test_well_known_token_shapes_anywhere(token: str) -> None:
    out = scrub_argv(["srv", "--config", f"prefix/{token} suffix", token])
    assert all(token not in a for a in out)


def test_same_secret_same_placeholder_across_argvs() -> None:
    a = scrub_argv(["srv", "--token", SECRET])
    b = scrub_argv(["srv", f"--token={SECRET}"])
    assert a[2] == b[1].split("=", 1)[1]


def test_scrubbing_is_idempotent() -> None:
    argv = ["srv", "--token", SECRET, f"https://u:p@h/?token={SECRET}", "API_KEY=x"]
    once = scrub_argv(argv)
    assert scrub_argv(once) == once


@pytest.mark.parametrize(("name", "secret"), [
    ("token", True), ("GITHUB_TOKEN", True), ("clientSecret", True), ("X-Auth-Token", True),
    ("apikey", True), ("AWS_SECRET_ACCESS_KEY", True), ("password", True), ("Cookie", True),
    ("token-file", False), ("KEY_ID", False), ("port", False), ("max_tokens", False), ("keyboard", False),
    ("authToken", True), ("GITHUB_PERSONAL_ACCESS_TOKEN", True), ("monkey", False), ("passthrough", False),
])
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@given(st.lists(st.text(max_size=40), max_size=8))
def test_never_raises_and_keeps_length(argv: list[str]) -> None:
    out = scrub_argv(argv)
    assert len(out) == len(argv)
    assert all(isinstance(a, str) for a in out)


def test_punctuation_after_a_url_or_a_value_is_kept_and_the_secret_keeps_its_placeholder() -> None:
    """The legacy endpoint finding says "(rewritten by the tap to URL)": the scrubbed URL
    swallowed the ")" and its token got another placeholder than everywhere else (the
    HMAC of "token)"). A closing bracket the value does not open, or a sentence's full stop
    after a URL, is the text's: kept, and the secret's placeholder is the one it has alone."""
    from mcptap.redact.argv import scrub_text
    from mcptap.redact.default import default_redactor

    url = "http://127.0.0.1:18802/messages?sessionId=s1&token=tok_SECRETVALUE123456"
    alone = scrub_text(url)
    assert "SECRETVALUE" not in alone
    for text in (f"resolves to x (rewritten by the tap to {url})", f"[{url}]", f"{{{url}}}", f"see {url}.", f"at {url}, then"):
        assert scrub_text(text) == text.replace(url, alone), text
    red = default_redactor()
    value = red.string("password=hunter2secret")[0]
    for text in ("(password=hunter2secret)", "[password=hunter2secret]"):
        assert red.string(text)[0] == text[0] + value + text[-1], text
    # a bracket the value opens is the value's
    whole = red.string("password=9hun(ter2sec)")[0]
    assert "ter2sec" not in whole and whole.endswith("»") and whole == red.string("password=9hun(ter2sec) x")[0][:-2]
