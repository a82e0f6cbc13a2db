"""The relay's spill file: disk reserved ahead of its writes, but its size and
its entries are exactly what was written (``recover`` reads it as a log)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.transport import spill as spill_mod
from mcptap.transport.spill import ENTRY, NAME_MAX, RESERVE, Recorded, SpillFile, entries, spill_path


def test_reserved_space_leaves_the_size_and_the_entries_as_written(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.spill"
    f = SpillFile(str(path))
    first, second = os.urandom(1000), os.urandom(300_000)
    at1 = f.append(0, 5, 0, first)
    r, w = os.pipe()
    os.write(w, second[:60_000])
    threading.Thread(target=lambda: os.write(w, second[60_000:])).start()
    at2 = f.append_from(1, 6, 0, r, len(second))
    if f._reserved < 0:
        pytest.skip("this file system refuses fallocate")
    st = os.stat(path)
    assert st.st_size == 2 * ENTRY.size + len(first) + len(second)          # not the reserved size
    assert st.st_blocks * 512 >= RESERVE                                      # the space is reserved
    assert list(entries(str(path))) == [(0, 5, 0, first), (1, 6, 0, second)]
    assert f.read(at1, len(first)) == first and f.read(at2, len(second)) == second
    f.close(remove=True)
    assert not path.exists()
    os.close(r)
    os.close(w)


def test_without_fallocate_entries_are_written_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill_mod, "_fallocate_fn", lambda: None)
    path = tmp_path / "c.jsonl.spill"
    f = SpillFile(str(path))
    for i in range(3):
        assert f.append(i % 2, i, i * 10, bytes([i]) * 10) >= 0
    assert f._reserved == -1
    assert list(entries(str(path))) == [(i % 2, i, i * 10, bytes([i]) * 10) for i in range(3)]
    f.close(remove=True)


def test_a_frame_of_pieces_is_one_entry_read_back_piece_by_piece(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP recorder link sets a frame aside with one write (one entry), and the
    recorder process reads it back in the sizes it decodes, across piece boundaries too."""
    from mcptap.transport.http_recorder_child import _SpilledFrame

    f = SpillFile(None, str(tmp_path))
    writes: list[int] = []
    real = os.pwritev
    monkeypatch.setattr(os, "pwritev", lambda fd, bufs, at: writes.append(len(bufs)) or real(fd, bufs, at))
    pieces = [b"head", b"meta!", os.urandom(100_000)]
    at = f.append(0, 0, 0, b"before")
    at = f.append_pieces([pieces[0], memoryview(pieces[1]), pieces[2]])
    assert writes == [2, 4]                                   # one write for the frame (entry head + 3 pieces)
    frame = _SpilledFrame(f, [(at, sum(map(len, pieces)))])
    assert [frame.read(4), frame.read(5), frame.read(100_000)] == pieces
    with pytest.raises(EOFError):
        frame.read(1)
    split = _SpilledFrame(f, [(at, 6), (at + 6, 9 + 100_000 - 6)])   # places cut inside a read
    assert split.read(9) == b"headmeta!" and split.read(100_000) == pieces[2]


def test_rewind_writes_from_the_start_again_and_appended_keeps_counting(tmp_path: Path) -> None:
    """The HTTP tap's spill file is rewound once its entries were read back: the next
    entries reuse the start (the same pages), and ``appended`` (what the forked recorder
    watches while a large body flows) still grows, read through the shared descriptor."""
    f = SpillFile(None, str(tmp_path))
    first = os.urandom(50_000)
    at1 = f.append_pieces([first])
    assert f.appended() == ENTRY.size + len(first)
    size = os.fstat(f._fd).st_size
    f.rewind()
    second = os.urandom(20_000)
    at2 = f.append_pieces([b"ab", second])
    assert at2 == at1 == ENTRY.size                                     # written over the first entry
    assert f.read(at2, 2 + len(second)) == b"ab" + second
    assert os.fstat(f._fd).st_size == size                              # no new space
    assert f.appended() == 2 * ENTRY.size + len(first) + 2 + len(second)
    pid = os.fork()
    if pid == 0:                                                        # the recorder process's view
        os._exit(0 if f.appended() == 2 * ENTRY.size + len(first) + 2 + len(second) else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    f.close()


def test_rewind_gives_back_the_space_of_a_backlog_beyond_keep_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill_mod, "KEEP_BYTES", 100_000)
    f = SpillFile(None, str(tmp_path))
    for _ in range(5):
        assert f.append_pieces([os.urandom(60_000)]) >= 0
    assert os.fstat(f._fd).st_size > 300_000
    f.rewind()
    st = os.fstat(f._fd)
    assert st.st_size == 100_000 and st.st_blocks * 512 <= 100_000 + 4096 * 2   # reserved blocks beyond it freed too
    data = os.urandom(70_000)
    at = f.append_pieces([data])
    assert at == ENTRY.size and f.read(at, len(data)) == data
    f.close()


def test_a_named_spill_file_is_a_log_and_is_never_rewound(tmp_path: Path) -> None:
    f = SpillFile(str(tmp_path / "c.jsonl.spill"))
    f.append(0, 1, 0, b"x")
    with pytest.raises(ValueError):
        f.rewind()
    assert list(entries(str(tmp_path / "c.jsonl.spill"))) == [(0, 1, 0, b"x")]
    f.close(remove=True)


# -- the stdio relay's named spill file rewinds once the capture holds every entry (spill.Recorded)

