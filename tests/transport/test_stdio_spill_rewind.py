"""The stdio relay's spill file is rewound once the capture file holds every
byte set aside (``spill.Recorded``): the recorder thread publishes what the
capture holds only after writing it, a bursty session's spill file peaks at
about one burst, and a tap killed after a rewind still leaves ``recover``
every spilled byte the capture lacks."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.transport.handoff import Handoff
from mcptap.transport.spill import ENTRY, Recorded, SpillFile, spill_path
from tests.transport.test_spill_bound import HELD

ROOT = Path(__file__).resolve().parents[2]
C2S, S2C = Direction.C2S, Direction.S2C
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"burst"}}\n'
PER_BURST = 40_000                      # 3.6 MiB a burst: past the 1 MiB copy pipe, most of it spilled
BURSTS = 5


def _streams(path: Path) -> dict[str, dict[int, bytes]]:
    """Per direction: stream offset -> bytes of each message/chunk record."""
    out: dict[str, dict[int, bytes]] = {"c2s": {}, "s2c": {}}
    for r in read_capture(str(path)).records:
        if r["type"] == "chunk":
            out[r["dir"]][r["offset"]] = decode_bytes(r, "data") or b""
        elif r["type"] == "message" and r.get("session") is None:
            raw = decode_bytes(r, "raw")
            out[r["dir"]][r["offset"]] = raw if raw is not None else orjson.dumps(r["json"]) + r.get("eol", "\n").encode()
    return out


def _joined(pieces: dict[int, bytes]) -> bytes:
    got = b""
    for off in sorted(pieces):
        assert off == len(got), f"a hole or an overlap at {off}"
        got += pieces[off]
    return got


# -- the recorder thread publishes only what is written ---------------------------------------

class _Checked(Recorded):
    """Checks, at each publish, that the capture file on disk holds what is published."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.seen: list[tuple[int, int]] = []

    def publish(self, c2s: int, s2c: int) -> None:
        lines = [orjson.loads(x) for x in self.path.read_bytes().splitlines()]
        ends = {"c2s": 0, "s2c": 0}
        for r in lines:
            if r["type"] == "chunk":
                ends[r["dir"]] = r["offset"] + len(decode_bytes(r, "data") or b"")
            elif r["type"] == "message":
                ends[r["dir"]] = r["offset"] + len(decode_bytes(r, "raw") or orjson.dumps(r["json"]) + r.get("eol", "\n").encode())
        assert (c2s, s2c) <= (ends["c2s"], ends["s2c"]) and c2s <= ends["c2s"] and s2c <= ends["s2c"], ((c2s, s2c), ends)
        self.seen.append((c2s, s2c))
        super().publish(c2s, s2c)


def _handoff(tmp: Path) -> tuple[Handoff, Recorder, _Checked, SpillFile]:
    cap = tmp / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z")
    h = Handoff(rec, lambda reason: None)
    h.recorded = _Checked(cap)
    h.spill = SpillFile(str(tmp / "cap.jsonl.spill"))
    return h, rec, h.recorded, h.spill


def test_the_recorder_thread_publishes_what_the_capture_file_holds(tmp_path: Path) -> None:
    h, rec, held, spill = _handoff(tmp_path)
    set_aside = NOTE * 3 + b'{"jsonrpc":'
    at = spill.append(0, 1, 0, set_aside)
    h.start()
    h.chunk(S2C, NOTE)
    h.spilled(C2S, at, len(set_aside), 2)                     # stored unframed: in the capture whole
    for _ in range(50):
        h.chunk(S2C, NOTE * 2)
    for _ in range(500):                                      # hang guard: caught up
        if h.progress == 52 and held.s2c.value == len(NOTE) * 101:
            break
        time.sleep(0.01)
    h.chunk(S2C, NOTE + b'{"jsonrpc":"2.0",')                 # framed again: the framer holds a line
    h.stop()
    assert held.seen, "nothing was published"
    assert held.seen == sorted(held.seen)                     # it only grows
    assert (held.c2s.value, held.s2c.value) == (len(set_aside), len(NOTE) * 102)   # the held line is not in it
    spill.close(remove=True)


