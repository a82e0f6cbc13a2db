"""Shared set-up of the two-process ``check --full`` tests (test_check_fullsplit*.py):
the ``split`` fixture makes every capture 'big', :func:`same` compares with the
one-process report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.check import file_ranges, fullsplit, parallel
from mcptap.check.report import check_capture
from mcptap.protocol.pairing import BoundedMap
from test_check_scan import _shape


@pytest.fixture(name="split")
def split_fixture(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every capture is 'big': split after a few lines, with a short warm-up;
    returns the list of the second process's stops taken (one per split taken).
    A test module imports it (``split_fixture``, its name ``split``)."""
    return every_capture_big(monkeypatch)


def every_capture_big(monkeypatch: pytest.MonkeyPatch, warm: int = 20000) -> list[int]:
    """The ``split`` fixture's set-up with a warm-up of ``warm`` bytes; the
    list of the second process's stops taken (one per split taken)."""
    monkeypatch.setattr(parallel, "SPLIT_FULL_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH", 700)
    monkeypatch.setattr(file_ranges, "BATCH", 700)
    monkeypatch.setattr(fullsplit, "HEAD_BYTES", 600)
    monkeypatch.setattr(fullsplit, "WARM_BYTES", warm)
    monkeypatch.setattr(BoundedMap.__init__, "__defaults__", (4,))    # answered ids remembered: the last 4 (a warm-up holds them)
    taken: list[int] = []
    orig = fullsplit.adopt

    def spy(scan: Any, got: dict[str, Any]) -> None:
        taken.append(got["at"])
        orig(scan, got)

    monkeypatch.setattr(fullsplit, "adopt", spy)
    # this process waits at the middle for the second one's half (else which is taken depends on the load)
    monkeypatch.setattr(fullsplit._Split, "ready", lambda self: self.child.ready(wait=True))
    return taken


def same(path: Path, keeps: tuple[int, ...] = (1, 3), reused: bool = False) -> None:
    """The two-process report of ``path`` is the one-process one, for each
    number of places kept; ``reused``: so also reusing recorded annotations."""
    for keep in keeps:
        want = _shape(check_capture(str(path), keep, reuse=False))
        assert _shape(parallel.check_capture(str(path), keep, reuse=False, workers=2)) == want
        if reused:
            assert _shape(parallel.check_capture(str(path), keep, reuse=True, workers=2)) == _shape(check_capture(str(path), keep))