def test_a_named_spill_file_is_rewound_only_once_the_capture_holds_every_spilled_byte(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.spill"
    held = Recorded()
    f = SpillFile(str(path), recorded=held)
    a, b, c = os.urandom(100), os.urandom(1000), os.urandom(500)
    at_a = f.append(0, 1, 0, a)
    at_b = f.append(1, 2, 0, b)
    held.publish(100, 999)                                # s2c lacks its last byte: still a log
    at_c = f.append(1, 3, 1000, c)
    assert ENTRY.size == at_a < at_b < at_c and f.rewinds == 0
    assert [e[2:] for e in entries(str(path))] == [(0, a), (0, b), (1000, c)]
    held.publish(99, 1500)                                # now c2s lacks one
    d = os.urandom(300)
    at_d = f.append(1, 4, 1500, d)
    assert at_d > at_c and f.rewinds == 0
    held.publish(100, 1800)                               # every byte of every entry: from 0 again
    e = os.urandom(200)
    at_e = f.append(0, 5, 100, e)
    assert at_e == ENTRY.size and f.rewinds == 1
    assert path.stat().st_size == ENTRY.size + len(e)     # one backlog, not the session's
    assert list(entries(str(path))) == [(0, 5, 100, e)]
    assert f.read(at_e, len(e)) == e
    # the same through append_from (the s2c tee path), the value published by another process
    # (the relay is forked after the shared memory was made)
    r, w = os.pipe()
    g = os.urandom(70_000)
    threading.Thread(target=lambda: os.write(w, g)).start()
    at_g = f.append_from(1, 6, 1800, r, len(g))
    assert at_g == 2 * ENTRY.size + len(e) and f.rewinds == 1       # e (c2s up to 300) is not recorded yet
    pid = os.fork()
    if pid == 0:
        held.publish(300, 1800 + len(g))
        os._exit(0)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    h = os.urandom(50_000)
    threading.Thread(target=lambda: os.write(w, h)).start()
    at_h = f.append_from(1, 7, 1800 + len(g), r, len(h))
    assert at_h == ENTRY.size and f.rewinds == 2
    assert list(entries(str(path))) == [(1, 7, 1800 + len(g), h)] and f.read(at_h, len(h)) == h
    f.close(remove=True)
    os.close(r)
    os.close(w)


def test_a_rewind_gives_the_reserved_space_back_and_reserves_again(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.spill"
    held = Recorded()
    f = SpillFile(str(path), recorded=held)
    off = 0
    for _ in range(3):
        data = os.urandom(RESERVE)                        # each entry reserves beyond itself
        assert f.append(1, 0, off, data) >= 0
        off += len(data)
    if f._reserved < 0:
        pytest.skip("this file system refuses fallocate")
    assert os.stat(path).st_blocks * 512 >= 3 * RESERVE
    held.publish(0, off)
    assert f.append(1, 0, off, b"x") == ENTRY.size
    st = os.stat(path)
    assert st.st_size == ENTRY.size + 1 and RESERVE <= st.st_blocks * 512 < 2 * RESERVE
    assert 0 < f._reserved <= RESERVE
    f.close(remove=True)


def test_the_copy_queue_reuses_spill_offsets_once_the_capture_holds_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the relay's copy queue: SPILLED items name offsets that come round
    again once, and only once, the capture holds what was set aside."""
    from mcptap.transport import copy_queue
    from mcptap.transport.copy_queue import CopyQueue
    from mcptap.transport.copy_stream import SPILLED, read_items

    monkeypatch.setattr(copy_queue, "SPILL_BYTES", -1)
    copy_r, copy_w = os.pipe()
    os.set_blocking(copy_w, False)
    filler = 0
    try:
        while True:                                       # mcptap is behind: the copy pipe is full
            filler += os.write(copy_w, b"\0" * 4096)
    except BlockingIOError:
        pass
    held = Recorded()
    spill = SpillFile(str(tmp_path / "c.jsonl.spill"), recorded=held)
    q = CopyQueue(lambda: 5, copy_w, spill)
    chunks = [os.urandom(n) for n in (1000, 2000, 3000, 4000)]
    q.chunk(1, chunks[0])
    q.chunk(0, chunks[1])
    held.publish(1999, 1000)                              # c2s's entry lacks a byte: nothing reused
    q.chunk(1, chunks[2])
    held.publish(2000, 4000)
    q.chunk(1, chunks[3])
    places: list[int] = []

    def read() -> None:
        left = filler
        while left:
            left -= len(os.read(copy_r, left))
        read_items(copy_r, lambda *c: None, lambda k, d, flag, t, n: places.append(flag) if k == SPILLED else None)

    reader = threading.Thread(target=read)
    reader.start()
    q.close()
    q.feed()
    os.close(copy_w)
    reader.join(10)
    os.close(copy_r)
    assert places == [ENTRY.size, 2 * ENTRY.size + 1000, 3 * ENTRY.size + 3000, ENTRY.size]
    assert spill.read(ENTRY.size, 4000) == chunks[3] and spill.size() == ENTRY.size + 4000
    spill.close(remove=True)


@given(st.text(alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=300))
def test_a_spill_file_name_always_fits_and_keeps_a_short_capture_name(name: str) -> None:
    """``<capture>.spill`` when that fits in a file name (255 bytes); else
    the capture name's first whole characters, ``~``, 12 hex digits of its
    SHA-256 and ``.spill``: at most 255 bytes, beside the capture, and two
    long names that differ only at their end get different spill files."""
    path = os.path.join("/some/dir", name)
    got = spill_path(path)
    assert os.path.dirname(got) == "/some/dir"
    base = os.path.basename(got)
    assert len(os.fsencode(base)) <= NAME_MAX and base.endswith(".spill")
    if len(os.fsencode(name + ".spill")) <= NAME_MAX:
        assert got == path + ".spill"
    else:
        assert "~" in base and name.startswith(base[:base.rindex("~")])
        assert len(os.fsencode(base)) > NAME_MAX - 4          # no more shortened than needed (a 4-byte character at most)
        assert spill_path(path + "x") != got
