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


# -- 2. command-line flags in free text, argv as a JSON list -------------------------------

@pytest.mark.parametrize(("s", "secret"), [
    ("psql --password=hunter2hunter -h db", "hunter2hunter"),
    ("gh --token=abcdef123456", "abcdef123456"),
    ("tool --api-key=abcdef123456 --verbose", "abcdef123456"),
    ("tool --password hunter2hunter --verbose", "hunter2hunter"),
    ('tool --password "correct horse 9" x', "correct horse 9"),
    ("sshpass -p hunter2hunter ssh -p 2222 host", "hunter2hunter"),
    ("docker login -u bob -p hunter2hunter registry.example.com", "hunter2hunter"),
    ("redis-cli -h cache -a r3disPassw0rd ping", "r3disPassw0rd"),
    ("aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
])
def test_command_line_flags_in_text(s: str, secret: str) -> None:
    out = text(s)
    assert secret not in out and "«redacted:hmac:" in out and text(out) == out
    assert out.split()[0] == s.split()[0]


@pytest.mark.parametrize("s", [
    "ssh -p 2222 host", "docker run -u 1000:1000 img", "sqlmap -u http://example.com/?id=1", "mysql -p",
    "mysql -u root -p mydb", "mkdir -p build", "docker login --password-stdin -u bob",
    "use --token to pass a token, or --token-file PATH", "sshpass -f ~/.pw ssh -p 2222 host",
    "aws configure set region eu-west-1", "npm config set token for you later",
])
def test_ordinary_command_lines_stay(s: str) -> None:
    assert text(s) == s


@pytest.mark.parametrize(("args", "secret"), [
    (["--password", "hunter2hunter"], "hunter2hunter"),
    (["curl", "-u", "admin:hunter2hunter", "https://example.com"], "hunter2hunter"),
    (["mysql", "-uroot", "-phunter2hunter"], "hunter2hunter"),
    (["sshpass", "-p", "hunter2hunter", "ssh", "host"], "hunter2hunter"),
    (["redis-cli", "-a", "r3disPassw0rd"], "r3disPassw0rd"),
    (["tool", "--api-key=abcdef123456"], "abcdef123456"),
])
def test_argv_as_a_json_list(args: list[str], secret: str) -> None:
    out, hits = R.message({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {"args": args}}})
    got = out["params"]["arguments"]["args"]
    assert secret not in str(got) and len(got) == len(args) and got[0] == args[0] and hits
    assert R.message(out)[0] == out


@pytest.mark.parametrize("args", [
    ["ssh", "-p", "2222", "host"], ["docker", "run", "-u", "1000:1000", "img"], ["mkdir", "-p", "build"],
    ["sqlmap", "-u", "http://example.com/?id=1"], ["mysql", "-p"], ["ls", "-la", "/tmp"], ["apple", "banana"],
])
def test_ordinary_argv_lists_stay(args: list[str]) -> None:
    msg = {"params": {"arguments": {"args": args}}}
    assert R.message(msg)[0] == msg


def test_header_tuples() -> None:
    msg = {"params": {"headers": [["X-Api-Key", "abcdef0123456789"], ["Authorization", "abcdef123456"], ["Accept", "text/html"]]}}
    got = R.message(msg)[0]["params"]["headers"]
    assert got[0][0] == "X-Api-Key" and got[1][0] == "Authorization" and got[2] == ["Accept", "text/html"]
    assert "abcdef0123456789" not in str(got) and "abcdef123456" not in str(got)


def test_a_schemas_required_list_is_no_pair() -> None:
    msg = {"result": {"inputSchema": {"required": ["password", "username"], "x": [["token", "usage"]]}}}
    out = R.message(msg)[0]
    assert out["result"]["inputSchema"]["required"] == ["password", "username"]


# -- 3. name/value pairs in other shapes ----------------------------------------------------

@pytest.mark.parametrize("obj", [
    {"Name": "DB_PASSWORD", "Value": "hunter2hunter"},
    {"NAME": "api_key", "VALUE": "hunter2hunter"},
    {"Key": "GITHUB_TOKEN", "Value": "hunter2hunter"},
    {"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "hunter2hunter"}},
    {"Parameter": {"Name": "/prod/db/conn", "Type": "SecureString", "Value": "hunter2hunter"}},
    {"Parameters": [{"Name": "/prod/db/password", "Type": "String", "Value": "hunter2hunter"}]},
    {"environment": [{"Name": "DB_PASSWORD", "Value": "hunter2hunter"}, {"Name": "REGION", "Value": "eu-west-1"}]},
])
def test_name_value_pairs(obj: dict[str, object]) -> None:
    out, hits = R.message({"result": obj})
    assert "hunter2hunter" not in str(out) and hits
    assert "eu-west-1" in str(out) or "eu-west-1" not in str(obj)
    assert R.message(out)[0] == out


def test_deep_name_value_pairs() -> None:
    deep: object = {"Name": "DB_PASSWORD", "Value": "hunter2hunter"}
    for _ in range(150):
        deep = {"x": deep}
    assert "hunter2hunter" not in str(R.message({"result": deep})[0])


@pytest.mark.parametrize("obj", [
    {"Name": "/prod/app/region", "Type": "String", "Value": "eu-west-1"},
    {"Tags": [{"Key": "Environment", "Value": "prod"}, {"Key": "Name", "Value": "web-1"}]},
    {"Name": "Value", "Value": "Name"},
])
def test_ordinary_name_value_pairs_stay(obj: dict[str, object]) -> None:
    msg = {"result": obj}
    assert R.message(msg)[0] == msg


# -- 4. SQL that sets a password --------------------------------------------------------------

@pytest.mark.parametrize(("s", "secret", "kept"), [
    ("CREATE USER bob WITH PASSWORD 'hunter2hunter';", "hunter2hunter", "CREATE USER bob WITH PASSWORD '"),
    ("ALTER USER alice IDENTIFIED BY 'x';", "'x'", "ALTER USER alice IDENTIFIED BY '"),
    ("CREATE USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY 's3cret''pw';", "s3cret", "CREATE USER 'app'@'%'"),
    ("CREATE ROLE app LOGIN PASSWORD 'app5ecret';", "app5ecret", "CREATE ROLE app LOGIN PASSWORD '"),
    ("alter role app password 'app5ecret' valid until 'infinity'", "app5ecret", "valid until 'infinity'"),
    ("SET PASSWORD FOR u = PASSWORD('hunter2hunter')", "hunter2hunter", "SET PASSWORD FOR u = PASSWORD('"),
    ("SET PASSWORD = 'hunter2hunter';", "hunter2hunter", "SET PASSWORD = '"),
    ("CREATE USER scott IDENTIFIED BY tiger42;", "tiger42", "CREATE USER scott IDENTIFIED BY "),
])
def test_sql_passwords(s: str, secret: str, kept: str) -> None:
    out = text(s)
    assert secret not in out and kept in out and "«redacted:hmac:" in out and text(out) == out


@pytest.mark.parametrize("s", [
    "The password you entered was wrong", "The user was identified by the server", "user bob password reset",
    "SET PASSWORD requires the privilege", "reset the user's password, then log in", "identified by name",
])
def test_sql_words_in_prose_stay(s: str) -> None:
    assert text(s) == s