def test_nothing_more_is_published_while_a_lost_record_is_unannounced_or_once_the_recorder_failed(tmp_path: Path) -> None:
    h, rec, held, spill = _handoff(tmp_path)
    h.start()
    h.chunk(S2C, NOTE)
    h.stop()
    assert held.s2c.value == len(NOTE)
    assert rec.writer is not None
    rec.writer._unreported = 1                                # disk full: a record is lost and no gap record says so yet
    h2 = Handoff(rec, lambda reason: None)
    h2.recorded = held
    h2.start()
    h2.chunk(S2C, NOTE)
    h2.stop()
    assert held.s2c.value == len(NOTE)
    rec.writer._unreported = 0
    h3 = Handoff(rec, lambda reason: None)
    h3.recorded = held
    h3.error = "ValueError: a bug"
    h3.start()
    h3.chunk(S2C, NOTE)
    h3.stop()
    assert held.s2c.value == len(NOTE)


def _fail_writes(writer: CaptureWriter, n: int) -> list[int]:
    """The writer's next ``n`` writes fail as on a full disk (ENOSPC); returns the count left."""
    left = [n]
    real = writer._write

    def write(data: bytes | memoryview) -> int:
        if left[0] > 0:
            left[0] -= 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(data)

    writer._write = write                                     # type: ignore[method-assign]
    return left


def test_the_spill_file_is_rewound_again_once_the_capture_announced_a_lost_record(tmp_path: Path) -> None:
    """A write that failed once (the disk filled up and freed again) costs the records in it and
    a gap record says so; from there the capture holds, or declares lost, every byte before the
    published offsets, so the relay rewinds its spill file again (it used to stay a log for the
    rest of the session, growing to its bound). While the loss is not announced (the disk stays
    full, even the reserve's gap record failed) nothing more is published."""
    cap = tmp_path / "cap.jsonl"
    writer = CaptureWriter.open(str(cap))
    rec = Recorder(writer, "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z")
    held = Recorded()
    spill = SpillFile(str(tmp_path / "cap.jsonl.spill"), recorded=held)
    h = Handoff(rec, lambda reason: None)
    h.recorded = held
    h.start()
    h.chunk(S2C, NOTE)
    for _ in range(500):                                      # hang guard: written and published
        if held.s2c.value == len(NOTE):
            break
        time.sleep(0.01)
    assert spill.append(1, 5, len(NOTE), NOTE * 2) >= 0       # the relay sets a backlog aside meanwhile
    left = _fail_writes(writer, 1)                            # the next write fails; the reserve's room takes the gap
    h.chunk(S2C, NOTE * 2)
    for _ in range(500):
        if h.progress == 2 and not left[0]:
            break
        time.sleep(0.01)
    h.chunk(S2C, NOTE)
    h.stop()
    assert held.s2c.value == len(NOTE) * 4                    # the dropped record's bytes are announced lost
    assert writer.dropped == 2 and writer.unreported == 0           # the two lines of that chunk
    assert spill.append(1, 5, len(NOTE) * 4, NOTE) == ENTRY.size and spill.rewinds == 1
    gaps = [r for r in read_capture(str(cap)).records if r["type"] == "gap"]
    assert len(gaps) == 1 and gaps[0]["dropped_records"] == 2
    # the disk stays full: the gap record cannot be written either, so nothing more is published
    _fail_writes(writer, 1 << 30)
    h2 = Handoff(rec, lambda reason: None)
    h2.recorded = held
    h2.start()
    h2.chunk(S2C, NOTE)
    h2.stop()
    assert writer.unreported > 0 and held.s2c.value == len(NOTE) * 4
    assert spill.append(1, 5, len(NOTE) * 5, NOTE) > ENTRY.size and spill.rewinds == 1     # a log again
    writer._write = lambda data: os.write(writer._fd, data)   # type: ignore[method-assign]
    spill.close(remove=True)


# -- end to end: a bursty server through the real `mcptap record` -------------------------------

