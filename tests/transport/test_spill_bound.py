"""The relay's spill file has a size bound (transport/spill_bound.py): past it
the relay drops its copies (forwarding never waits), counts them, and the
capture says exactly how many bytes are missing (a ``gap`` record, ``check``:
``capture.gap``); recording resumes once the file was rewound. Nothing here
measures time: the bound is shrunk and analysis is held back on purpose."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import read_capture
from mcptap.catalog import INCOMPLETE, read_info
from mcptap.errors import CaptureReadError
from mcptap.transport import copy_queue, spill_bound
from mcptap.transport.copy_queue import CopyQueue
from mcptap.transport.copy_stream import LOST, SPILLED, read_items
from mcptap.transport.spill import ENTRY, FULL, Recorded, SpillFile

ROOT = Path(__file__).resolve().parents[2]


# -- the bound itself ---------------------------------------------------------------------------

def test_the_bound_is_the_limit_or_half_the_free_space_beyond_the_reserve(monkeypatch: pytest.MonkeyPatch) -> None:
    R = spill_bound.FREE_RESERVE
    assert spill_bound.allowance(1 << 30, None) == 1 << 30
    assert spill_bound.allowance(1 << 30, 100 << 30) == 1 << 30
    assert spill_bound.allowance(1 << 30, R + (200 << 20)) == 100 << 20
    assert spill_bound.allowance(1 << 30, R // 2) == 0                   # less free than the reserve: nothing
    monkeypatch.delenv(spill_bound.ENV_LIMIT, raising=False)
    assert spill_bound.configured_limit() == spill_bound.LIMIT == 1 << 30
    for text, want in (("4096", 4096), ("512M", 512 << 20), ("1g", 1 << 30), ("64KiB", 64 << 10), (" 2 GB", None)):
        monkeypatch.setenv(spill_bound.ENV_LIMIT, text)
        if want is None:
            with pytest.raises(ValueError, match="MCPTAP_SPILL_LIMIT"):
                spill_bound.configured_limit()
            assert spill_bound.configured_limit(strict=False) == spill_bound.LIMIT
        else:
            assert spill_bound.configured_limit() == want


@pytest.mark.parametrize("named", [True, False])
def test_an_append_past_the_bound_writes_nothing_and_a_rewind_makes_room_again(tmp_path: Path, named: bool) -> None:
    limit = 3 * (ENTRY.size + 1000)
    held = Recorded() if named else None
    f = SpillFile(str(tmp_path / "c.spill") if named else None, str(tmp_path), recorded=held, limit=limit)
    data = os.urandom(1000)
    assert [f.append(1, 0, i * 1000, data) >= 0 for i in range(3)] == [True] * 3
    assert f.append(1, 0, 3000, data) == FULL and f.size() <= limit
    r, w = os.pipe()
    os.write(w, data)
    assert f.append_from(1, 0, 3000, r, 1000) == FULL          # its bytes are consumed all the same
    os.write(w, b"next")
    assert os.read(r, 10) == b"next"
    assert f.append_pieces([b"a" * 600, b"b" * 400]) == FULL and f.size() <= limit
    if held is not None:
        held.publish(0, 3000)                                  # the capture holds every entry: rewound
    else:
        f.rewind()
    assert f.append(1, 0, 5000, data) == ENTRY.size
    f.close(remove=True)
    for fd in (r, w):
        os.close(fd)


def test_the_copy_queue_counts_what_the_full_spill_file_could_not_take_in_one_item(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mcptap is behind (the copy pipe is full), the spill file takes two chunks:
    the rest of a flood is one LOST item per direction with its byte count and
    flag 1 (past the bound); the file never grew past its bound."""
    monkeypatch.setattr(copy_queue, "SPILL_BYTES", -1)
    copy_r, copy_w = os.pipe()
    os.set_blocking(copy_w, False)
    filler = 0
    try:
        while True:
            filler += os.write(copy_w, b"\0" * 4096)
    except BlockingIOError:
        pass
    limit = 2 * (ENTRY.size + 4096)
    spill = SpillFile(str(tmp_path / "c.jsonl.spill"), recorded=Recorded(), limit=limit)
    q = CopyQueue(lambda: 5, copy_w, spill)
    sizes = []
    for i in range(200):
        q.chunk(1, os.urandom(4096) if i < 150 else os.urandom(100))
        sizes.append(spill.size())
    q.chunk(0, b"x" * 10)
    q.chunk(1, b"y" * 10)
    assert max(sizes) <= limit and len(q._q) == 5       # two spilled, then LOST s2c, LOST c2s, LOST s2c
    items: list[tuple[int, int, int, int]] = []

    def read() -> None:
        left = filler
        while left:
            left -= len(os.read(copy_r, left))
        read_items(copy_r, lambda *c: None, lambda k, d, flag, t, n: items.append((k, d, flag, n)))

    reader = threading.Thread(target=read)
    reader.start()
    q.close()
    q.feed()
    os.close(copy_w)
    reader.join(10)
    os.close(copy_r)
    assert items[:2] == [(SPILLED, 1, ENTRY.size, 4096), (SPILLED, 1, 2 * ENTRY.size + 4096, 4096)]
    assert items[2:] == [(LOST, 1, 1, 148 * 4096 + 50 * 100), (LOST, 0, 1, 10), (LOST, 1, 1, 10)]
    spill.close(remove=True)


