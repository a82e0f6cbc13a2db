"""The relay's spill file: disk reserved ahead of its writes, but its size and
its entries are exactly what was written (``recover`` reads it as a log)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mcptap.transport import spill as spill_mod
from mcptap.transport.spill import ENTRY, RESERVE, SpillFile, entries


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