#: the relay logs each spilled entry (direction, offset, n) and each rewind, so the test knows
#: every byte that was ever set aside (the relay is forked from mcptap: the patch is inherited)
LOGGED = ("import os, mcptap.transport.spill as sp\n"
          "def log(line):\n"
          "    fd = os.open(os.environ['SPILL_LOG'], os.O_WRONLY | os.O_APPEND | os.O_CREAT); os.write(fd, line.encode()); os.close(fd)\n"
          "def logged(app):\n"
          "    def append(self, d, t, off, *a):\n"
          "        k = self.rewinds; at = app(self, d, t, off, *a)\n"
          "        self.rewinds > k and log('rewind\\n')\n"
          "        at >= 0 and log(f'{d} {off} {a[-1] if len(a) == 2 else len(a[0])}\\n')\n"
          "        return at\n"
          "    return append\n"
          "sp.SpillFile.append = logged(sp.SpillFile.append); sp.SpillFile.append_from = logged(sp.SpillFile.append_from)\n")


def _burst_of(lines: list[str], i: int, size: int) -> int:
    """The burst of the last entry logged at or before ``lines[i]``."""
    while lines[i] == "rewind":
        i -= 1
    return int(lines[i].split()[1]) // size


def _sample_size(path: Path, stop: threading.Event, sizes: list[int]) -> None:
    while not stop.is_set():
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            pass
        time.sleep(0.002)


#: a burst per request line; analysis waits while the file HOLD exists (``HELD``; no timing: the
#: test holds it for each burst and lets it catch up between bursts)
ON_REQUEST = ("import sys\n"
              f"for _ in range({BURSTS}):\n"
              f"    sys.stdin.buffer.readline(); sys.stdout.buffer.write({NOTE!r} * {PER_BURST}); sys.stdout.flush()\n"
              "sys.stdin.buffer.read()\n")


def _s2c_recorded(cap: Path) -> int:
    """Bytes of s2c messages and chunks in the capture so far (a partial last line skipped)."""
    n = 0
    try:
        data = cap.read_bytes()
    except OSError:
        return 0
    for line in data.split(b"\n"):
        try:
            r = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(r, dict) or r.get("dir") != "s2c":
            continue
        if r.get("type") == "chunk":
            n += len(decode_bytes(r, "data") or b"")
        elif r.get("type") == "message":
            raw = decode_bytes(r, "raw")
            n += len(raw) if raw is not None else len(orjson.dumps(r["json"])) + 1
    return n


