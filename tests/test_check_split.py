"""Where check's two processes split a capture (mcptap/check/parallel.py):
the child's lines start early enough that it also takes the work this
process did before the fork (its start, the wire models, the first lines),
so both end together; any split gives the one-process report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.check import file_ranges, parallel
from mcptap.check.report import check_capture
from scripted import c2s, handshake, record, req, res, s2c
from test_check_scan import _shape


def _lines(tmp_path: Path, n: int = 400) -> tuple[Any, list[int]]:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"".join(b"x" * (7 + i % 13) + b"\n" for i in range(n)))
    data = path.read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    return open(path, "rb"), starts


def test_the_child_takes_the_work_done_before_the_fork(tmp_path: Path) -> None:
    fp, starts = _lines(tmp_path)
    size = starts[-1]
    with fp:
        at = starts[10]
        mid = file_ranges.middle(fp, at, size)
        assert mid is not None
        assert file_ranges.balanced(fp, at, size, mid, 0, 0.0, 1.0) == mid          # nothing timed: the middle
        rate_cpu = 1000.0                                                          # bytes per CPU second
        got = file_ranges.balanced(fp, at, size, mid, 1000, 1.0, 0.5)
        assert got in starts and at <= got < mid
        # this process ends at its spent time plus its lines; the child at its own lines
        assert abs((0.5 + (got - at) / rate_cpu) - (size - got) / rate_cpu) < 0.05
        assert file_ranges.balanced(fp, at, size, mid, 1000, 1.0, 1e6) == at        # all of the rest to the child
        assert file_ranges.balanced(fp, at, size, mid, 1000, 1.0, 0.0) in (mid, starts[starts.index(mid) - 1])


def test_a_balanced_split_gives_the_one_process_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH", 4096)
    monkeypatch.setattr(file_ranges, "BATCH", 4096)
    monkeypatch.setattr(parallel, "SAMPLE", 4096)
    mids = []
    real = parallel._Child

    def spy(path: str, transport: Any, keep: int, shapes: bool, mid: int, size: int) -> Any:
        mids.append((mid, size))
        return real(path, transport, keep, shapes, mid, size)

    monkeypatch.setattr(parallel, "_Child", spy)
    steps = list(handshake())
    for i in range(2, 1500):
        steps += [c2s(req(i, "tools/call", {"name": "echo", "arguments": {"i": i}})),
                  s2c(res(i, {"content": [{"type": "text", "text": str(i)}]} if i % 300 else {"content": 1}))]
    path = record(tmp_path / "big.jsonl", steps)
    for keep in (1, 3):
        assert _shape(parallel.check_capture(str(path), keep, workers=2)) == _shape(check_capture(str(path), keep))
    header = len(path.read_bytes().split(b"\n", 1)[0]) + 1
    assert mids and all(mid < header + (size - header) // 2 for mid, size in mids), mids
