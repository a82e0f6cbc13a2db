"""`-o` naming a device or a FIFO (`-o /dev/null`, a named pipe) is written in
place. Before: `export` and `scrub` wrote a temporary file beside it and
renamed it over the node — run as root, `mcptap export -o /dev/null`
replaced /dev/null with a regular file for the whole machine. Tested on a FIFO
(the same code path; /dev/null itself is never risked). `report` streams since
round 11 and had the same fault for a moment. A FIFO as the *input* (`<(…)`) is
read once: `has_chunks` and check's two-process scan used to open it again."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scripted import c2s, chunk_capture, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cmd", [["export", "--format", "otlp-json"], ["export", "--format", "messages"], ["scrub"], ["report"]])
def test_fifo_output_is_written_in_place(tmp_path: Path, cmd: list[str]) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o666)
    got: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as fp:
            got.append(fp.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *cmd, str(cap), "-o", str(fifo)], capture_output=True,
                          cwd=ROOT, timeout=60)
    if reader.is_alive():            # the command never opened the FIFO: unblock the reader
        with open(fifo, "wb"):
            pass
    reader.join(10)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert stat.S_IMODE(os.stat(fifo).st_mode) == 0o666, "not ours to chmod (as root: /dev/null for every user)"
    assert got and len(got[0]) > 200 and got[0].endswith(b"\n"), got
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.jsonl", "out.fifo"]     # no temporary file left


@pytest.mark.parametrize("cmd", [["check"], ["check", "--full"], ["show"], ["report", "-o", "-"], ["scrub", "-o", "-"]])
def test_a_fifo_capture_is_read_once_and_whole(tmp_path: Path, cmd: list[str]) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    direct = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *cmd[:1], str(cap), *cmd[1:]], capture_output=True, cwd=ROOT, timeout=60)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fp:
            fp.write(cap.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *cmd[:1], str(fifo), *cmd[1:]], capture_output=True,
                          cwd=ROOT, timeout=60)
    writer.join(10)
    assert proc.returncode == direct.returncode == 0, proc.stderr
    assert proc.stdout.replace(str(fifo).encode(), b"CAP") == direct.stdout.replace(str(cap).encode(), b"CAP")


@pytest.mark.parametrize("cmd", [["export", "--format", "messages"], ["scrub"], ["report"]])
def test_through_a_symlink_the_target_is_replaced_and_the_link_stays(tmp_path: Path, cmd: list[str]) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out"
    target.write_text("old")
    link = tmp_path / "link"
    link.symlink_to(target)
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *cmd, str(cap), "-o", str(link)], capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() != "old" and len(target.read_bytes()) > 200
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["out"]          # no temporary file left


@pytest.mark.parametrize("cmd", [["export", "--format", "otlp-json"], ["export", "--format", "messages"], ["scrub"], ["report"]])
@pytest.mark.parametrize("exists", [False, True], ids=["new", "replaced"])
def test_an_output_name_of_255_bytes(tmp_path: Path, cmd: list[str], exists: bool) -> None:
    """The temporary file beside the output had the output's name and more
    (export: OUTPUT.tmpPID; scrub: .OUTPUT.mcptap-PID.tmp): past NAME_MAX (255
    bytes) for an output name of 248 bytes or more, and the command failed
    with "File name too long". Now its name is short, whatever the output's."""
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    where = tmp_path / "out"
    where.mkdir()
    out = where / ("o" * 250 + ".json")
    assert len(out.name.encode()) == 255
    if exists:
        out.write_text("old")
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *cmd, str(cap), "-o", str(out)], capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(out.read_bytes()) > 200 and out.read_bytes().endswith(b"\n")
    assert [p.name for p in where.iterdir()] == [out.name]          # no temporary file left
    assert stat.S_IMODE(out.stat().st_mode) == 0o600          # owner-only, as every file written from a capture


@pytest.mark.parametrize("cmd", [["export", "--format", "messages"], ["scrub"], ["report"]])
def test_a_failed_write_leaves_the_old_output_and_no_temporary_file(tmp_path: Path, cmd: list[str]) -> None:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    lines = cap.read_bytes().splitlines(keepends=True)
    cap.write_bytes(b"".join(lines[:4] + [b"{not json\n"] + lines[4:]))     # a corrupt record half-way
    where = tmp_path / "out"
    where.mkdir()
    out = where / ("o" * 250 + ".json")
    out.write_text("old")
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *cmd, str(cap), "-o", str(out)], capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and b"corrupt record" in proc.stderr, proc.stderr
    assert out.read_text() == "old"
    assert [p.name for p in where.iterdir()] == [out.name]


@pytest.mark.parametrize("cmd", [["check", "@"], ["check", "--full", "@"], ["show", "@"], ["show", "--format", "json", "@"],
                                 ["export", "--format", "messages", "@"], ["diff", "CAP", "@"], ["diff", "@", "CAP"],
                                 ["scrub", "@", "-o", "-"], ["report", "-o", "-", "@"]])
def test_a_fifo_capture_with_chunk_records_reads_as_stdin_does(tmp_path: Path, cmd: list[str]) -> None:
    """Breaker's F2: a FIFO path (``<(…)``, a named pipe) to a capture with chunk records took the
    way of a regular file (its recorded annotations reused: only a regular file is searched for
    chunk records first) and failed at the first one (exit 2, "... not on stdin") where ``-``
    re-annotates; ``diff`` read a FIFO twice ("not an mcptap capture"). Now a path that cannot
    be read twice goes as ``-`` does (scrub and report refuse both alike)."""
    cap = chunk_capture(tmp_path / "cap.jsonl")

    def run(src: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        args = [src if a == "@" else str(cap) if a == "CAP" else a for a in cmd]
        return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], input=stdin, capture_output=True, cwd=ROOT, timeout=60)

    on_stdin = run("-", cap.read_bytes())
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fp:
            fp.write(cap.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    proc = run(str(fifo))
    writer.join(10)
    assert proc.returncode == on_stdin.returncode, proc.stderr
    if cmd[0] != "report":          # (whose page names standard input "stdin")
        assert proc.stdout.replace(str(fifo).encode(), b"-") == on_stdin.stdout
    assert proc.stderr.replace(str(fifo).encode(), b"-") == on_stdin.stderr
    if cmd[0] not in ("scrub", "report"):           # (they need a regular file to re-frame chunk records, and say so)
        assert proc.returncode in (0, 1), proc.stderr