def test_a_bursty_session_spills_about_one_burst_at_a_time_and_records_everything(tmp_path: Path) -> None:
    """Analysis is behind during each burst (held) and catches up between them (released):
    each burst is spilled into a rewound file, so the file holds one burst, not the session."""
    cap, spill, log, hold = tmp_path / "cap.jsonl", tmp_path / "cap.jsonl.spill", tmp_path / "spill.log", tmp_path / "hold"
    hello = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    sizes: list[int] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_size, args=(spill, stop, sizes))
    sampler.start()
    burst = NOTE * PER_BURST
    out = b""
    try:
        p = subprocess.Popen([sys.executable, "-c", LOGGED + HELD, "record", "-q", "-o", str(cap), "--",
                              sys.executable, "-c", ON_REQUEST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
                             env={**os.environ, "SPILL_LOG": str(log), "HOLD": str(hold)})
        assert p.stdin is not None and p.stdout is not None
        for k in range(1, BURSTS + 1):
            hold.touch()
            p.stdin.write(hello)
            p.stdin.flush()
            while len(out) < len(burst) * k:
                data = p.stdout.read1(1 << 20)
                assert data, "the tap ended early"
                out += data
            hold.unlink()
            for _ in range(6000):                # hang guard, not a timing assertion: analysis catches up
                if _s2c_recorded(cap) >= len(burst) * k:
                    break
                time.sleep(0.01)
        p.stdin.close()                          # the server's last read ends: it exits
        assert p.wait(60) == 0
    finally:
        hold.unlink(missing_ok=True)
        stop.set()
        sampler.join()
    assert out == burst * BURSTS
    c = read_capture(str(cap))
    got = _streams(cap)
    assert _joined(got["c2s"]) == hello * BURSTS and _joined(got["s2c"]) == burst * BURSTS
    assert c.end is not None and c.end["s2c"]["sha256"] == hashlib.sha256(burst * BURSTS).hexdigest()
    assert c.end.get("chunks", {}).get("records", 0) > 0 and not spill.exists()
    # every burst was spilled, each after the first into a rewound file (the relay's log) ...
    lines = log.read_text().splitlines()
    firsts = [i for i, x in enumerate(lines) if x != "rewind" and (i == 0 or int(x.split()[1]) // len(burst) != _burst_of(lines, i - 1, len(burst)))]
    assert len(firsts) == BURSTS, lines
    assert all(lines[i - 1] == "rewind" for i in firsts[1:]), lines
    # ... so the file (sampled) held about one burst at a time, not the session's total
    assert 0 < max(sizes) <= len(burst) + (1 << 20), (max(sizes), len(burst))


@pytest.mark.parametrize("name", ["cap.jsonl", "\u00e9" * 123 + ".jsonl"])
def test_a_tap_killed_after_a_rewind_leaves_recover_every_spilled_byte_the_capture_lacks(tmp_path: Path, name: str) -> None:
    """Bursts 1 and 2 are recorded, then analysis is held: burst 3 is spilled after a rewind,
    mcptap is SIGKILLed, and ``recover`` brings back every byte ever set aside. Also for a
    capture name of 252 bytes, whose ``NAME.spill`` would be too long a file name: the relay
    could not create it and lost the spilled chunks (gap records) before ``spill_path``
    shortened it."""
    cap, log, hold = tmp_path / name, tmp_path / "spill.log", tmp_path / "hold"
    spill = Path(spill_path(str(cap)))
    assert len(os.fsencode(spill.name)) <= 255 and spill.parent == tmp_path
    # each burst answers a request; analysis is held (a file) during each burst and released
    # after bursts 1 and 2 until they are recorded, never after burst 3 (whatever the load)
    p = subprocess.Popen([sys.executable, "-c", LOGGED + HELD, "record", "-q", "-o", str(cap), "--",
                          sys.executable, "-c", ON_REQUEST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
                         env={**os.environ, "SPILL_LOG": str(log), "HOLD": str(hold)})
    assert p.stdin is not None and p.stdout is not None
    burst = NOTE * PER_BURST
    want = burst * 3
    got = b""
    for k in range(1, 4):
        hold.touch()
        p.stdin.write(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % k)
        p.stdin.flush()
        while len(got) < len(burst) * k:             # forwarding never waits for the held analysis
            data = p.stdout.read1(1 << 20)
            assert data, "the tap ended early"
            got += data
        if k < 3:
            hold.unlink()
            for _ in range(6000):                    # hang guard, not a timing assertion: analysis catches up
                if _s2c_recorded(cap) >= len(burst) * k:
                    break
                time.sleep(0.01)
    assert got == want
    for _ in range(6000):                            # hang guard: burst 3's last entry is in the log
        entries = [tuple(map(int, x.split())) for x in log.read_text().splitlines() if x != "rewind"]
        if entries and entries[-1][1] + entries[-1][2] == len(want):
            break
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    lines = log.read_text().splitlines()
    third = next(i for i, x in enumerate(lines) if x != "rewind" and int(x.split()[1]) >= 2 * len(NOTE) * PER_BURST)
    assert lines[third - 1] == "rewind", "burst 3 was not spilled into a rewound file"
    assert read_capture(str(cap)).end is None and spill.exists()
    before = _streams(cap)["s2c"]
    rec = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "recover", str(cap)], capture_output=True, timeout=120, cwd=ROOT)
    assert rec.returncode == 0, rec.stderr
    after = _streams(cap)["s2c"]
    assert len(after) > len(before), "recover added nothing"
    covered = bytearray(len(want))
    for off, data in after.items():
        assert want[off:off + len(data)] == data                     # exactly what was forwarded there
        covered[off:off + len(data)] = b"\1" * len(data)
    for d, off, n in (tuple(map(int, x.split())) for x in lines if x != "rewind"):
        assert d == 1 and covered[off:off + n] == b"\1" * n, f"spilled bytes {off}..{off + n} are not in the capture"
    # what the capture held before the kill (bursts 1 and 2, all of it) and what was recovered
    assert _joined({o: b for o, b in before.items() if o < 2 * len(NOTE) * PER_BURST}) == want[:2 * len(NOTE) * PER_BURST]
