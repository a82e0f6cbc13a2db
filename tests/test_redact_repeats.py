"""redact/repeats.py: a value judged secret is found again in later strings of the same
capture (Scrubber), never inside a placeholder, never when shorter than the argv minimum;
a user's --redact-key is caught assigned in text as the built-in names are."""

from __future__ import annotations

from mcptap.redact.default import default_redactor
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules, build_rules
from mcptap.redact.scrub import Scrubber

KEY = Keyer(b"k" * 32)


def _msg(seq: int, value: dict) -> dict:      # type: ignore[type-arg]
    return {"type": "message", "seq": seq, "t_us": seq, "dir": "c2s", "kind": "request", "id": seq, "json": value}


def test_a_keyed_secret_is_replaced_where_repeated_later_and_not_in_placeholders() -> None:
    s = Scrubber(Redactor(Rules(), KEY))
    first = s.record(_msg(1, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "x", "arguments": {"password": "Tr0ub4dor&3", "pin": "abc"}}}))
    ph = first["json"]["params"]["arguments"]["password"]
    err = s.record({"type": "stderr", "seq": 2, "t_us": 2, "data": "bad password Tr0ub4dor&3 for bob\n"})
    assert err["data"] == f"bad password {ph} for bob\n"
    out = s.record(_msg(3, {"jsonrpc": "2.0", "id": 3, "method": "x", "params": {"echo": "Tr0ub4dor&3", "again": ph}}))
    assert out["json"]["params"] == {"echo": ph, "again": ph}


def test_short_values_and_other_scrubbers_are_left_alone() -> None:
    red = Redactor(Rules(), KEY)
    s = Scrubber(red)
    s.record(_msg(1, {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"password": "abc", "token": "0123"}}))
    later = s.record(_msg(2, {"jsonrpc": "2.0", "id": 2, "method": "x", "params": {"note": "abc and 0123 here"}}))
    assert later["json"]["params"]["note"] == f"abc and {KEY.placeholder('0123')} here"       # "abc": too short
    # a secret that is a piece of another placeholder's hex digits: the placeholder stays whole
    other = KEY.placeholder("elsewhere")
    piece = other[len("«redacted:hmac:"):][2:8]
    s.record(_msg(3, {"jsonrpc": "2.0", "id": 3, "method": "x", "params": {"token": piece}}))
    kept = s.record(_msg(4, {"jsonrpc": "2.0", "id": 4, "method": "x", "params": {"note": f"was {other}"}}))
    assert kept["json"]["params"]["note"] == f"was {other}"
    # the Redactor given is not changed (the process-wide one redacts unrelated strings), nor another capture's
    assert red.string("once 0123 here")[0] == "once 0123 here"
    assert Scrubber(red).redactor.string("once 0123 here")[0] == "once 0123 here"
    assert default_redactor().string("said 0123 here")[0] == "said 0123 here"


def test_a_user_key_is_caught_assigned_in_text() -> None:
    red = Redactor(build_rules(keys=["ssn", "employeeId"]), KEY)
    for text, secret in (("SSN=078-05-1120", "078-05-1120"), ("log: ssn: 078051120 ok", "078051120"),
                         ('saw {"employee_id": "EMP-123456"}', "EMP-123456"), ("employeeId=EMP-123456;", "EMP-123456")):
        out, hits = red.string(text)
        assert secret not in out and hits and hits[0].rule == "user-key-assignment", (text, out)
    for prose in ("the ssn field is required", "employeeid: string", "grassn=1234567"):
        assert red.string(prose) == (prose, [])


def test_live_redaction_remembers_as_the_scrub_did() -> None:
    """serve matches a live client's params against the scrubbed capture's: a secret the
    client repeats outside its key in a later request is a placeholder in the capture (the
    scrub remembered it), so the live params must get it too."""
    from mcptap.redact.live import live_redaction

    header = {"scrubbed": [{"rules": Rules().describe(), "key": KEY.fingerprint()}]}
    redact, why = live_redaction(header, KEY)
    assert redact is not None and why is None
    first = redact({"name": "login", "arguments": {"password": "Tr0ub4dor&3"}})
    again = redact({"name": "note", "arguments": {"text": "I used Tr0ub4dor&3"}})
    s = Scrubber(Redactor(Rules(), KEY))
    s.record(_msg(1, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "login", "arguments": {"password": "Tr0ub4dor&3"}}}))
    rec = s.record(_msg(2, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "note", "arguments": {"text": "I used Tr0ub4dor&3"}}}))
    assert first["arguments"]["password"] == KEY.placeholder("Tr0ub4dor&3")
    assert again == rec["json"]["params"]


def test_common_words_and_pieces_of_longer_words_are_not_repeats() -> None:
    # "password": "none" and "apiKey": "true" made every later "none" and "true" of the scrubbed
    # capture a placeholder, and a secret "0123" was replaced inside "01234567"
    s = Scrubber(Redactor(Rules(), KEY))
    s.record(_msg(1, {"jsonrpc": "2.0", "id": 1, "method": "x",
                      "params": {"password": "none", "apiKey": "true", "token": "0123", "secret": "s3cr3t"}}))
    later = s.record(_msg(2, {"jsonrpc": "2.0", "id": 2, "method": "x",
                              "params": {"note": "none of them are true: 01234567, xs3cr3t, 0123 and (s3cr3t)"}}))
    assert later["json"]["params"]["note"] == (f"none of them are true: 01234567, xs3cr3t, {KEY.placeholder('0123')} "
                                               f"and ({KEY.placeholder('s3cr3t')})")