# -- end to end: `mcptap record` with analysis held back past the bound, then again within it ------

NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}\n'
B1 = NOTE * (6 * (1 << 20) // len(NOTE))          # 6 MiB: past the 1 MiB copy pipe and the 2 MiB bound
B2 = NOTE * (3 * (1 << 19) // len(NOTE))          # 1.5 MiB: within the bound once the file was rewound
LIMIT = "2M"
SERVER = ("import sys\n"
          "sys.stdin.buffer.readline()\n"
          f"sys.stdout.buffer.write({NOTE!r} * {len(B1) // len(NOTE)}); sys.stdout.flush()\n"
          "sys.stdin.buffer.readline()\n"
          f"sys.stdout.buffer.write({NOTE!r} * {len(B2) // len(NOTE)}); sys.stdout.flush()\n"
          "sys.stdin.buffer.read()\n")
#: analysis (framed or not) waits while the file HOLD exists; the relay spills as soon as the
#: copy pipe is full (no memory queue), and the copy reader stops while a chunk waits
HELD = ("import os, time, mcptap.transport.copy_queue as rc, mcptap.transport.handoff as h, mcptap.transport.copy_reader as cr; "
        "rc.SPILL_BYTES = 0; cr.READER_PAUSE_BYTES = 0; h.SPILL_BYTES = 1 << 16; "
        "import mcptap.recorder as r\n"
        "def held(f):\n"
        "    def g(self, *a, **k):\n"
        "        while os.path.exists(os.environ['HOLD']): time.sleep(0.01)\n"
        "        return f(self, *a, **k)\n"
        "    return g\n"
        "r.Recorder.stdio_bytes = held(r.Recorder.stdio_bytes); r.Recorder.stdio_unframed = held(r.Recorder.stdio_unframed)\n"
        "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


def _gap_seen(path: Path) -> bool:
    """Whether the capture being written holds an s2c gap record yet. Read while the tap writes
    it, its last line may be half written and read on as two (a corrupt record): not yet."""
    try:
        return bool(_pieces(path)[1])
    except CaptureReadError:
        return False


def _pieces(path: Path) -> tuple[dict[int, bytes], list[dict]]:
    """s2c stream offset -> bytes of each message/chunk record, and the s2c gap records."""
    got: dict[int, bytes] = {}
    gaps = []
    for r in read_capture(str(path)).records:
        if r.get("dir") != "s2c":
            continue
        if r["type"] == "chunk":
            got[r["offset"]] = decode_bytes(r, "data") or b""
        elif r["type"] == "message":
            raw = decode_bytes(r, "raw")
            got[r["offset"]] = raw if raw is not None else orjson.dumps(r["json"]) + r.get("eol", "\n").encode()
        elif r["type"] == "gap":
            gaps.append(r)
    return got, gaps


def _read(p: subprocess.Popen[bytes], n: int) -> bytes:
    assert p.stdout is not None
    out = b""
    while len(out) < n:                          # forwarding never waits for the held analysis
        data = p.stdout.read1(1 << 20)
        assert data, "the tap ended early"
        out += data
    return out


def test_a_flood_past_the_bound_is_forwarded_whole_and_the_capture_counts_what_it_dropped(tmp_path: Path) -> None:
    cap, hold = tmp_path / "cap.jsonl", tmp_path / "hold"
    spill = tmp_path / "cap.jsonl.spill"
    sizes: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                sizes.append(spill.stat().st_size)
            except OSError:
                pass
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    hold.touch()
    p = subprocess.Popen([sys.executable, "-c", HELD, "record", "-q", "--strict-capture", "-o", str(cap), "--",
                          sys.executable, "-c", SERVER],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         env={**os.environ, "HOLD": str(hold), spill_bound.ENV_LIMIT: LIMIT})
    assert p.stdin is not None and p.stderr is not None
    try:
        p.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        p.stdin.flush()
        first = _read(p, len(B1))
        hold.unlink()                            # analysis catches up: burst 1's backlog, then a gap
        for _ in range(3000):                    # hang guard, not a timing assertion
            if _gap_seen(cap):
                break
            time.sleep(0.01)
        hold.touch()                             # held again for burst 2, which the rewound file takes whole
        p.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        p.stdin.flush()
        second = _read(p, len(B2))
        hold.unlink()
        p.stdin.close()
        assert p.wait(120) == 74                 # --strict-capture: the capture is incomplete
        err = p.stderr.read().decode()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        hold.unlink(missing_ok=True)
        stop.set()
        sampler.join()
    assert first == B1 and second == B2          # the host got every byte, in order
    assert sizes and max(sizes) <= 2 << 20, max(sizes)
    got, gaps = _pieces(cap)
    # the records and the gap records tile the stream: every byte is recorded exactly or counted
    pos, lost = 0, 0
    holes = {g["t_us"]: g for g in gaps}
    assert holes and all(g["bytes"] > 0 and "bound" in g["reason"] for g in gaps), gaps
    want = B1 + B2
    for off in sorted(got):
        if off != pos:
            lost += off - pos
        assert want[off:off + len(got[off])] == got[off]
        pos = off + len(got[off])
    assert pos == len(want)
    assert lost == sum(g["bytes"] for g in gaps) > 0
    # the loss is in burst 1 only: once the file was rewound, burst 2 was set aside and recorded whole
    recorded_b2 = sum(len(b) for off, b in got.items() if off >= len(B1))
    assert recorded_b2 == len(B2)
    c = read_capture(str(cap))
    assert c.end is not None and c.end["s2c"]["bytes"] == len(want)
    assert c.end["s2c"]["sha256"] != hashlib.sha256(want).hexdigest()      # it covers the recorded bytes only
    assert not spill.exists()
    assert f"capture incomplete: {lost} forwarded bytes could not be recorded" in err
    check = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--format", "json", str(cap)],
                           capture_output=True, timeout=120, cwd=ROOT)
    assert check.returncode == 1
    report = orjson.loads(check.stdout)["captures"][0]
    codes = {c["code"] for c in report["codes"]}
    assert "capture.gap" in codes and "capture.digest_mismatch" not in codes, codes
    info = read_info(cap)           # `ls`: not listed complete while check reports the gap
    assert info is not None and info.status == INCOMPLETE, info
    text = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", str(cap)], capture_output=True, timeout=120, cwd=ROOT)
    assert b"capture.gap" in text.stdout and b"bound" in text.stdout


@pytest.mark.parametrize("args", [["--", sys.executable, "-c", "pass"], ["--upstream", "http://127.0.0.1:9/mcp"]])
def test_a_bad_limit_is_a_usage_error_before_anything_starts(tmp_path: Path, args: list[str]) -> None:
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-o", str(tmp_path / "c.jsonl"), *args],
                       capture_output=True, timeout=60, cwd=ROOT, env={**os.environ, spill_bound.ENV_LIMIT: "lots"})
    assert p.returncode == 2 and b"MCPTAP_SPILL_LIMIT='lots': not a size in bytes" in p.stderr, p.stderr
    assert not (tmp_path / "c.jsonl").exists()
