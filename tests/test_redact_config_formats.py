"""Secret formats tools return as text (a file's content, a config dump, a log): ODBC/ADO.NET
and Azure connection strings with values of several words or in braces, ``.netrc``, ``.pgpass``,
``wp-config.php`` ``define()``, ``web.config``/Spring XML settings, YAML block scalars, and quotes
written as escapes (``\\'``, ``\\u0027``, ``\\x27``). Each secret goes, whole, and the text around it
stays; ordinary prose of the same words stays as it is; scrubbing twice is scrubbing once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import PLACEHOLDER, Keyer
from mcptap.redact.rules import Rules
from scripted import c2s, handshake, record, req, res, s2c

R = Redactor(Rules(), Keyer(b"k" * 32))

CASES = [
    # (text, the secret (every piece of it must go), text that must stay)
    ("Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd={Str0ng;Pass}}w0rd};Encrypt=yes", "Str0ng;Pass}}w0rd", ";Encrypt=yes"),
    ("Provider=SQLOLEDB;Data Source=x;User Id=sa;Password=p@ss w0rd here;", "p@ss w0rd here", "User Id=sa;Password="),
    ("Server=x; Password=correct horse battery; Database=app", "correct horse battery", "; Database=app"),
    ("Password=two words; Server=db", "two words", "; Server=db"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abcDEF123+/xyz==;EndpointSuffix=core.windows.net",
     "abcDEF123+/xyz==", "EndpointSuffix=core.windows.net"),
    ("machine api.github.com login bob password s3cretpw42", "s3cretpw42", "login bob password "),
    ("machine example.com\n  login bob\n  password hunter 2\n", "hunter", "login bob"),
    ('default login anonymous password "two words"', "two words", "login anonymous"),
    ("db.example.com:5432:appdb:appuser:Pgp4ss:w\\:ord\n*:*:*:postgres:pgsecret99\n", "Pgp4ss", "db.example.com:5432:appdb:appuser:"),
    ("*:*:*:postgres:pgsecret99", "pgsecret99", "*:*:*:postgres:"),
    ("define( 'DB_PASSWORD', 'wp Secret 123' );", "wp Secret 123", "define( 'DB_PASSWORD', '"),
    ('define("AUTH_KEY", "put your unique phrase here x1");', "put your unique phrase here x1", 'define("AUTH_KEY", "'),
    ("define('NONCE_SALT', 'n0nce salt v@lue');", "n0nce salt v@lue", "define('NONCE_SALT', '"),
    ('<add key="ApiSecret" value="Web Cfg Secret1"/>', "Web Cfg Secret1", '<add key="ApiSecret" value="'),
    ("<property name='db.password' value='spring pw 1'/>", "spring pw 1", "<property name='db.password' value='"),
    ('<add key="SmtpPassword"\n     value="multi line attr"/>', "multi line attr", 'value="'),
    ("db:\n  password: |\n    first-line-secret\n    second line secret\n  user: bob\n", "second line secret", "  user: bob\n"),
    ("private_key: >-\n  folded secret\n\n  more folded\nnext: 1\n", "more folded", "next: 1\n"),
    ("- token: |+\n    tok3n-v@lue\n- name: x\n", "tok3n-v@lue", "- name: x\n"),
    ("password='it\\'s a Secret9' user=bob", "s a Secret9", " user=bob"),
    ("{'password': 'it\\'s a Secret9'}", "s a Secret9", "{'password': '"),
    ("password=\\'hunter 2 pw\\' next", "2 pw", " next"),
    ("{\\u0027password\\u0027: \\u0027correct horse battery\\u0027}", "horse battery", "\\u0027}"),
    ("{\\u0022api_key\\u0022:\\u0022two part key\\u0022}", "part key", "\\u0022}"),
    ("password=\\x27hunter 2 pw\\x27 next", "2 pw", "\\x27 next"),
    ("{\\\\u0027password\\\\u0027: \\\\u0027doubly escaped pw\\\\u0027}", "escaped pw", "\\\\u0027}"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), CASES, ids=[c[1] for c in CASES])
def test_the_secret_goes_and_the_rest_stays(text: str, secret: str, kept: str) -> None:
    out, hits = R.string(text)
    assert hits and "«redacted:hmac:" in out, out
    assert secret not in out and kept in out, out
    assert R.string(out)[0] == out


def test_quote_escapes_give_the_placeholder_of_the_value_inside() -> None:
    plain = PLACEHOLDER.findall(R.string("password='hunter 2 pw'")[0])
    for text in ("password=\\'hunter 2 pw\\'", "password=\\x27hunter 2 pw\\x27", "password=\\u0027hunter 2 pw\\u0027"):
        out = R.string(text)[0]
        assert PLACEHOLDER.findall(out) == plain, (text, out)


PROSE = [
    "the password field is required",
    "password must be at least 8 characters",
    "Enter your password: ",
    "machine learning login page password reset",
    "by default login as root; password protected",
    "Reset it; password = the one you chose.",
    "Note; password is required; thanks",
    "The AccountKey setting; see the docs for its value",
    "at 10:30:45:12:99 the job ran",
    "define the password policy, then save",
    '<add key="Theme" value="dark mode"/>',
    '<property name="timeout" value="30 s"/>',
    "description: |\n  The password must be strong.\n  Use a manager.\n",
    "password: |\n",
    "it's a password manager's job, isn't it?",
    "passwords: ['a', 'b'] are examples",
    "Server=db;Database=app;Trusted_Connection=True;",
]


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_text_of_the_same_words_stays(text: str) -> None:
    assert R.string(text)[0] == text


def test_scrub_and_report_take_them_out_of_a_tool_result(tmp_path: Path) -> None:
    netrc = "machine api.example.com\n  login bob\n  password s3cret pw\n"
    yaml = "db:\n  password: |\n    block-secret-1\n"
    src = record(tmp_path / "src.jsonl", handshake() + [
        c2s(req(2, "tools/call", {"name": "read_file", "arguments": {"path": "~/.netrc"}})),
        s2c(res(2, {"content": [{"type": "text", "text": netrc}, {"type": "text", "text": yaml},
                                {"type": "text", "text": "Server=x;Password=two words;"}]})),
    ])
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "s3cret pw" not in text and "block-secret-1" not in text and "two words" not in text
    assert json.loads(text.splitlines()[0])["scrubbed"]
    html = tmp_path / "r.html"
    r = CliRunner().invoke(mcptap, ["report", str(src), "-o", str(html)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    page = html.read_text()
    assert "s3cret pw" not in page and "block-secret-1" not in page and "two words" not in page


@pytest.mark.parametrize(("line", "secret"), [
    ("db.example.com:5432:appdb:appuser:s3cretPW", "s3cretPW"),
    ("localhost:5432:*:postgres:pw1234", "pw1234"),
    ("*:*:*:bob:hunter2pw", "hunter2pw"),
    ("[::1]:6432:app:u:pw\\:with\\:colons", "pw\\:with\\:colons"),
    ("10.0.0.5:65535:db:app_user:Zx9!pw", "Zx9!pw"),
    ("pg-primary:5:db:u:hunter2pw", "hunter2pw"),              # a low port, a database that is no minute
])
def test_a_pgpass_line_loses_its_password(line: str, secret: str) -> None:
    out, hits = R.string(line)
    assert secret not in out and out.startswith(line[: -len(secret)]) and [h.rule for h in hits] == ["pgpass-line"], out


@pytest.mark.parametrize("line", [
    "app.log:12:30:45:done",                 # a clock time: hour and minutes are no port and database
    "server:12:30:45:ready",
    "log:12:30:45:999",
    "2026-12-06T12:30:45:worker:started",
    "2026-12-06T12:30:45.123:INFO:x",
    "web:0:db:user:pw1234",                  # no TCP port
    "web:99999:db:user:pw1234",
    "x.y:80:GET:/index:200",                 # a path is no user name
    "proxy:8080:/var/db:user:pw1234",
])
def test_a_line_of_five_fields_that_is_no_pgpass_line_stays(line: str) -> None:
    assert R.string(line) == (line, [])
