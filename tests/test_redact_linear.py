"""No string makes redaction slow (mcptap/redact/scanner.py ``_matches``, ``HEADS``,
``RUNNERS``): a hostile server's output is scrubbed by ``scrub``, ``report`` and the
recorder under ``--redact``. ``'sort_key=' * n`` took 5.3 s at 180 KB (each name that
was no secret's read the rest of the text as its value), ``'id0:id1:…: token'`` 5.2 s at
149 KB, detect-secrets' npm ``//.+/:_authToken=`` 3 s at 160 KB, ``mysql … -pPASS`` 1 s at
200 KB: quadratic. Each shape at 1 MB now takes a fraction of a second. The tests
judge growth, not speed (a slow or shared CPU must not fail them): four times the
text may take at most ``GROWTH`` times as long (linear: 4; quadratic: 16), plus
``SLACK`` seconds for timer noise on tiny times, and a generous absolute cap."""

from __future__ import annotations

import time

import pytest

from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules

R = Redactor(Rules(), Keyer(b"k" * 32))
MB = 1 << 20
GROWTH, SLACK, CAP = 8.0, 0.15, 20.0


def _cpu(fn, *args) -> float:
    t = time.process_time()
    fn(*args)
    return time.process_time() - t


def assert_linear(small: float, big: float) -> None:
    """``big``: CPU seconds for 4x the input of ``small``'s."""
    assert big < GROWTH * small + SLACK and big < CAP, f"{small:.3f} s -> {big:.3f} s for 4x the input: not linear"

SHAPES = {
    "names that are no secrets'": "sort_key=",
    "a chain of names": "id0:",
    "a secret name before code": "password=a(",
    "a secret name before a plain word": "password=required:",
    "an unclosed quote": 'password="aaa ',
    "an unclosed escaped quote": 'password=\\"aaa ',
    "escaped quotes in a quoted value": 'password="a\\"',
    "runs of backslashes": 'password=\\\\\\"' + "\\" * 20,
    "npm registries": "//a",
    "npm slashes": "//",
    "mysql programs": "mysql ",
    "mysql options": "mysql -",
    "header names": "Authorization: Requires ",
    "cookie prose": "cookie: this ",
    "bearer words": "Bearer abcdefghijklmn ",
    "query keys": "key=",
    "sshpass passwords": "sshpass -p ",
    "redis-cli passwords": "redis-cli -a ",
    "mysql passwords": "mysql -pa ",
    "long options": "--password ",
    "config set": "config set password ",
    "sql users": "user a password ",
    "sql set password": "set password ",
    "sql identified": "identified by '",
    # placeholders are read as tokens (scanner._masked) and redacted text is scanned again
    "placeholders": "«redacted:hmac:0123456789ab» ",
    "placeholders as mysql passwords": "mysql -p«redacted:hmac:0123456789ab» -p",
    "placeholders before a scheme": "«redacted:hmac:0123456789ab»Basic ",
    "putty private lines": "Private-Lines: 1\nAAAA\n",
    "putty lines never ending": "Private-Lines: 1\n" + "A" * 300,
    "token prefixes": "whsec_ GOCSPX- ya29. npm_ dapi dop_v1_ shpat_ hvs. lin_api_ AGE-SECRET-KEY-1 ",
    "percent escapes": "%41",
    "percent escapes encoded twice": "%2541",
    "encoded assignments": "password%3D",
    "encoded bearer words": "Bearer%20abcdefghijklmn%20",
    # config file formats (connection strings, .netrc, .pgpass, define(), XML settings, YAML blocks) and
    # escaped quotes (\u0027, \x27, \')
    "connection strings with spaces": "x;password=a b",
    "unclosed braces": "Pwd={",
    "a word before a colon": "AAAA",
    "pgpass fields": "a:1:b:c:",
    "netrc words": "machine a.b login x ",
    "xml settings": '<add key="password" value="x',
    "yaml block keys": "password: |\n",
    "escaped quote escapes": "{\\u0027password\\u0027: \\u0027",
    "php defines": "define('DB_PASSWORD', '",
    "escaped single quotes": "password='a\\'",
    "matches lost to overlapping ones": "&sig=Basic PASSWORD--token hunter22def123} then the request went on as usual, " + "and so on " * 8,
}


@pytest.mark.parametrize("unit", list(SHAPES.values()), ids=list(SHAPES))
def test_a_megabyte_of_one_shape_redacts_in_linear_time(unit: str) -> None:
    def text(size: int) -> str:
        return unit * (size // len(unit)) + "/:_authToken= token"
    assert_linear(_cpu(R.string, text(MB // 4)), _cpu(R.string, text(MB)))


def test_the_secrets_in_such_text_still_go() -> None:
    text = "sort_key=" * 20000 + " password=hunter2pw " + "//a" * 20000 + "/:_authToken=npm_abcdefghijklmnop1234\n" \
        + "mysql " * 20000 + "-pMyRootPass123"
    out, _ = R.string(text)
    assert "hunter2pw" not in out and "npm_abcdefghijklmnop1234" not in out and "MyRootPass123" not in out


@pytest.mark.parametrize(("text", "secret"), [
    ("mysql -u root -pab;cd db", "ab;cd"),                 # the password runs on past the segment's end, as before
    ("//r.example.com/:_authToken=\nnpm_abcdefghijklmnop1234", "npm_abcdefghijklmnop1234"),
    ("token=get(password=hunter2pw)", "hunter2pw"),        # inside code that is no secret
])
def test_runners_find_what_search_found(text: str, secret: str) -> None:
    assert secret not in R.string(text)[0]


def _stderr_records(n: int, piece: bytes) -> list[dict]:
    from mcptap.capture.format import encode_bytes

    out = []
    for i in range(n):
        d: dict = {"type": "stderr", "seq": i + 1, "t_us": i}
        encode_bytes(piece, "data", d)
        out.append(d)
    return out


@pytest.mark.parametrize("live", [False, True], ids=["scrub", "record --redact"])
def test_a_megabyte_of_stderr_in_small_unfinished_reads_scrubs_quickly(live: bool) -> None:
    # a line never ends: offline, groups of held records close at their bounds; live, the
    # carried unfinished line is bounded (mcptap/redact/stderr_stream.py)
    from mcptap.redact.scrub import Scrubber

    def scrub(n: int) -> None:
        recs = _stderr_records(n, b"Bearer abc password=")
        s = Scrubber(R)
        if live:
            for r in recs:
                s.record(r)
        else:
            for _ in s.records(recs):
                pass
    assert_linear(_cpu(scrub, MB // 80), _cpu(scrub, MB // 20))
