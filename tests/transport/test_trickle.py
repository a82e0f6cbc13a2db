"""A flood of copies is left to the relay's spill file while it goes on
(transport.trickle.wait_while_flowing), and the pieces it is measured by."""

from __future__ import annotations

import os
from typing import Any

import pytest

import mcptap.transport.trickle as tr
from mcptap.transport.spill import ENTRY, SpillFile


class _Clock:
    """Stands in for ``time`` in transport.trickle: each sleep lets the relay
    send ``per_wait`` more bytes, ``waits`` times; then the flood is over."""

    def __init__(self, waits: int) -> None:
        self.now = 0.0
        self.waits = waits
        self.sleeps = 0
        self.level = 1000

    def sleep(self, s: float) -> None:
        self.now += s
        self.sleeps += 1
        if self.sleeps <= self.waits:
            self.level += 4096

    def monotonic(self) -> float:
        return self.now


def test_waits_while_the_flood_goes_on_then_returns_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock(waits=30)
    monkeypatch.setattr(tr, "time", clock)
    tr.wait_while_flowing(lambda: clock.level)
    assert clock.sleeps == 31                  # 30 waits that brought more, one that brought nothing


def test_waits_no_longer_than_hold_max(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock(waits=10_000)
    monkeypatch.setattr(tr, "time", clock)
    tr.wait_while_flowing(lambda: clock.level)
    assert clock.now == pytest.approx(tr.HOLD_MAX, abs=2 * tr.WAIT)


def test_pipe_fill_counts_the_bytes_waiting() -> None:
    r, w = os.pipe()
    try:
        assert tr.pipe_fill(r) == 0
        os.write(w, b"x" * 1234)
        assert tr.pipe_fill(r) == 1234
        os.read(r, 1000)
        assert tr.pipe_fill(r) == 234
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("named", [True, False])
def test_spill_file_size_grows_with_its_entries(tmp_path: Any, named: bool) -> None:
    spill = SpillFile(str(tmp_path / "cap.jsonl.spill") if named else None, str(tmp_path))
    try:
        assert spill.size() == 0
        spill.append(1, 5, 0, b"y" * 100)
        assert spill.size() == ENTRY.size + 100     # reserved blocks beyond are not counted (KEEP_SIZE)
        spill.append(1, 6, 100, b"z" * 50)
        assert spill.size() == 2 * ENTRY.size + 150
    finally:
        spill.close(remove=True)
