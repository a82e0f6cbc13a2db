"""Secret shapes that got through redaction (fix-scrub4): JSON with escaped quotes inside
text, command-line flags in free text and argv as a JSON list, name/value pairs in other
shapes (header tuples, ``{"Name", "Value"}``, AWS SSM parameters), SQL statements that set
a password. Each secret goes; the ordinary text around it stays."""

from __future__ import annotations

import pytest

from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules

R = Redactor(Rules(), Keyer(b"k" * 32))


def text(s: str) -> str:
    return R.string(s)[0]


# -- 1. JSON with escaped quotes inside text ----------------------------------------------

@pytest.mark.parametrize(("s", "secret", "kept"), [
    (r'{\"password\": \"hunter2hunter\"}', "hunter2hunter", r'{\"password\": \"'),
    (r'{\"access_token\":\"ya29.abcDEF123456\"}', "ya29.abcDEF123456", r'{\"access_token\":\"'),
    (r'{\\\"password\\\": \\\"hunter2hunter\\\"}', "hunter2hunter", r'{\\\"password\\\": \\\"'),
    (r'password=\"hunter2hunter\"', "hunter2hunter", r'password=\"'),
    (r'password="hun\"ter2hunter"', "ter2hunter", 'password="'),
    (r'log {\"password\": \"a\\\"b2\\\\c3\"} done', "b2", r'log {\"password\": \"'),
    (r'{\\\"api_key\\\":\\\"abcdef123456\\\", \\\"user\\\":\\\"bob\\\"}', "abcdef123456", r'\\\"user\\\":\\\"bob\\\"}'),
])
def test_escaped_quotes_end_the_value_at_the_matching_quote(s: str, secret: str, kept: str) -> None:
    out = text(s)
    assert secret not in out and kept in out and "«redacted:hmac:" in out
    assert out.endswith(s[-1]) and text(out) == out


def test_an_escaped_scheme_stays() -> None:
    out = text(r'{\"authorization\": \"Bearer abcDEF123456\"}')
    assert "Bearer «redacted:hmac:" in out and "abcDEF123456" not in out
