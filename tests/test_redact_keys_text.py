"""A secret's name is the same in JSON and in text (mcptap/redact/keys.py,
patterns.py ``secret-assignment``): ``STRIPE_KEY=…`` in a log was redacted while
``{"STRIPE_KEY": …}`` (valid JSON: walked by key) was kept, and names such as
``SENTRY_DSN``, ``webhookSigningKey``, ``privateKeyPem``, ``basicAuth`` were kept
in both."""

from __future__ import annotations

import json

import pytest

from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.keys import SECRET_ENDINGS, SECRET_IDS, SECRET_KEYS, SECRET_NEEDLES, is_secret_key
from mcptap.redact.rules import Rules

R = Redactor(Rules(), Keyer(b"k" * 32))
VALUE = "Zx9abcdef123456"

SECRET = ["password", "dbPassword", "db_password", "DB_PASSWORD", "STRIPE_KEY", "LICENSE_KEY", "HMAC_KEY", "SENTRY_DSN",
          "ANTHROPIC_AUTH", "webhookSigningKey", "dataEncryptionKey", "privateKeyPem", "sshKey", "basicAuth", "authKey",
          "appKey", "api_key", "apiKey", "secret_key", "SECRET_KEY_BASE", "client_secret", "token", "auth", "cookie",
          "sessionId", "session_id", "sig", "x-amz-signature", "accountkey", "client_key", "db_key", "priv_key",
          "credentials", "creds", "dsn", "connection_string", "AWS_SECRET_ACCESS_KEY", "db.password", "my-api-key",
          "licenseKey", "hmacKey", "signing_key"]
ORDINARY = ["sort_key", "public_key", "publicKey", "primaryKey", "keyName", "idempotencyKey", "SORT_KEY", "PUBLIC_KEY",
            "PRIMARY_KEY", "PARTITION_KEY", "progressToken", "maxTokens", "inputTokens", "nextCursor", "cursor",
            "tokenType", "passwordHint", "apiKeyId", "secretName", "monkey", "oauth", "authType", "keyId", "cacheKey",
            "hash_key", "database_url", "session", "signature", "description", "name"]


@pytest.mark.parametrize("name", SECRET)
def test_secret_names_in_json_and_in_text(name: str) -> None:
    assert is_secret_key(name)
    for text in (f"{name}={VALUE}", f"{name}: {VALUE}", f'{name}="{VALUE}"', json.dumps({name: VALUE}),
                 json.dumps({"env": {name: VALUE}}), "log: " + json.dumps({name: VALUE})[:-1]):    # the last: not valid JSON
        out, _ = R.string(text)
        assert VALUE not in out, (name, text, out)


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_names_stay_in_json_and_in_text(name: str) -> None:
    assert not is_secret_key(name)
    for text in (f"{name}={VALUE}", json.dumps({name: VALUE})):
        out, _ = R.string(text)
        assert VALUE in out, (name, text, out)


def test_env_object_as_the_tester_had_it() -> None:
    env = {k: f"v-{k}-123456" for k in ("STRIPE_KEY", "LICENSE_KEY", "HMAC_KEY", "SENTRY_DSN", "ANTHROPIC_AUTH",
                                        "webhookSigningKey", "dataEncryptionKey", "privateKeyPem", "sshKey", "basicAuth",
                                        "authKey", "appKey")}
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": json.dumps({"env": env})}]}}
    out, hits = R.message(msg)
    assert not any(v in json.dumps(out) for v in env.values()) and len(hits) == len(env)


def test_a_rejected_name_does_not_hide_a_secret_in_its_value() -> None:
    out, _ = R.text(f"note: password={VALUE} done")
    assert VALUE not in out and out.startswith("note: password=«redacted:")


def test_every_secret_name_holds_a_needle() -> None:
    # the text rule runs only on strings holding one of SECRET_NEEDLES
    for word in (*SECRET_KEYS, *SECRET_ENDINGS, *SECRET_IDS, "stripe_key", "basicauth"):
        assert any(n in word for n in SECRET_NEEDLES), word


def test_authorization_scheme_is_not_taken_for_the_credential() -> None:
    out, _ = R.text("Authorization: Bearer abcdef0123456789xyz")
    assert out.startswith("Authorization: Bearer «redacted:") and "abcdef0123456789xyz" not in out


# -- ordinary data that looked like secrets (tester's false positives)

@pytest.mark.parametrize("text", [
    "Authorization: required", "cookie: none set", "token = get_token(); password = input()", "token = os.environ['TOKEN']",
    "password: ${DB_PASSWORD}", "api_key = $API_KEY", "https://example.com/page?key=home&code=python",
    "see postgresql://app@db/x", "password: not set",
])
def test_plain_words_code_and_user_names_stay(text: str) -> None:
    assert R.string(text)[0] == text


@pytest.mark.parametrize(("text", "secret"), [
    ("password = hunter2pw", "hunter2pw"), ('token = "get_token()"', "get_token()"), ("Authorization: abcdef123456", "abcdef123456"),
    ("cookie: sid=abcdef123", "abcdef123"), ("https://x/cb?code=4/0AbCdEf123&state=x", "4/0AbCdEf123"),
    ("https://x/?key=AbCdEfGhIjKl", "AbCdEfGhIjKl"), ("postgresql://app:pw123456@db/x", "pw123456"),
    ("https://ghp_" + "a1B2" * 9 + "@github.com/x", "a1B2a1B2"),
])
def test_secrets_of_the_same_shapes_still_go(text: str, secret: str) -> None:
    assert secret not in R.string(text)[0]


def test_error_data_code_beside_state_is_not_an_oauth_code() -> None:
    msg = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad", "data": {"code": "E_PASSWORD_TOO_SHORT",
                                                                                          "state": "validating"}}}
    assert R.message(msg) == (msg, [])
    oauth = {"code": "SplxlOBeZQQYbYS6WxSbIA", "state": "xyz"}
    assert "SplxlOBeZQQYbYS6WxSbIA" not in json.dumps(R.value(oauth)[0])


def test_argv_user_name_alone_stays() -> None:
    from mcptap.redact.argv import scrub_argv

    assert scrub_argv(["psql", "postgresql://app@db/x"]) == ["psql", "postgresql://app@db/x"]
    assert "pw123456" not in scrub_argv(["psql", "postgresql://app:pw123456@db/x"])[1]


@pytest.mark.parametrize("name", ["DB_PASS", "SMTP_PASS", "PGPASS", "DB_PWD", "MYSQL_PWD", "SSHPASS", "db-pass", "dbPwd"])
def test_pass_and_pwd_names_are_secrets(name: str) -> None:
    assert is_secret_key(name)
    for text in (f"{name}={VALUE}", json.dumps({name: VALUE})):
        assert VALUE not in R.string(text)[0], text


@pytest.mark.parametrize("name", ["bypass", "render_pass", "firstPass", "compass", "overpass"])
def test_other_pass_names_stay(name: str) -> None:
    assert not is_secret_key(name)
