"""How ``mcptap show --follow`` stops (found by a breaker helper):

* Ctrl-C (SIGINT) ends it at once with the interrupted exit (130, "mcptap: interrupted"),
  as every command does, whether it still catches up on a long capture (before: it went on
  to the end of the file, 7 s more for 100k records, then exit 0; a million records needed
  SIGKILL) or waits for more (before: summary and exit 0);
* a capture piped in (``tail -f cap | mcptap show --follow -``) is done at its end record,
  as a followed file is (before: nothing until EOF, which ``tail -f`` never gives);
* a followed file overwritten in place by a longer capture (``cp other.jsonl followed.jsonl``)
  says so (before: "corrupt record (not JSON)" in the middle of the other capture's bytes).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]
CMD = [sys.executable, "-m", "mcptap.cli.main", "show", "--no-color", "--oneline", "--poll", "0.02"]


def _pings(tmp_path: Path, name: str, n: int) -> Path:
    steps = handshake()
    for i in range(2, n + 2):
        steps += [c2s(req(i, "ping")), s2c(res(i))]
    return record(tmp_path / name, steps + [("exit", 0)])


def _interrupt_after_first_line(args: list[str]) -> tuple[int, str, str]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, (first + out).decode(), err.decode()


def test_ctrl_c_stops_catching_up_at_once(tmp_path: Path) -> None:
    """The reader of the timeline is a pipe not read until the signal was sent: the
    follower cannot have reached the end of its 3,000 round trips (more than a pipe
    holds) by then, so a Ctrl-C honoured only at the end of the file shows up as the
    last ping and the summary in the output."""
    cap = _pings(tmp_path, "long.jsonl", 3000)
    rc, out, err = _interrupt_after_first_line([*CMD, "--follow", str(cap)])
    assert rc == 130, (rc, err)
    assert err.strip() == "mcptap: interrupted"
    assert "ping id=3001" not in out and "Summary" not in out


def test_ctrl_c_while_waiting_for_more_is_interrupted(tmp_path: Path) -> None:
    cap = _pings(tmp_path, "whole.jsonl", 3)
    live = tmp_path / "live.jsonl"
    live.write_bytes(b"".join(cap.read_bytes().splitlines(keepends=True)[:-1]))      # no end record yet
    writer = open(live, "ab")       # a tap still writing it (a capture nobody writes ends the follow)
    proc = subprocess.Popen([*CMD, "--follow", str(live)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        assert proc.stdout is not None
        seen = []
        while not any("ping id=4" in line and "↩" in line for line in seen):
            line = proc.stdout.readline()
            assert line, "show --follow ended before the capture's last record"
            seen.append(line)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        writer.close()
    assert proc.returncode == 130, err
    assert err.strip() == "mcptap: interrupted"


def test_follow_stops_when_no_process_writes_the_capture(tmp_path: Path) -> None:
    """A capture without its end record that no process writes any more (its tap was
    killed: ``ls`` says truncated): ``show --follow`` used to wait for good; it stops,
    says so, exit 0."""
    cap = _pings(tmp_path, "whole.jsonl", 3)
    dead = tmp_path / "dead.jsonl"
    dead.write_bytes(b"".join(cap.read_bytes().splitlines(keepends=True)[:-1]))
    proc = subprocess.Popen([*CMD, "--follow", str(dead)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "ping id=4" in out and "no end record" in out
    assert "no process writes it any more" in err


def test_ctrl_c_while_waiting_for_the_file_is_interrupted(tmp_path: Path) -> None:
    proc = subprocess.Popen([*CMD, "--follow", str(tmp_path / "later.jsonl")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, text=True)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("mcptap: waiting for ")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip() == "mcptap: interrupted"


def test_follow_stdin_is_done_at_the_end_record(tmp_path: Path) -> None:
    """Standard input stays open (a ``tail -f`` writer): show ends after the end record
    with the summary, as it does when it follows the file."""
    cap = _pings(tmp_path, "cap.jsonl", 2)
    proc = subprocess.Popen([*CMD, "--follow", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT)
    try:
        assert proc.stdin is not None
        proc.stdin.write(cap.read_bytes())
        proc.stdin.flush()
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("show --follow - did not stop at the end record while its input stayed open")
        out = proc.stdout.read().decode() if proc.stdout else ""
        err = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        proc.kill()
        if proc.stdin is not None:
            proc.stdin.close()
    assert rc == 0, err
    assert "ping id=3" in out and "Summary" in out
    followed = subprocess.run([*CMD, "--follow", str(cap)], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    assert out.replace(str(cap), "-") == followed.replace(str(cap), "-")


@pytest.mark.parametrize("how", ["overwrite", "cp"])
def test_follow_says_so_when_the_file_is_overwritten_in_place(tmp_path: Path, how: str) -> None:
    """``overwrite``: the other capture's bytes written over the followed file from its start
    (never shorter, same file); ``cp``: cut to nothing and written again, longer."""
    from mcptap.capture.follow import Follower
    from mcptap.errors import CaptureReadError

    first = _pings(tmp_path, "first.jsonl", 3)
    other = _pings(tmp_path, "other.jsonl", 40).read_bytes()
    live = tmp_path / "live.jsonl"
    lines = first.read_bytes().splitlines(keepends=True)
    live.write_bytes(b"".join(lines[:-1]))
    other = other.replace(b'"started":"', b'"started":"1', 1) if b'"started":"' in other else other
    fol = Follower(str(live), poll=0.01)
    got: list[Any] = []
    errors: list[BaseException] = []

    def follow() -> None:
        try:
            got.extend(fol)
        except CaptureReadError as exc:
            errors.append(exc)

    t = threading.Thread(target=follow)
    t.start()
    for _ in range(500):
        if len(got) >= len(lines) - 2:
            break
        time.sleep(0.01)
    if how == "overwrite":
        with open(live, "r+b") as fp:
            fp.write(other)
    else:
        live.write_bytes(other)
    t.join(10)
    if t.is_alive():
        fol.stop = True
        t.join(10)
    assert errors, f"the follower did not notice ({len(got)} records)"
    msg = str(errors[0])
    assert "overwritten" in msg or (how == "cp" and "cut shorter" in msg), msg
    assert "corrupt" not in msg
