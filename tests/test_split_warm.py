"""check/split_warm.py: the second process's warm-up sized by the names in the
bytes (ids, progress tokens), a block start; the names before it looked for
across block boundaries. A guess only: tests/test_check_fullsplit_chunks.py
holds the reports to the one process's whatever it guesses."""

from __future__ import annotations

import io

import pytest

from mcptap.check import split_warm


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split_warm, "BLOCK", 100)
    monkeypatch.setattr(split_warm, "WARM_MIN", 250)
    monkeypatch.setattr(split_warm, "EVENTS", 4)


def test_no_names_the_least_warm_up() -> None:
    fp = io.BytesIO(b"x" * 5000)
    assert split_warm.warm_start(fp, 5000, 1000) == 4700          # 3 blocks back: 300 >= 250


def test_dense_names_as_many_as_the_window_needs() -> None:
    fp = io.BytesIO(b"x" * 4000 + (b'{"id":1}' + b"y" * 17) * 40)   # an id every 25 bytes after 4000
    start = split_warm.warm_start(fp, 5000, 1000)
    assert 4000 < start <= 4700 and fp.getvalue()[start:5000].count(b"id") >= 4


def test_names_too_sparse_for_the_window_the_longest() -> None:
    fp = io.BytesIO((b'"progressToken"' + b"z" * 985) * 5)
    assert split_warm.warm_start(fp, 5000, 1000) == 1000


def test_names_skipped_before_the_warm_up_the_longest() -> None:
    fp = io.BytesIO(b"x" * 1500 + b'"id"' + b"x" * 3496)
    assert split_warm.warm_start(fp, 5000, 1000) == 1000


@pytest.mark.parametrize("at", [0, 97, 98, 99, 100, 199, 250])
def test_named_across_blocks(at: int) -> None:
    data = b"a" * at + b"Token" + b"a" * 300
    assert split_warm.named(io.BytesIO(data), 0, len(data))
    assert not split_warm.named(io.BytesIO(data), at + 1, len(data))
    assert not split_warm.named(io.BytesIO(b"a" * 1000), 0, 1000)
