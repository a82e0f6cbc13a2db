"""The exit record carries the time the server's exit was observed
(``exit_t_us``, the capture's clock), not only the time it was written: the
record follows the server's last output (so requests still open are judged on
all of it), and a descendant holding stdout can keep that open long after the
exit. The exit used to be known only by the record's ``t_us``, stamped when
stdout (and stderr) closed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import orjson

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
HANG = 30


def test_the_exit_is_stamped_when_it_is_observed_not_when_stdout_closes(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # the server (sh) exits at once; its background child keeps stdout open 1.5 s more
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--",
                        "sh", "-c", "(sleep 1.5; echo late) & echo early"],
                       input=b"", capture_output=True, env=env, timeout=HANG)
    assert (p.returncode, p.stdout) == (0, b"early\nlate\n"), p.stderr
    recs = read_capture(str(out)).records
    spawn = next(r for r in recs if r.get("event") == "spawn")
    eof = next(r for r in recs if r["type"] == "eof" and r["dir"] == "s2c")
    ex = next(r for r in recs if r.get("event") == "exit")
    assert recs.index(eof) < recs.index(ex)                 # still after the server's last output
    assert spawn["t_us"] <= ex["exit_t_us"] <= ex["t_us"]
    assert eof["t_us"] - ex["exit_t_us"] > 1_000_000, (ex, eof)  # the exit came well before stdout closed


def test_mcptap_ends_soon_after_its_server_whatever_analysis_has_left(tmp_path: Path) -> None:
    """A flood of tiny lines (300k non-JSON lines in 600 KB: below the 1 MiB
    backlog that makes the recorder store chunks unframed) and the server's
    exit: mcptap waited until every line was annotated (2.6 s after `yes` died
    of SIGPIPE on the tester's machine). Analysis now gets stdio.CATCH_UP_WAIT
    after the session; the rest is stored unframed (chunk records), so the
    capture still holds every byte."""
    out = tmp_path / "cap.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    n = 600_000
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--",
                        "sh", "-c", f"yes | head -c {n}"], input=b"", capture_output=True, env=env, timeout=120)
    assert (p.returncode, p.stdout) == (0, b"y\n" * (n // 2)), p.stderr
    cap = read_capture(str(out))
    ex = next(r for r in cap.records if r.get("event") == "exit")
    assert cap.end is not None and cap.end["t_us"] - ex["exit_t_us"] < 2_500_000, (ex, cap.end["t_us"])
    got = b"".join((decode_bytes(r, "data") or b"") if r["type"] == "chunk" else
                   (decode_bytes(r, "raw") or orjson.dumps(r["json"]) + r.get("eol", "\n").encode())
                   for r in cap.records if r["type"] in ("message", "chunk") and r.get("dir") == "s2c")
    assert got == p.stdout
    assert cap.end["s2c"]["bytes"] == n and cap.end["s2c"]["sha256"] == hashlib.sha256(p.stdout).hexdigest()
