"""The redaction engine (mcptap/redact/): keys, patterns, user rules, keyed
placeholders, the per-user key file."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.errors import RedactionError
from mcptap.redact import ds_table, patterns
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import PLACEHOLDER, Keyer
from mcptap.redact.keyfile import ENV_CONFIG_DIR, ENV_KEY, existing_keyer, load_keyer
from mcptap.redact.keys import is_secret_key
from mcptap.redact.patterns import library_error
from mcptap.redact.rules import Rules, build_rules

KEY = Keyer(b"k" * 32)
R = Redactor(Rules(), KEY)

SECRETS = {
    "github": "ghp_" + "Zq3xY9w8V7u6T5s4R3q2P1o0N9m8L7k6J5i4",
    "github_pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "aws": "AKIA" + "QWERTYUIOPASDFGH",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "slack": "xoxb-" + "123456789012-abcdefghijklmnop",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google": "AIza" + "SyA1234567890abcdefghijklmnopqrstuv",
    "openai": "sk-proj-" + "abcdefghijklmnopqrstuvwxyz0123456789",
}
PEM_BODY = "MIIEowIBAAKCAQEA1234567890abcdefghijABCDEFGHIJ\nqrstuvwxyz0123456789+/ABCDEFGHIJKLMNOPQRSTUV=="
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n"


@pytest.mark.parametrize("key", ["password", "passwd", "secret", "token", "api_key", "apiKey", "API-KEY", "authorization",
                                 "cookie", "private_key", "client_secret", "access_token", "refresh_token", "dbPassword",
                                 "githubToken", "X-Api-Key", "credentials"])
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)
    v, hits = R.message({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"arguments": {key: "value-1234"}}})
    assert v["params"]["arguments"][key] == KEY.placeholder("value-1234")
    assert hits[0].rule == f"key:{key}" and hits[0].path == f"params.arguments.{key}"


@pytest.mark.parametrize("key", ["progressToken", "max_tokens", "maxTokens", "tokenType", "apiKeyId", "secretName",
                                 "passwordHint", "name", "key", "nextCursor", "cursor"])
def test_harmless_keys(key: str) -> None:
    assert not is_secret_key(key)


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_token_patterns_inside_text(name: str) -> None:
    token = SECRETS[name]
    out, hits = R.text(f"here: {token} (end)")
    assert token not in out and hits and out.startswith("here: «redacted:hmac:") and out.endswith(" (end)")


def test_pem_block_body_is_redacted_markers_kept() -> None:
    out, hits = R.text("key:\n" + PEM)
    assert PEM_BODY not in out and "-----BEGIN RSA PRIVATE KEY-----" in out and "-----END RSA PRIVATE KEY-----" in out
    assert hits[0].rule == "pem-private-key"


@pytest.mark.parametrize(("text", "secret"), [
    ("postgres://app:Sup3rS3cret@db:5432/x", "app:Sup3rS3cret"),
    ("host=db password=DSN_PASS user=x", "DSN_PASS"),
    ("Server=x;Database=y;Password=ADO_PASS;", "ADO_PASS"),
    ("Authorization: Bearer abc.def.ghi-123456", "abc.def.ghi-123456"),
])
def test_context_patterns_keep_context(text: str, secret: str) -> None:
    out, _ = R.text(text)
    assert secret not in out and out.count("«redacted:hmac:") == 1


def test_embedded_json_text_is_walked() -> None:
    msg = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": '{"user": "bob", "password": "pw-in-json"}'}]}}
    v, hits = R.message(msg)
    assert "pw-in-json" not in v["result"]["content"][0]["text"] and '"user":"bob"' in v["result"]["content"][0]["text"]
    assert hits[0].path == "result.content[0].text.password"


def test_envelope_and_non_strings_untouched() -> None:
    msg = {"jsonrpc": "2.0", "id": "token-abcdef", "method": "tools/call",
           "params": {"_meta": {"progressToken": "tok-123456"}, "arguments": {"password": None, "token": True, "pin": 123456}}}
    v, _ = R.message(msg)
    assert v["id"] == "token-abcdef" and v["method"] == "tools/call" and v["params"]["_meta"] == {"progressToken": "tok-123456"}
    assert v["params"]["arguments"]["password"] is None and v["params"]["arguments"]["token"] is True
    assert v["params"]["arguments"]["pin"] == KEY.placeholder("123456")
    assert msg["params"]["arguments"]["pin"] == 123456      # input never modified


def test_placeholder_is_keyed_not_a_plain_hash() -> None:
    secret = "correct horse battery staple"
    ph = KEY.placeholder(secret)
    assert ph == KEY.placeholder(secret) and ph != Keyer(b"j" * 32).placeholder(secret)
    digest = hashlib.sha256(secret.encode()).hexdigest()
    assert not any(digest[i:i + 8] in ph for i in range(len(digest) - 7))
    assert PLACEHOLDER.fullmatch(ph) and PLACEHOLDER.fullmatch("«redacted:sha256:0123abcd»")


def test_user_rules_keys_paths_patterns() -> None:
    rules = build_rules(keys=["ssn"], paths=["params.arguments.query", "result.rows[*].email"], patterns=[r"EMP-(\d{6})"])
    r = Redactor(rules, KEY)
    v, hits = r.message({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"arguments": {"SSN": "123-45-6789", "query": {"q": "x"},
                                                                                            "note": "for EMP-123456 only"}}})
    a = v["params"]["arguments"]
    assert a["SSN"].startswith("«") and a["query"]["q"].startswith("«") and a["note"] == f"for EMP-{KEY.placeholder('123456')} only"
    v, _ = r.message({"jsonrpc": "2.0", "id": 1, "result": {"rows": [{"email": "a@b.c", "name": "n"}]}})
    assert v["result"]["rows"][0] == {"email": KEY.placeholder("a@b.c"), "name": "n"}
    assert {h.rule for h in hits} == {"key:SSN", "path:params.arguments.query", "user:1"}


def test_rules_file_and_errors(tmp_path) -> None:
    good = tmp_path / "r.toml"
    good.write_text('keys = ["ssn"]\npaths = ["params.x"]\n[patterns]\nemp = \'EMP-\\d+\'\n')
    rules = build_rules(files=[str(good)])
    assert rules.keys == {"ssn"} and rules.patterns == (("emp", r"EMP-\d+"),) and rules.describe()["files"] == [str(good)]
    bad = {"a.toml": "keys = [", "b.toml": "colour = 1", "c.toml": "[patterns]\nx = '(('", "d.toml": "keys = 3",
           "e.toml": "paths = ['a..b[']", "f.toml": "[patterns]\nx = 'a*'"}
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(RedactionError, match=name):
            build_rules(files=[str(tmp_path / name)])
    with pytest.raises(RedactionError, match="bad regular expression"):
        build_rules(patterns=["(unclosed"])
    with pytest.raises(RedactionError, match="cannot read"):
        build_rules(files=[str(tmp_path / "missing.toml")])


def test_key_file_created_0600_and_reused(tmp_path) -> None:
    env = {ENV_CONFIG_DIR: str(tmp_path / "cfg")}
    k1 = load_keyer(env)
    path = tmp_path / "cfg" / "redaction.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert re.fullmatch(r"[0-9a-f]{64}\n", path.read_text())
    from mcptap.redact import keyfile
    keyfile._cached.clear()
    assert load_keyer(env).placeholder("x") == k1.placeholder("x")
    keyfile._cached.clear()
    other = load_keyer({ENV_CONFIG_DIR: str(tmp_path / "other")})
    assert other.placeholder("x") != k1.placeholder("x")
    with pytest.raises(RedactionError, match="not a hex key"):
        load_keyer({ENV_KEY: "zz"})
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "redaction.key").write_text("nothex")
    with pytest.raises(RedactionError, match="not a hex key"):
        load_keyer({ENV_CONFIG_DIR: str(tmp_path / "bad")})


def test_existing_keyer_raises_for_a_key_there_but_unusable(tmp_path) -> None:
    from mcptap.redact import keyfile
    keyfile._cached.clear()
    cfg = {ENV_CONFIG_DIR: str(tmp_path / "cfg")}
    assert existing_keyer(cfg) is None and not (tmp_path / "cfg").exists()      # never creates one
    good = load_keyer(cfg)
    assert existing_keyer(cfg) is good
    for env, words in [({**cfg, ENV_KEY: "not-hex"}, "MCPTAP_REDACT_KEY is not a hex key"),
                       ({**cfg, ENV_KEY: "abcd"}, "MCPTAP_REDACT_KEY is too short")]:
        with pytest.raises(RedactionError, match=words):
            existing_keyer(env)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "redaction.key").write_text("nothex")
    (tmp_path / "dir" / "redaction.key").mkdir(parents=True)
    for env, words in [({ENV_CONFIG_DIR: str(tmp_path / "bad")}, "redaction.key is not a hex key"),
                       ({ENV_CONFIG_DIR: str(tmp_path / "dir")}, "cannot read the redaction key")]:
        with pytest.raises(RedactionError, match=words):
            existing_keyer(env)


def test_detect_secrets_patterns_are_in_use() -> None:
    assert library_error() is None
    out, hits = R.text("SG." + "a" * 22 + "." + "b" * 43)        # SendGrid: only detect-secrets knows it
    assert hits and hits[0].rule.startswith("ds:")


def test_detect_secrets_table_is_the_installed_library_s_patterns() -> None:
    # the table stands for the library only while the library is that version
    # (scripts/gen_ds_table.py regenerates it); any other version is imported
    live = patterns.load_library_patterns()
    assert live, patterns.library_error()
    if patterns.installed_library_version() == ds_table.VERSION:
        assert list(ds_table.PATTERNS) == live
    assert patterns.library_patterns() == live


def test_argv_scrub_does_not_import_detect_secrets() -> None:
    # every `mcptap record` scrubs its argv: importing detect-secrets (requests,
    # urllib3, its scanner) for it cost ~6.5 MiB of the stdio tap's RSS and ~0.3 s
    if patterns.installed_library_version() != ds_table.VERSION:
        pytest.skip("installed detect-secrets is not the table's version: the library is imported")
    code = ("import sys; from mcptap.redact import scrub_argv; "
            "out = scrub_argv(['srv', '--x=SG.' + 'a' * 22 + '.' + 'b' * 43]); "
            "assert 'redacted' in out[1], out; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('detect_secrets', 'requests', 'urllib3')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_other_detect_secrets_version_imports_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "_library", None)
    monkeypatch.setattr(ds_table, "PATTERNS", (("ds:stale", "never-used"),))
    monkeypatch.setattr(ds_table, "VERSION", "0.0-other")
    assert patterns.library_patterns() == patterns.load_library_patterns()
    monkeypatch.setattr(patterns, "_library", None)
    monkeypatch.setattr(ds_table, "VERSION", patterns.installed_library_version())
    assert patterns.library_patterns() == [("ds:stale", "never-used")]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30) | st.sampled_from(list(SECRETS.values()) + [PEM, "password=hunter22"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["password", "name", "token", "text", "apiKey", "data", "progressToken", "x"]), children, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_redaction_is_idempotent_and_leaves_no_known_secret(v) -> None:
    once, _ = R.value(v)
    twice, hits = R.value(once)
    assert twice == once and not hits
    text = repr(once)
    assert not any(s in text for s in SECRETS.values()) and PEM_BODY not in text


@pytest.mark.parametrize(("text", "name"), [
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY="), ("SECRET_KEY=abcd1234", "SECRET_KEY="),
    ("PRIVATE_KEY=zzzzzz", "PRIVATE_KEY="), ("ACCESS_KEY=yyyyyy", "ACCESS_KEY="), ("STRIPE_KEY=sk_xxxxx", "STRIPE_KEY="),
    ("aws_secret_access_key = wJalrXUtnFEMI", "aws_secret_access_key = "), ("export OPENAI_API_KEY=abc123", "export OPENAI_API_KEY="),
    ("db.password: hunter22", "db.password: "), ("my-api-key: 'qwerty12'", "my-api-key: '"),
    ("https://x.blob.core.windows.net/c?sv=2020&sig=AbCdEf123%3D&se=1", "&sig="), ("X-Amz-Signature=abcdef0123456789", "X-Amz-Signature="),
])
def test_an_assignment_to_a_name_ending_in_a_secret_word_is_redacted(text: str, name: str) -> None:
    """Environment and INI assignments whose name ends in a secret word
    (``AWS_SECRET_ACCESS_KEY=…``, ``STRIPE_KEY=…``, a SAS ``sig=``) used to
    survive ``scrub`` and ``report``: the pattern wanted the secret word right
    before the ``=``. Only the secret part is replaced: the name stays."""
    out, hits = R.text(text)
    assert out.count("«redacted:hmac:") == 1 and hits and hits[0].rule == "secret-assignment", out
    assert name + "«redacted:hmac:" in out, out


@pytest.mark.parametrize("text", ["sort_key=name", "primary_key: id", "cache_key=abc123", "public_key: ssh-rsa AAAA",
                                  "signal=SIGTERM", "design: nice", "keyboard=us", "monkey=banana", "passage: text"])
def test_names_that_only_contain_a_secret_word_are_left_alone(text: str) -> None:
    assert R.text(text)[0] == text
