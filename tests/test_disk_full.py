"""Disk full, then free again (issue 9 item 1; reproducer ../shared/repro/disk-full-then-free.sh).

A write that fails half-way must never leave a record cut mid-line with the
next record glued on: the capture stays readable, the lost records are a
``gap`` record, and ``check --fail-on error`` fails on it.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
REPRO = "disk-full-then-free.sh"


class FlakyDisk(CaptureWriter):
    """A writer whose disk takes ``room`` more bytes, then fails with ENOSPC
    (a partial write first, as a real file system does), until ``free()``."""

    def __init__(self, fd: int, room: int, truncate_ok: bool = True) -> None:
        super().__init__(fd)
        self.room = room
        self.truncate_ok = truncate_ok

    def _write(self, data: bytes | memoryview) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = min(len(data), self.room)
        self.room -= n
        return os.write(self._fd, data[:n])

    def free(self) -> None:
        self.room = 1 << 30


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


@pytest.mark.parametrize("room", [0, 1, 17, 40, 41, 95, 130])
def test_a_failed_write_never_glues_records(tmp_path: Path, room: int) -> None:
    p = tmp_path / "c.jsonl"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    w = FlakyDisk(fd, room)
    for i in range(3):
        w.write({"type": "message", "seq": i + 1, "pad": "x" * 20})
    w.flush()                                   # fails somewhere inside the batch
    w.free()
    w.write({"type": "message", "seq": 4})
    w.close()
    recs = _lines(p)                            # every line is a whole record
    seqs = [r["seq"] for r in recs if r["type"] == "message"]
    gaps = [r for r in recs if r["type"] == "gap"]
    assert len(gaps) == 1 and gaps[0]["dropped_records"] == 3 - (len(seqs) - 1)
    assert seqs == [*range(1, len(seqs)), 4]
    assert recs[-1]["seq"] == 4 and w.dropped == gaps[0]["dropped_records"]


def test_a_cut_record_that_cannot_be_truncated_is_skipped_by_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "c.jsonl"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    w = FlakyDisk(fd, 0)
    w.room = 0
    os.write(fd, orjson.dumps({"type": "header", "format": "mcptap-capture", "version": 1}) + b"\n")
    w.room = 10
    monkeypatch.setattr(os, "ftruncate", lambda *a: (_ for _ in ()).throw(OSError(errno.EINVAL, "not a file")))
    w.write({"type": "message", "seq": 1, "dir": "c2s", "kind": "request", "json": {}})
    w.flush()                                   # 10 bytes written, the repair newline fails too
    w.free()
    w.write({"type": "end", "seq": 2})
    w.close()
    text = p.read_bytes()
    assert b'{"type":"m\n{"type":"gap"' in text          # cut line ended before the gap record
    cap = read_capture(str(p))
    assert [r["type"] for r in cap.records] == ["gap", "end"]


def _try_mount(where: Path) -> str | None:
    if shutil.which("mount") is None:
        return "no mount command"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True, timeout=30)
    if r.returncode != 0:
        return f"mounting a tmpfs is not allowed here: {r.stderr.decode(errors='replace').strip()}"
    return None


@pytest.fixture
def tiny_disk() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="mcptap-tiny-"))
    why = _try_mount(where)
    if why is not None:
        where.rmdir()
        pytest.skip(why)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)
        shutil.rmtree(where, ignore_errors=True)


def test_disk_full_then_free_on_a_real_tmpfs(tiny_disk: Path) -> None:
    """The reproducer, end to end: a 4 MiB tmpfs fills up while mcptap records,
    then space comes back; the relay is unharmed and the capture says what it lost.
    The recorder runs behind the relay (transport/handoff.py): records still
    queued when space comes back are written then, so the space freed (3.9 MB)
    is far more than the whole session's records (~1.2 MB)."""
    fill = tiny_disk / "fill"
    fill.write_bytes(b"\0" * 3_900_000)
    cap = tiny_disk / "cap.jsonl"
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(cap), "--", "cat"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    n = 2000
    for i in range(n):
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"n":%d}}\n' % i)
    proc.stdin.flush()
    relayed = b""
    while relayed.count(b"\n") < n:
        chunk = proc.stdout.read1(65536)
        assert chunk, "relay ended early"
        relayed += chunk
    deadline = time.monotonic() + 60
    while os.statvfs(tiny_disk).f_bavail > 0:           # wait until the disk really is full
        assert time.monotonic() < deadline, "the disk never filled up"
        time.sleep(0.05)
    fill.unlink()
    last = b'{"jsonrpc":"2.0","method":"notifications/last"}\n'
    out, err = proc.communicate(last, timeout=60)
    relayed += out
    assert relayed.count(b"\n") == n + 1 and relayed.endswith(last)       # the relay is unharmed
    assert b"capture incomplete" in err and b"records lost" in err
    capture = read_capture(str(cap))                                        # readable, every line whole
    gaps = [r for r in capture.records if r["type"] == "gap"]
    assert gaps and all(g["dropped_records"] > 0 for g in gaps)
    assert capture.end is not None and capture.end["dropped_records"] == sum(g["dropped_records"] for g in gaps)
    methods = [r.get("method") for r in capture.records if r["type"] == "message"]
    assert methods[-1] == "notifications/last"
    for line in cap.read_bytes().splitlines():
        assert line.count(b'"type":') >= 1 and orjson.loads(line)
    check = subprocess.run([*MCPTAP, "check", "--fail-on", "error", str(cap)], capture_output=True, timeout=60)
    assert check.returncode == 1, check.stdout + check.stderr
    assert b"capture.gap" in check.stdout and b"records lost" in check.stdout


