"""A server's argv secrets are found again by the rule a scrub's repeated secrets are
(``redact.repeat_match``): not a common word, not a piece of a longer word or number, and
the same in a stderr stream whatever its split into reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.known_secrets import KnownSecrets, known_secrets, redacted_values
from mcptap.redact import scrub_argv
from mcptap.redact.argv import placeholder
from mcptap.redact.repeats import Repeats

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
ARGV = ["srv", "--token", "none", "--api-key", "1234", "--password", "0123abcd"]
TEXT = "none of 12345678 matched; key 1234, 0123abcdef x0123abcd «redacted:hmac:000000001234» 0123abcd.\n"


def _ph(s: str) -> str:
    return placeholder(s)


def test_common_words_and_pieces_of_longer_words_are_not_replaced() -> None:
    shown = scrub_argv(ARGV)
    assert all("«redacted:" in shown[i] for i in (2, 4, 6))       # redacted where they stand
    assert set(redacted_values(ARGV, shown, placeholder)) == {"1234", "0123abcd"}
    ks = known_secrets(ARGV, shown, placeholder)
    assert ks is not None
    want = TEXT.replace("key 1234", "key " + _ph("1234")).replace("0123abcd.", _ph("0123abcd") + ".")
    assert ks.replace_in(TEXT.encode()).decode() == want
    # a record line: the same, JSON-escaped or not
    rec = {"type": "stderr", "seq": 2, "t_us": 1, "data": TEXT}
    out = orjson.loads(ks.line(rec, orjson.dumps(rec) + b"\n"))
    assert out["data"] == want
    # and KnownSecrets given a common word itself (a caller's own table) leaves it alone
    assert not KnownSecrets({"none": _ph("none"), "true": _ph("true")})


def test_the_same_rule_as_a_scrubs_repeated_secrets() -> None:
    """What ``Repeats`` (a value redacted under a secret key) replaces in a text is what
    ``KnownSecrets`` replaces for the same values."""
    values = ["1234", "0123abcd", "none", "ab-cd"]
    reps = Repeats(on=True)
    for v in values:
        reps.learn(v)
    ks = KnownSecrets({v: _ph(v) for v in values})
    for text in (TEXT, "x1234 1234x 1234_ (1234) é1234 1234é ab-cd ab-cde xab-cd none\tnone", "\\n1234 \\1234"):
        spans = sorted(reps.spans(text, []), key=lambda sp: sp.start)
        expected, at = [], 0
        for sp in spans:
            expected += [text[at:sp.start], _ph(text[sp.start:sp.end])]
            at = sp.end
        assert ks.replace_in(text.encode()).decode() == "".join(expected) + text[at:], text


def test_an_escape_in_an_encoded_line_is_no_letter_before_a_secret() -> None:
    ks = KnownSecrets({"1234": _ph("1234")})
    rec = {"type": "stderr", "seq": 2, "t_us": 1, "data": "a\n1234\tb\u00011234 x1234"}
    out = orjson.loads(ks.line(rec, orjson.dumps(rec) + b"\n"))
    assert out["data"] == f"a\n{_ph('1234')}\tb\u0001{_ph('1234')} x1234"
    raw = '{"jsonrpc":"2.0","id":1,"result":{"t":"k\\n1234","u":"k1234"}}\n'
    msg = {"type": "message", "seq": 3, "t_us": 1, "dir": "s2c", "raw": raw}
    out = orjson.loads(ks.line(msg, orjson.dumps(msg) + b"\n"))
    assert out["raw"] == raw.replace("\\n1234", "\\n" + _ph("1234"))


_SECRETS = ["abcd", "12 34", "ab«c", "éab1", "-x-y", "k3yk3yk3yk3y"]
_ALPHABET = st.sampled_from(["a", "b", "c", "d", "1", "2", "3", "4", " ", "-", "x", "y", "é", "«", "»", "\n", "ab", "abcd", "12 34", "éab1",
                             "k3y", "k3yk3yk3yk3y"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join), st.lists(st.integers(0, 80), max_size=8))
def test_any_split_of_a_stderr_stream_stores_what_one_read_would(text: str, cuts: list[int]) -> None:
    data = text.encode()
    whole = KnownSecrets({s: _ph(s) for s in _SECRETS})
    one = whole.replace_in(whole.take(data) + whole.take(b"", final=True))
    ks = KnownSecrets({s: _ph(s) for s in _SECRETS})
    points = sorted({min(c, len(data)) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    out = b"".join(ks.replace_in(ks.take(p)) for p in pieces) + ks.replace_in(ks.take(b"", final=True))
    assert out == one == whole.replace_in(data)


def test_a_long_secret_glued_to_a_word_is_still_replaced() -> None:
    """A token or key (12 characters or more) is no piece of another word by chance: glued
    to text (``0x`` before a hex key, ``Bearer`` without its space) it is replaced too."""
    key = "deadbeef12345678"
    ks = KnownSecrets({key: _ph(key), "0123": _ph("0123")})
    text = f"0x{key} Bearer{key}x 01234567 {key}"
    assert ks.replace_in(text.encode()).decode() == f"0x{_ph(key)} Bearer{_ph(key)}x 01234567 {_ph(key)}"
    reps = Repeats(on=True)
    reps.learn(key)
    assert [(sp.start, sp.end) for sp in sorted(reps.spans(text, []), key=lambda sp: sp.start)] == [
        (2, 18), (25, 41), (52, 68)]


def test_a_read_ending_in_a_word_waits_for_the_next() -> None:
    ks = KnownSecrets({"abcd": _ph("abcd")})
    assert ks.take(b"key is x") == b"key is "        # "x" may go on: "xabcd" is no secret
    assert ks.take(b"abcd ok") == b"xabcd "
    assert ks.take(b" abcd\n") == b"ok abcd\n"
    long = b"z" * 100
    assert ks.take(long) == long[:100 - 5]           # a long word: only its end waits
    assert ks.take(b"", final=True) == b"z" * 5


def test_argv_common_words_are_left_alone_in_a_recorded_capture(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    server = "import sys; print('none of 12345678; key', sys.argv[4], 'auth', sys.argv[2], file=sys.stderr)"
    r = subprocess.run([*MCPTAP, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server,
                        "--token", "none", "--api-key", "1234"], input=b"\n", capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = "".join(rec.get("data", "") for rec in read_capture(str(cap)).records if rec["type"] == "stderr")
    assert data == f"none of 12345678; key {_ph('1234')} auth none\n"


def test_a_secret_the_peer_wrote_json_escaped_is_replaced_too() -> None:
    """Python's ``json.dumps`` writes ``ä`` as ``\\u00e4``, PHP writes ``/`` as ``\\/``: the
    raw bytes of a message, and stderr text that logs JSON, hold the secret in that form."""
    secret = "pässwörd-geheim/1"
    ks = KnownSecrets({secret: _ph(secret)})
    for form in ('p\\u00e4ssw\\u00f6rd-geheim/1', 'p\\u00E4ssw\\u00F6rd-geheim\\/1', 'pässwörd-geheim\\/1'):
        raw = '{"jsonrpc":"2.0","id":1,"result":{"t":"k ' + form + '"}}\n'
        msg = {"type": "message", "seq": 3, "t_us": 1, "dir": "s2c", "raw": raw}
        out = orjson.loads(ks.line(msg, orjson.dumps(msg) + b"\n"))
        assert out["raw"] == raw.replace(form, _ph(secret)), form
        rec = {"type": "stderr", "seq": 2, "t_us": 1, "data": f'argv: ["--password", "{form}"]\n'}
        out = orjson.loads(ks.line(rec, orjson.dumps(rec) + b"\n"))
        assert form not in out["data"] and _ph(secret) in out["data"], form
        got = ks.take(rec["data"].encode()) + ks.take(b"", final=True)
        assert ks.replace_in(got).decode() == rec["data"].replace(form, _ph(secret))


def test_many_repeats_of_a_secret_take_linear_time() -> None:
    """A server echoing its token 40,000 times kept ``record`` busy 100 s after the session
    (every hit was compared with every earlier one). A complexity guard, 100x above need:
    200,000 hits take ~0.4 s; quadratically they took hours."""
    import threading

    from mcptap.redact.repeat_match import find
    done: list[int] = []
    t = threading.Thread(target=lambda: done.append(len(find("key abcd1234 " * 200_000, ["abcd1234"]))), daemon=True)
    t.start()
    t.join(60)
    assert done == [200_000]
