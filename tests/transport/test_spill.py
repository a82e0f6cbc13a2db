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
