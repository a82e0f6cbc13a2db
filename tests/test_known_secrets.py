"""Secrets mcptap redacted from the server's argv stay redacted wherever the
server repeats them (stderr, messages, split across reads): the README's
promise that argv secrets are stored as keyed placeholders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from mcptap.capture.format import decode_bytes, encode_bytes
from mcptap.capture.reader import read_capture
from mcptap.known_secrets import KnownSecrets, redacted_values
from mcptap.redact import scrub_argv
from mcptap.redact.argv import placeholder

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
SECRET = "sk-live-abc123"


def test_the_values_scrub_argv_took_out_are_found_exactly() -> None:
    argv = ["srv", "--api-key", SECRET, "--url", "https://bob:hunter22@example.com/x?access_token=tok-98765&a=1",
            "--token=ghp_abcdefghij", "--port", "8080"]
    found = redacted_values(argv, scrub_argv(argv), placeholder)
    assert found[SECRET] == placeholder(SECRET)
    assert "bob:hunter22" in found and "tok-98765" in found and "ghp_abcdefghij" in found
    assert all(placeholder(v) == ph for v, ph in found.items())
    assert not set(found) & {"srv", "--port", "8080", "https://"}


def test_a_secret_split_across_reads_is_held_back_until_whole() -> None:
    ks = KnownSecrets({SECRET: placeholder(SECRET)})
    assert ks.take(b"argv: --api-key sk-li") == b"argv: --api-key "       # the secret's beginning waits
    assert ks.take(b"ve-abc123 ok\n") == b"sk-live-abc123 ok\n"
    assert ks.take(b"all done\n") == b"all done\n"
    assert ks.take(b"tail sk") == b"tail " and ks.take(b"", final=True) == b"sk"


def _record(tmp_path: Path, server: str, stdin: bytes = b"") -> tuple[subprocess.CompletedProcess[bytes], Path]:
    cap = tmp_path / "cap.jsonl"
    r = subprocess.run([*MCPTAP, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server, "--api-key", SECRET],
                       input=stdin, capture_output=True, timeout=60)
    return r, cap


def _checks_clean(cap: Path) -> None:
    check = subprocess.run([*MCPTAP, "check", "--fail-on", "error", str(cap)], capture_output=True, timeout=60)
    assert check.returncode == 0 and b"digest_mismatch" not in check.stdout, check.stdout
    shown = subprocess.run([*MCPTAP, "show", str(cap)], capture_output=True, timeout=60)
    assert SECRET.encode() not in shown.stdout


def test_argv_echoed_on_stderr_is_stored_redacted(tmp_path: Path) -> None:
    r, cap = _record(tmp_path, 'import sys; print("starting with", sys.argv, file=sys.stderr)', b"\n")
    assert r.returncode == 0 and SECRET.encode() in r.stderr          # the host still sees the server's stderr as it was
    text = cap.read_bytes()
    assert SECRET.encode() not in text
    stderr = "".join(rec.get("data", "") for rec in read_capture(str(cap)).records if rec["type"] == "stderr").encode()
    assert placeholder(SECRET).encode() in stderr
    _checks_clean(cap)


def test_a_secret_split_across_two_stderr_writes_is_caught(tmp_path: Path) -> None:
    server = ("import sys, time; a = sys.argv[-1]; sys.stderr.write('key=' + a[:6]); sys.stderr.flush(); time.sleep(0.3); "
              "sys.stderr.write(a[6:] + ' loaded\\n'); sys.stderr.flush()")
    r, cap = _record(tmp_path, server, b"\n")
    assert r.returncode == 0
    assert SECRET.encode() not in cap.read_bytes() and SECRET[:6].encode() not in cap.read_bytes()
    data = "".join(rec.get("data", "") for rec in read_capture(str(cap)).records if rec["type"] == "stderr")
    assert data == f"key={placeholder(SECRET)} loaded\n"
    _checks_clean(cap)


def test_argv_echoed_in_a_message_is_stored_redacted_and_the_relay_is_untouched(tmp_path: Path) -> None:
    server = ("import sys, json; line = sys.stdin.readline(); "
              "print(json.dumps({'jsonrpc': '2.0', 'id': 1, 'result': {'argv': sys.argv, 'note': 'key \"' + sys.argv[-1] + '\"'}}), flush=True)")
    r, cap = _record(tmp_path, server, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert r.returncode == 0 and SECRET.encode() in r.stdout          # forwarded byte for byte
    assert SECRET.encode() not in cap.read_bytes()
    answer = next(rec for rec in read_capture(str(cap)).records if rec["type"] == "message" and rec["dir"] == "s2c")
    body = orjson.loads(answer["raw"]) if "raw" in answer else answer["json"]
    assert body["result"]["argv"][-1] == placeholder(SECRET)
    end = read_capture(str(cap)).end
    assert end is not None and end["original"]["s2c"]["bytes"] == len(r.stdout)   # the relayed stream's digest kept
    _checks_clean(cap)


def test_a_secret_in_bytes_stored_as_base64_is_replaced_too(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are stored base64 (``data_b64`` of stderr, ``raw_b64`` of a
    message, ``body_b64`` of an HTTP body): a secret the server repeats there is replaced in
    the bytes, and the capture stays valid (digests over the bytes it holds)."""
    server = ("import sys; sys.stdin.buffer.readline(); a = sys.argv[-1].encode(); "
              "sys.stderr.buffer.write(b'\\xff\\xfe bad key ' + a + b'\\n'); sys.stderr.flush(); "
              "sys.stdout.buffer.write(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\\xff' + a + b'\"}}\\n'); sys.stdout.flush()")
    r, cap = _record(tmp_path, server, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert r.returncode == 0 and SECRET.encode() in r.stdout and SECRET.encode() in r.stderr    # relayed as they were
    recs = read_capture(str(cap)).records
    held = b"".join(decode_bytes(rec, "data") or b"" for rec in recs if rec["type"] == "stderr")
    answer = next(rec for rec in recs if rec["type"] == "message" and rec["dir"] == "s2c")
    assert "data_b64" in next(rec for rec in recs if rec["type"] == "stderr") and "raw_b64" in answer
    raw = decode_bytes(answer, "raw") or b""
    for data in (held, raw):
        assert SECRET.encode() not in data and placeholder(SECRET).encode() in data and b"\xff" in data
    check = subprocess.run([*MCPTAP, "check", str(cap)], capture_output=True, timeout=60)
    assert b"framing.invalid_utf8" in check.stdout and b"digest" not in check.stdout, check.stdout   # only the peer's bad bytes
    # an HTTP body (record --upstream URL whose token the client repeats in a non-UTF-8 body)
    ks = KnownSecrets({SECRET: placeholder(SECRET)}, stdio=False)
    rec: dict[str, object] = {"type": "http", "seq": 3, "event": "request_body", "exchange": 1}
    encode_bytes(b"\x89PNG token=" + SECRET.encode() + b"\xff", "body", rec)
    out = orjson.loads(ks.line(rec, orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)))
    body = decode_bytes(out, "body") or b""
    assert SECRET.encode() not in body and body == b"\x89PNG token=" + placeholder(SECRET).encode() + b"\xff"
