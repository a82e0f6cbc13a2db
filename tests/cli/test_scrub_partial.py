"""`mcptap scrub -o OUT` that cannot finish (a corrupt record half-way, Ctrl-C)
leaves no half-written OUT behind that reads like a scrubbed capture, and an
OUT that existed before stays as it was; a finished scrub replaces it whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]


def scrub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", "scrub", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60)


def test_corrupt_record_half_way_leaves_no_output(tmp_path: Path) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    lines = cap.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines[:3]) + b'{"type":"message","dir":"sideways"}\n' + b"".join(lines[3:]))
    out = tmp_path / "out.jsonl"
    proc = scrub(str(bad), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("mcptap: "), proc.stderr
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "cap.jsonl"]     # no temporary file left either

    out.write_text("older\n")
    proc = scrub(str(bad), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 2
    assert out.read_text() == "older\n"

    proc = scrub(str(cap), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b'{"type":"header"')
    assert (out.stat().st_mode & 0o777) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "cap.jsonl", "out.jsonl"]


def _mcptap(*args: str, stdin: bytes = b"", cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], input=stdin, capture_output=True, cwd=cwd, timeout=120)


def _corrupt_late(tmp_path: Path) -> Path:
    """A capture with a few hundred KB of good records, then one no reader takes."""
    steps = handshake()
    for i in range(2, 400):
        steps += [c2s(req(i, "tools/call", {"name": "echo", "arguments": {"text": "x" * 400}})), s2c(res(i, {"content": []}))]
    cap = record(tmp_path / "big.jsonl", [*steps, ("exit", 0)])
    lines = cap.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "late.jsonl"
    bad.write_bytes(b"".join(lines[:-3]) + b'{"type":"message","dir":"sideways"}\n' + b"".join(lines[-3:]))
    return bad


def test_a_refusal_part_way_leaves_nothing_on_standard_output(tmp_path: Path) -> None:
    """Standard output (a pipe here), or a path written in place (/dev/stdout, a
    device or FIFO), gets the whole output or nothing: a consumer reading it (`|
    gzip > f`) never sees a partial file. They used to get everything written
    before the refusal: scrub of a capture with chunk records on standard input
    wrote ~72 KB, then refused (exit 2)."""
    from scripted import chunk_capture

    chunked = chunk_capture(tmp_path / "chunked.jsonl")
    bad = _corrupt_late(tmp_path)
    refused = [
        (["scrub", "-o", "-", "-"], chunked.read_bytes()),             # chunk records it cannot re-frame from a pipe
        (["scrub", "-o", "/dev/stdout", "-"], chunked.read_bytes()),
        (["scrub", "-o", "-", str(bad)], b""),                          # a corrupt record late in the file
        (["report", str(bad), "-o", "-"], b""),
        (["report", str(bad), "-o", "/dev/stdout"], b""),
        (["export", str(bad), "-f", "messages"], b""),
        (["export", str(bad), "-f", "messages", "-o", "/dev/stdout"], b""),
    ]
    for args, stdin in refused:
        proc = _mcptap(*args, stdin=stdin, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stdout == b"", (args, len(proc.stdout))
    # the whole, when it goes through
    proc = _mcptap("scrub", "-o", "-", str(chunked), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith(b'{"type":"header"') and proc.stdout.endswith(b"}\n")
    assert b'"type":"end"' in proc.stdout.splitlines()[-1]


def test_a_full_temporary_disk_is_named_not_the_output(tmp_path, monkeypatch, capsysbinary) -> None:
    # the temporary copy's disk filling up said "cannot write -: No space left on device":
    # the user went looking at the output (found by a breaker helper)
    import errno

    import pytest

    from mcptap.cli.errors import Fail
    from mcptap.cli.output import whole_then_copied

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(Fail) as got, whole_then_copied("-") as spool:
        spool.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(tmp_path) in str(got.value) and "TMPDIR" in str(got.value) and "ran out of space" in str(got.value)
    assert capsysbinary.readouterr().out == b""          # and still nothing on standard output