def test_a_disk_that_never_frees_still_gets_its_gap_record(tiny_disk: Path) -> None:
    """The disk fills while recording and stays full: the writer gives up its
    reserve file to say how many records were lost, so `check --fail-on error`
    fails on capture.gap even without an end record."""
    cap = tiny_disk / "cap.jsonl"
    proc = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(cap), "--", "cat"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    deadline = time.monotonic() + 60
    while not (cap.exists() and cap.stat().st_size and (tiny_disk / ".cap.jsonl.reserve").exists()):
        assert time.monotonic() < deadline, "no capture header"
        time.sleep(0.02)
    fd = os.open(tiny_disk / "fill", os.O_WRONLY | os.O_CREAT)     # take every byte left
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    n = 300
    lines = b"".join(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"n":%d}}\n' % i for i in range(n))
    out, err = proc.communicate(lines, timeout=60)
    assert out == lines                                   # the relay is unharmed
    assert b"records lost" in err
    assert not (tiny_disk / ".cap.jsonl.reserve").exists()
    capture = read_capture(str(cap))
    gaps = [r for r in capture.records if r["type"] == "gap"]
    assert gaps and gaps[0]["dropped_records"] > 0 and "No space" in gaps[0]["reason"]
    check = subprocess.run([*MCPTAP, "check", "--fail-on", "error", str(cap)], capture_output=True, timeout=60)
    assert check.returncode == 1 and b"capture.gap" in check.stdout, check.stdout


def test_the_reserve_file_is_removed_at_close(tmp_path: Path) -> None:
    w = CaptureWriter.open(str(tmp_path / "c.jsonl"))
    assert not (tmp_path / ".c.jsonl.reserve").exists()     # not before the header is on disk
    w.begin({"type": "header"})
    assert (tmp_path / ".c.jsonl.reserve").stat().st_size == 64 * 1024
    w.close()
    assert [p.name for p in tmp_path.iterdir()] == ["c.jsonl"]


