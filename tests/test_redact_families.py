"""Which part of a pattern's match is the secret (mcptap/redact/patterns.py):
detect-secrets' groups are often a token's prefix (``(glpat|gldt|…)-…``), so a
library match is replaced whole unless audited; built-in patterns name their
secret group. One token of every detect-secrets pattern."""

from __future__ import annotations

import re

import pytest

from mcptap.redact import ds_table
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.patterns import BUILTIN, LIBRARY_VALUE_GROUP
from mcptap.redact.rules import Rules, build_rules
from mcptap.redact.scanner import Scanner

KEY = Keyer(b"k" * 32)
R = Redactor(Rules(), KEY)
H64 = "0123456789abcdef" * 4

#: (text, secret) for each detect-secrets pattern in ds_table order
DS_SAMPLES: list[tuple[str, str]] = [
    ("id AKIAQWERTYUIOPASDFGH end", "AKIAQWERTYUIOPASDFGH"),
    ('aws_secret_key = "' + "A" * 20 + "b" * 20 + '"', "A" * 20 + "b" * 20),
    ("AccountKey=" + "Ab1+" * 22 + ";", "Ab1+" * 22),
    ("see ftp://someuser:p4ssw0rdZ@host/x", "p4ssw0rdZ"),
    ("cloudant_key = " + H64, H64),
    ("cloudant_password = abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
    ("https://acct:" + H64 + "@acct.cloudant.com", H64),
    ("https://acct:abcdefghijklmnopqrstuvwx@acct.cloudant.com", "abcdefghijklmnopqrstuvwx"),
    ("bot MTAxMjM0NTY3ODkwMTIzNDU2.GAbCdE.abcdefghijklmnopqrstuvwxyz0 x", "abcdefghijklmnopqrstuvwxyz0"),
    ("t ghp_" + "Zq3xY9w8V7u6T5s4R3q2P1o0N9m8L7k6J5i4" + " x", "Zq3xY9w8V7u6T5s4R3q2P1o0N9m8L7k6J5i4"),
    ("t glpat-abcdefghij0123456789 x", "abcdefghij0123456789"),
    ("t GR1348941abcdefghij0123456789 x", "abcdefghij0123456789"),
    ("t glcbt-ab_abcdefghij0123456789 x", "abcdefghij0123456789"),
    ("t glimt-abcdefghij0123456789abcde x", "abcdefghij0123456789abcde"),
    ("t glptt-" + "abcdefghij" * 4 + " x", "abcdefghij" * 4),
    ("t glagent-" + "abcdefghij" * 5 + " x", "abcdefghij" * 5),
    ("t gloas-" + "abcdefgh" * 8 + " x", "abcdefgh" * 8),
    ("ibm_cloud_iam_key = " + "aB3_" * 11, "aB3_" * 11),
    ("cos_hmac_secret_access_key = " + "0123456789abcdef" * 3, "0123456789abcdef" * 3),
    ("mc 0123456789abcdef0123456789abcdef-us12 x", "0123456789abcdef0123456789abcdef"),
    ("//registry.npmjs.org/:_authToken=npm_abcdefghijklmnop1234", "npm_abcdefghijklmnop1234"),
    ("k sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst x", "abcdefghijklmnopqrstT3BlbkFJ"),
    ("p pypi-AgEIcHlwaS5vcmc" + "x" * 70 + " e", "x" * 70),
    ("p pypi-AgENdGVzdC5weXBpLm9yZw" + "y" * 70 + " e", "y" * 70),
    ("s SG." + "a" * 22 + "." + "b" * 43 + " e", "b" * 43),
    ("s xoxb-1234567890-abcdefghijk x", "abcdefghijk"),
    ("https://hooks.slack.com/services/T01234567/B01234567/abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
    ("softlayer_api_key = " + H64, H64),
    ("https://api.softlayer.com/soap/v3/" + H64, H64),
    ("s sq0csp-" + "a" * 43 + " x", "a" * 43),
    ("s rk_live_" + "a1" * 12 + " x", "a1" * 12),
    ("t 123456789:" + "A" * 35 + " x", "A" * 35),
    ("t AC" + "0123456789abcdef" * 2 + " x", "0123456789abcdef" * 2),
    ("t SK" + "0123456789abcdef" * 2 + " x", "0123456789abcdef" * 2),
]


def test_one_sample_for_every_detect_secrets_pattern() -> None:
    assert len(DS_SAMPLES) == len(ds_table.PATTERNS)
    for (name, rx), (text, _secret) in zip(ds_table.PATTERNS, DS_SAMPLES, strict=True):
        assert re.search(rx, text), (name, text)


@pytest.mark.parametrize(("i", "text", "secret"), [(i, t, s) for i, (t, s) in enumerate(DS_SAMPLES)])
def test_every_detect_secrets_pattern_loses_its_secret(i: int, text: str, secret: str) -> None:
    name, rx = ds_table.PATTERNS[i]
    out, hits = R.text(text)
    assert secret not in out and hits, (name, out)
    # the pattern on its own, as the engine runs it (no built-in pattern covering for it)
    alone, spans = Scanner([(name, rx)], Rules().first_group_patterns()).redact(text, lambda s, r: "«X»")
    assert spans and secret not in alone, (name, alone)
    if name not in LIBRARY_VALUE_GROUP:
        assert alone.count("«X»") == 1 and re.sub(rx, "«X»", text, count=1) == alone


def test_prefix_group_is_not_the_secret_and_tokens_differ() -> None:
    # (glpat|gldt|…) is group 1: every GitLab token got the HMAC of "glpat", its body in clear
    a, _ = R.text("glpat-abcdefghij0123456789")
    b, _ = R.text("glpat-zyxwvutsrq9876543210")
    assert "abcdefghij" not in a and "zyxwvutsrq" not in b and a != b
    c, _ = R.text("ghr_" + "Q" * 36)
    assert "QQQQ" not in c


def test_audited_value_groups_keep_their_context() -> None:
    out, _ = R.text("see ftp://someuser:p4ssw0rdZ@host/x")
    assert out.startswith("see ftp://") and out.endswith("@host/x")


def test_builtin_patterns_name_their_secret() -> None:
    for name, rx in BUILTIN:
        compiled = re.compile(rx)
        assert all(n.startswith(("secret", "_")) or n == "name" for n in compiled.groupindex), name
        assert compiled.groups == len(compiled.groupindex), f"{name}: an unnamed group would be taken for the secret"


def test_user_pattern_group_one_is_the_secret_or_a_named_one() -> None:
    red = Redactor(build_rules(patterns=[r"EMP-(\d{6})", r"(emp|EMP)#(?P<secret>\d{4})"], builtin=False), KEY)
    out, _ = red.text("EMP-123456 and EMP#9876")
    assert out.startswith("EMP-«redacted:") and "123456" not in out and "EMP#«redacted:" in out and "9876" not in out


# -- command lines: curl -u user:pass, mysql -pPASS (mcptap/redact/argv.py; patterns cli-user-password, mysql-password)

def test_argv_user_password_and_attached_mysql_password() -> None:
    from mcptap.redact.argv import scrub_argv

    out = scrub_argv(["curl", "-u", "argu:argpw123456", "--user", "a:b12345678", "--user=c:d1234567", "-ue:f1234567", "https://x"])
    assert out[0::2][:1] == ["curl"] and not any(pw in " ".join(out) for pw in ("argpw123456", "b12345678", "d1234567", "f1234567"))
    assert out[2].startswith("argu:«redacted:") and out[4].startswith("a:«") and out[5].startswith("--user=c:«")
    assert out[6].startswith("-ue:«") and out[7] == "https://x"
    out = scrub_argv(["mysql", "-u", "root", "-pMyRootPass123", "db"])
    assert out[:3] == ["mysql", "-u", "root"] and out[3].startswith("-p«redacted:") and out[4] == "db"
    # ordinary: no password given, a uid:gid, a port, -p in other programs, a URL after -u
    for argv in (["mysql", "-u", "root", "-p", "db"], ["docker", "run", "-u", "1000:1000", "img"], ["ssh", "-p", "2222", "h"],
                 ["grep", "-pattern", "x"], ["sqlmap", "-u", "https://example.com/?id=1"]):
        assert scrub_argv(argv) == argv, argv


@pytest.mark.parametrize(("text", "secret"), [
    ("curl -u admin:curlpass777 https://x", "curlpass777"),
    ('{"cmd": "curl -u alice:S3cretPassw0rd https://api.x.com/v1"}', "S3cretPassw0rd"),
    ("curl --user bob:pw12345678 x", "pw12345678"),
    ("curl --user=bob:pw12345678 x", "pw12345678"),
    ("curl -ubob:pw12345678 x", "pw12345678"),
    ("$ mysql -h db -u root -pMyRootPass123 mydb", "MyRootPass123"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://x", "dXNlcjpwYXNzd29yZA=="),
    ("curl -H 'X-Api-Key: apikey0123456789' https://x", "apikey0123456789"),
])
def test_command_lines_in_text_lose_passwords(text: str, secret: str) -> None:
    out, hits = R.string(text)
    assert secret not in out and hits, out


@pytest.mark.parametrize("text", ["docker run -u 1000:1000 img", "mysql -u root -p mydb", "sort -u a:b", "ps -u root"])
def test_command_lines_without_passwords_stay(text: str) -> None:
    assert R.string(text)[0] == text


@pytest.mark.parametrize(("text", "secrets"), [
    ("<password>xmlpass123</password><apiKey>xmlkey456789</apiKey>", ["xmlpass123", "xmlkey456789"]),
    ("model hf_abcdefghijklmnopqrstuvwxyzABCDEF12 loaded", ["abcdefghijklmnopqrstuvwxyz"]),
    ("users:\n- name: u\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0E=\n    token: kubetoken0123456789\n",
     ["LS0tLS1CRUdJTiBSU0E=", "kubetoken0123456789"]),
])
def test_xml_huggingface_and_kubeconfig(text: str, secrets: list[str]) -> None:
    out, _ = R.string(text)
    assert not any(s in out for s in secrets), out


def test_xml_elements_of_ordinary_names_stay() -> None:
    text = "<name>widget</name><sortKey>a1</sortKey><password>required</password><token></token>"
    assert R.string(text)[0] == text
