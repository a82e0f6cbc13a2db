"""A line too long to be framed live (over ``recorder.LONG_LINE``) is stored as it streams,
in ``chunk`` records cut wherever the relay's reads end: a secret of the server's argv
(or one the patterns of ``record --redact`` find) that such a cut splits must not stay in
clear, half in one record and half in the next (``recorder_chunks.WholeLines`` holds the
end of a record where a secret may begin until the next chunk of its direction)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.known_secrets import KnownSecrets
from mcptap.model import Direction
from mcptap.recorder_chunks import HOLD, ChunkRecording, WholeLines
from mcptap.redact.argv import placeholder

if TYPE_CHECKING:
    from mcptap.capture.writer import CaptureWriter

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
TOKEN = "QWERTYUIOPasdfghjkl1234567890zxcvbnm"
#: an argv secret holding a space, where ``record --redact`` would cut a long line
SPACED = "QWERTYUIOP asdfghjkl1234567890 zxcvbnm"
REPEAT = 150_000        # "key TOKEN " × this: a 6 MB line each way
#: reads the request line (itself 6 MB), answers with a 6 MB line holding its argv token
SERVER = ("import sys, json; tok = sys.argv[-1]; m = json.loads(sys.stdin.readline()); "
          f"body = ('key ' + tok + ' ') * {REPEAT}; "
          "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'text': body}}) + '\\n'); sys.stdout.flush()")


def _streams(cap: Path) -> dict[str, bytes]:
    out = {"c2s": b"", "s2c": b""}
    for rec in read_capture(str(cap)).records:
        if rec["type"] in ("chunk", "message") and rec.get("dir") in out:
            data = decode_bytes(rec, "data") if rec["type"] == "chunk" else (rec.get("raw") or "").encode()
            out[rec["dir"]] += data or b""
    return out


@pytest.mark.parametrize(("token", "redact"), [(TOKEN, []), (SPACED, ["--redact"])])
def test_an_argv_secret_in_a_line_stored_in_chunk_records_is_never_cut_in_clear(
        tmp_path: Path, token: str, redact: list[str]) -> None:
    """Both ways; with ``--redact`` too, whose cut after a separator must not split an argv secret holding one."""
    cap = tmp_path / "c.jsonl"
    request = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"' + ("key " + token + " ").encode() * REPEAT + b'"}}\n'
    r = subprocess.run([*MCPTAP, "record", "-q", *redact, "-o", str(cap), "--", sys.executable, "-c", SERVER, "--token", token],
                       input=request, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(token.encode()) == REPEAT             # relayed as it was
    records = read_capture(str(cap)).records
    assert sum(rec["type"] == "chunk" for rec in records) > 2   # stored in pieces, both ways
    text = cap.read_bytes()
    for piece in (token, token[:12], token[-12:]):              # no whole secret, no half of one
        assert piece.encode() not in text
    ph = placeholder(token).encode()
    streams = _streams(cap)
    assert streams["s2c"].count(ph) == REPEAT and streams["c2s"].count(ph) == REPEAT
    check = subprocess.run([*MCPTAP, "check", str(cap)], capture_output=True, timeout=120)
    assert b"(complete)" in check.stdout and b"digest" not in check.stdout, check.stdout     # offsets and digests hold
    exported = subprocess.run([*MCPTAP, "export", str(cap), "-f", "messages"], capture_output=True, timeout=120)
    assert exported.returncode == 0 and token.encode() not in exported.stdout


def test_whole_lines_holds_back_where_a_secret_may_begin_past_the_bound() -> None:
    ks = KnownSecrets({TOKEN: placeholder(TOKEN)})
    lines = WholeLines()
    line = b"x " * (HOLD // 2 + 10) + b"key " + TOKEN[:20].encode()
    out, offset = lines.add(Direction.S2C, line, 100, ks.hold)
    assert out == line[:-len(TOKEN[:20])] and offset == 100          # the secret's beginning waits …
    out, offset = lines.add(Direction.S2C, TOKEN[20:].encode() + b" done\n", 100 + len(line), ks.hold)
    assert out == TOKEN.encode() + b" done\n" and offset == 100 + len(line) - 20   # … for the rest of it
    assert lines.held(Direction.S2C) == 0


GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
#: answers with a 6 MB line of a token the patterns of ``record --redact`` find
PATTERNED = ("import sys, json; m = json.loads(sys.stdin.readline()); "
             f"body = ('key {GHP} ') * {REPEAT}; "
             "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'text': body}}) + '\\n'); sys.stdout.flush()")


def test_record_redact_leaves_no_head_of_a_token_cut_between_chunk_records(tmp_path: Path) -> None:
    cap = tmp_path / "r.jsonl"
    r = subprocess.run([*MCPTAP, "record", "-q", "--redact", "-o", str(cap), "--", sys.executable, "-c", PATTERNED],
                       input=b'{"jsonrpc":"2.0","id":1,"method":"x"}\n', capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    records = read_capture(str(cap)).records
    assert sum(rec["type"] == "chunk" for rec in records) > 2
    assert b"ghp_" not in cap.read_bytes()          # the scrubber's look-behind replaced the rest; no head stayed
    assert _streams(cap)["s2c"].count("key «redacted:".encode()) == REPEAT       # nor a piece of one
    check = subprocess.run([*MCPTAP, "check", str(cap)], capture_output=True, timeout=120)
    assert b"(complete)" in check.stdout and b"digest" not in check.stdout, check.stdout


def test_the_redact_cut_after_a_separator_never_splits_an_argv_secret_holding_one() -> None:
    secret = "ab,cdefgh12"
    ks = KnownSecrets({secret: placeholder(secret)})
    chunks = ChunkRecording()
    chunks.known = ks
    chunks.writer = cast("CaptureWriter", SimpleNamespace(transform=lambda rec: rec, line_filter=ks.line))
    line = b"y " * 1000 + b"k=" + secret.encode() + b"."
    assert chunks._tail(line) == 0                          # the comma inside the secret is no place to cut
    assert chunks._tail(line + b"," + b"z" * 20) == 20      # the comma after it is
    assert chunks._tail(line + b" k=ab,cd") == len(b"k=ab,cd")   # a secret's beginning waits