def _shared_disk(monkeypatch: pytest.MonkeyPatch, where: Path, room: int) -> None:
    """Every file under ``where`` shares ``room`` free bytes (a nearly full
    disk): a write takes what is left (a short write), then fails with ENOSPC."""
    real = os.write
    left = {"room": room}

    def write(fd: int, data: bytes | memoryview) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if not target.startswith(str(where)):
            return real(fd, data)
        if left["room"] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = min(len(data), left["room"])
        left["room"] -= n
        return real(fd, data[:n])

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("room", [2_000, 64 * 1024, 64 * 1024 + 500])
def test_the_header_comes_before_the_reserve_on_a_nearly_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   room: int) -> None:
    """Less than the reserve's 64 KiB free: the header is written first and the
    reserve takes what is left, never the other way round (the header lost,
    the capture unreadable whatever follows)."""
    from mcptap.recorder import Recorder

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    _shared_disk(monkeypatch, tmp_path, room)
    path = tmp_path / "c.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", target={"argv": ["srv"]}, clock=lambda: 0, started="2026-01-01T00:00:00Z")
    rec.stdio_bytes(Direction.C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    rec.close(exit_code=0)
    first = orjson.loads(path.read_bytes().splitlines()[0])
    assert first["type"] == "header"
    cap = read_capture(str(path))
    assert cap.header["target"] == {"argv": ["srv"]}


def test_a_header_that_does_not_fit_is_a_capture_that_cannot_be_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcptap.errors import CaptureWriteError
    from mcptap.recorder import Recorder

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    _shared_disk(monkeypatch, tmp_path, 50)
    w = CaptureWriter.open(str(tmp_path / "c.jsonl"))
    with pytest.raises(CaptureWriteError, match="No space left on device"):
        Recorder(w, "stdio", target={}, clock=lambda: 0, started="2026-01-01T00:00:00Z")
    w.discard()
    assert list(tmp_path.iterdir()) == []           # no headerless capture, no reserve


ECHO_SERVER = ("import sys; sys.stdin.readline(); "
               "print('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}', flush=True)")
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


@pytest.mark.parametrize("strict", [False, True])
def test_record_relays_without_recording_when_the_header_cannot_be_written(tmp_path: Path, strict: bool) -> None:
    """No root needed: a file size limit (RLIMIT_FSIZE, 100 bytes) makes the
    header write fail (EFBIG), as a full disk would. The session is relayed and
    mcptap says it records nothing (--strict-capture: the server is not started)."""
    import resource

    cap = tmp_path / "cap.jsonl"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    r = subprocess.run([*MCPTAP, "record", *(["--strict-capture"] if strict else []), "-o", str(cap), "--",
                        sys.executable, "-c", ECHO_SERVER], input=PING, capture_output=True, timeout=60, preexec_fn=limit)
    assert b"cannot write the capture header" in r.stderr, r.stderr
    if strict:
        assert r.returncode == 74 and r.stdout == b""
        assert b"not starting the server (--strict-capture)" in r.stderr
    else:
        assert r.returncode == 0, r.stderr
        assert r.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
        assert b"relaying WITHOUT recording" in r.stderr
    assert not cap.exists() and not (tmp_path / ".cap.jsonl.reserve").exists()


def test_a_64k_tmpfs_keeps_the_header(tmp_path: Path) -> None:
    """The breaker's reproducer: a tmpfs of 64 KiB (less free than the reserve)."""
    where = tmp_path / "small"
    where.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True, timeout=30)
    if m.returncode != 0:
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        cap = where / "cap.jsonl"
        r = subprocess.run([*MCPTAP, "record", "-o", str(cap), "--", sys.executable, "-c", ECHO_SERVER],
                           input=PING, capture_output=True, timeout=60)
        assert r.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
        assert cap.read_bytes().startswith(b'{"type":"header"'), cap.read_bytes()[:120]
        shown = subprocess.run([*MCPTAP, "show", str(cap)], capture_output=True, timeout=60)
        assert shown.returncode == 0 and b"ping" in shown.stdout, shown.stderr
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)
