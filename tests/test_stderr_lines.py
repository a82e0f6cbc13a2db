"""One stderr line written in two write() calls is two reads, never a
process.stderr_unterminated finding: that is judged when the stream ends
(exit, end of capture) mid-line, or at once for CR progress output; the same
live, in `check` and in `check --full` (which also drops the false finding an
older mcptap stored on the first piece)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.recorder import Recorder

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
CODE = "process.stderr_unterminated"


def _codes(path: Path) -> list[tuple[str, int]]:
    cap = read_capture(str(path))
    out = [(f["code"], r.get("seq")) for r in cap.records for f in r.get("findings", ())]
    return out + [(f["code"], None) for f in (cap.end or {}).get("unanswered", ())]


def _record(path: Path, pieces: list[bytes], exit_: bool = True) -> Path:
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["srv"]}, clock=lambda: 0, started="2026-01-01T00:00:00Z")
    for p in pieces:
        rec.stderr(p)
    if exit_:
        rec.exit(code=0)
    rec.close(exit_code=0)
    return path


def test_a_line_in_two_writes_is_no_finding(tmp_path: Path) -> None:
    p = _record(tmp_path / "c.jsonl", [b"loading model", b" ... done\n"])
    assert CODE not in [c for c, _ in _codes(p)]
    assert [r["data"] for r in read_capture(str(p)).records if r["type"] == "stderr"] == ["loading model", " ... done\n"]


def test_a_stream_that_ends_mid_line_is_flagged_at_the_exit(tmp_path: Path) -> None:
    p = _record(tmp_path / "c.jsonl", [b"ok\n", b"Traceback (most rec"])
    exit_seq = next(r["seq"] for r in read_capture(str(p)).records if r.get("event") == "exit")
    assert [s for c, s in _codes(p) if c == CODE] == [exit_seq]
    p2 = _record(tmp_path / "d.jsonl", [b"no exit recorded"], exit_=False)
    assert [s for c, s in _codes(p2) if c == CODE] == [None]          # judged at the end of the capture


def test_cr_progress_output_is_flagged_at_its_read(tmp_path: Path) -> None:
    p = _record(tmp_path / "c.jsonl", [b"10%\r20%\r", b"30%\r", b"done\n"])
    first = next(r for r in read_capture(str(p)).records if r["type"] == "stderr")
    assert [s for c, s in _codes(p) if c == CODE] == [first["seq"]]


def _check(path: Path, *extra: str) -> bytes:
    r = subprocess.run([*MCPTAP, "check", *extra, "--format", "json", str(path)], capture_output=True, timeout=60)
    return r.stdout


def test_live_check_and_full_check_agree_on_a_real_server(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    server = ("import sys, time; sys.stderr.write('loading model'); sys.stderr.flush(); time.sleep(0.2); "
              "sys.stderr.write(' ... done\\n'); sys.stderr.flush()")
    r = subprocess.run([*MCPTAP, "record", "-q", "-o", str(cap), "--", sys.executable, "-c", server], input=b"", capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stderr == b"loading model ... done\n"
    assert CODE.encode() not in cap.read_bytes()
    assert CODE.encode() not in _check(cap) and CODE.encode() not in _check(cap, "--full")


def test_full_check_drops_the_false_finding_an_older_mcptap_stored(tmp_path: Path) -> None:
    cap = _record(tmp_path / "c.jsonl", [b"loading model", b" ... done\n"])
    lines = cap.read_bytes().splitlines(keepends=True)
    old = []
    for line in lines:
        rec = orjson.loads(line)
        if rec["type"] == "stderr" and rec["data"] == "loading model":
            rec["findings"] = [{"code": CODE, "severity": "info", "message": "stderr data without a newline"}]
            line = orjson.dumps(rec) + b"\n"
        old.append(line)
    cap.write_bytes(b"".join(old))
    assert CODE.encode() not in _check(cap, "--full")
