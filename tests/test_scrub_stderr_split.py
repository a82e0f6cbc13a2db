"""A secret cut across two stderr records (stderr is recorded in pieces as read) is
redacted (mcptap/redact/stderr_stream.py): each record was scanned alone, so
``Authorization: Bearer abc`` in one read and ``def123…`` in the next kept both
pieces. Offline (``scrub``, ``report``) the records of an unfinished line are scrubbed
with the rest of their line; live (``record --redact``) the unfinished line is scanned
again with the next record, so the rest of the secret goes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from mcptap.capture.format import decode_bytes
from mcptap.cli.main import mcptap
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.rules import Rules
from mcptap.redact.stderr_stream import Carry, split
from scripted import handshake, record, res, s2c

R = Redactor(Rules(), Keyer(b"k" * 32))
TOKEN = "abcdef1234567890XYZtoken"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _stderr(recs: list[dict]) -> bytes:
    return b"".join(decode_bytes(r, "data") or b"" for r in recs if r["type"] == "stderr")


def test_scrub_redacts_a_secret_cut_across_stderr_records(tmp_path: Path) -> None:
    src = record(tmp_path / "src.jsonl", handshake() + [
        ("err", b"starting\nAuthorization: Bearer abcdef"),
        s2c(res(7)),                                        # another record between the pieces
        ("err", TOKEN[6:].encode() + b"\nconnecting with pass"),
        ("err", b"word=hunter2-cut-here and more\n"),
        ("err", b"plain line\n"),
    ])
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(mcptap, ["scrub", str(src), "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    recs = _records(out)
    text = _stderr(recs).decode()
    assert "abcdef" not in text and "1234567890XYZ" not in text and "hunter2" not in text and "cut-here" not in text, text
    assert text.startswith("starting\nAuthorization: Bearer «redacted:hmac:") and text.endswith("plain line\n")
    assert "with password=«redacted:hmac:" in text       # its name cut too
    # the records stay in order, each where it was; the digest is of the stderr bytes the capture holds
    assert [r["seq"] for r in recs if "seq" in r] == sorted(r["seq"] for r in recs if "seq" in r)
    end = recs[-1]
    assert end["type"] == "end" and end["stderr"]["sha256"] == hashlib.sha256(_stderr(recs)).hexdigest()
    # dry run names them; scrubbing again changes nothing
    dry = CliRunner().invoke(mcptap, ["scrub", str(src), "--dry-run"], catch_exceptions=False)
    assert "stderr" in dry.output and "bearer" in dry.output
    again = tmp_path / "again.jsonl"
    CliRunner().invoke(mcptap, ["scrub", str(out), "-o", str(again)], catch_exceptions=False)
    assert again.read_bytes() == out.read_bytes()


def test_split_puts_each_secret_in_the_record_where_it_starts() -> None:
    pieces = ["x Authorization: Bearer abc", "", "def1234567890XYZ rest", " token=", "s3cr3tValue99\n"]
    new, hits = split(R, pieces)
    assert len(new) == len(pieces)
    joined, _ = R.string("".join(pieces))
    assert "".join(new) == joined
    assert new[0].startswith("x Authorization: Bearer «redacted:hmac:") and new[1] == "" and new[2] == " rest"
    assert new[3] == " token=" and new[4].startswith("«redacted:hmac:") and new[4].endswith("»\n")
    assert [len(h) for h in hits] == [1, 0, 0, 0, 1]


def test_live_carry_redacts_the_rest_of_a_secret_begun_in_an_earlier_record() -> None:
    c = Carry()
    first, _ = c.redact(R, "Authorization: Bearer abc")
    second, hits = c.redact(R, "def1234567890XYZ\nnext")
    assert first == "Authorization: Bearer abc"        # written before the rest came: what it held stays
    assert "def1234567890XYZ" not in second and second.startswith("«redacted:hmac:") and second.endswith("\nnext") and hits
    third, _ = c.redact(R, " line password=hunter2pw\n")   # the carry is the unfinished line only
    assert third == " line password=«redacted:hmac:" + third.split("«redacted:hmac:")[1]


SERVER = r"""
import sys, time
sys.stderr.write("Authorization: Bearer abc"); sys.stderr.flush()
time.sleep(0.4)
sys.stderr.write("def1234567890XYZ\n"); sys.stderr.flush()
sys.stdin.read()
"""


def test_record_redact_redacts_the_rest_of_a_cut_secret(tmp_path: Path) -> None:
    out = tmp_path / "live.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "--redact", "-o", str(out), "--",
                        sys.executable, "-c", SERVER], input=b"", capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert b"def1234567890XYZ" in p.stderr            # the host sees the server's stderr as it was
    recs = _records(out)
    pieces = [decode_bytes(r, "data") or b"" for r in recs if r["type"] == "stderr"]
    assert len(pieces) >= 2, pieces                     # recorded as two reads
    text = b"".join(pieces).decode()
    assert "1234567890XYZ" not in text and "«redacted:hmac:" in text, text


def test_held_records_are_bounded_and_stay_in_order() -> None:
    # an unfinished line (a progress bar redrawn with a leading CR) must not hold a session's
    # traffic in memory: the group closes after GROUP_OTHERS other records
    from mcptap.capture.format import encode_bytes
    from mcptap.redact.scrub import Scrubber
    from mcptap.redact.stderr_stream import GROUP_OTHERS

    def stderr(seq: int, data: bytes) -> dict:
        d: dict = {"type": "stderr", "seq": seq, "t_us": seq}
        encode_bytes(data, "data", d)
        return d

    recs = [stderr(1, b"\r 10%|###   |")] + [{"type": "process", "seq": i, "t_us": i, "event": "note"} for i in range(2, 200)]
    read = []

    def source():
        for r in recs:
            read.append(r["seq"])
            yield r

    out = Scrubber(R).records(source())
    first = next(out)
    assert first["seq"] == 1 and len(read) <= GROUP_OTHERS + 1
    assert [first["seq"]] + [r["seq"] for r in out] == [r["seq"] for r in recs]
