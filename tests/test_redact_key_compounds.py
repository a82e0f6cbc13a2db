"""keys.py: a name of SECRET_KEYS is a secret in its compound forms too (``serviceCredential``,
``MY_SERVICE_CREDENTIAL``: server-everything's get-env printed one in clear), as a header
name's last word is (headers.py); and so in text, argv and query names (one name rule)."""

from __future__ import annotations

import pytest

from mcptap.redact.default import default_redactor
from mcptap.redact.headers import is_secret_header
from mcptap.redact.keys import SECRET_KEYS, is_secret_key

#: names left out on purpose: too short or too common as the end of an ordinary word
#: (``spin``, ``mapPin``, ``bypass``, ``hotp``…), a mechanism rather than a value
#: (``twoFactorAuthentication``), or a query name only (``x-amz-signature``)
NOT_AS_ENDING = {"pass", "pin", "otp", "sig", "authentication", "xamzsignature", "xgoogsignature"}


@pytest.mark.parametrize("name", sorted(SECRET_KEYS - NOT_AS_ENDING))
def test_every_secret_name_is_one_after_another_word(name: str) -> None:
    for form in ("service" + name[0].upper() + name[1:], "SERVICE_" + name.upper(), "my-service-" + name):
        assert is_secret_key(form), form


@pytest.mark.parametrize("name", ["credential", "authorization", "jwt"])
def test_a_header_last_word_is_a_json_key_ending(name: str) -> None:
    assert is_secret_header("X-Upstream-" + name.capitalize())
    assert is_secret_key("upstream" + name.capitalize())


def test_get_env_output_is_redacted() -> None:
    text = '{"MY_SERVICE_CREDENTIAL": "s3rv1ce-cr3d", "serviceCredential": "s3rv1ce-cr3d", "credentialId": "abc123"}'
    out, _ = default_redactor().string("env: MY_SERVICE_CREDENTIAL=s3rv1ce-cr3d serviceCredential: s3rv1ce-cr3d")
    assert "s3rv1ce" not in out
    out, _ = default_redactor().string(text)
    assert "s3rv1ce" not in out and '"credentialId":"abc123"' in out
