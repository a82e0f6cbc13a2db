"""Every end record counts gap records as the recorder's does (``capture.gap``, an error).

The live recorder counts the ``capture.gap`` finding each ``gap`` record stands for
(recorder_gaps); the end records written again afterwards — re-annotation's (full and
reuse paths) and ``serve --extend``'s merged one — used to count only the findings
records carry, which a gap record never does, so ``ls`` of a rewritten capture showed
one error fewer per gap than ``check`` reported. They all count through
``protocol.gap_pending.counted_findings`` now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import CaptureStream
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from mcptap.serve.extend import extend_capture
from scripted import c2s, handshake, req, res, s2c


def _record(path: Path, gaps: int) -> dict[str, Any]:
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    for d, data in handshake():
        rec.stdio_bytes(Direction(d), data)
    for _ in range(gaps):
        rec.gap("the relay was stopped")
    for d, data in [c2s(req(2, "ping")), s2c(res(2, {}))]:
        rec.stdio_bytes(Direction(d), data)
    return rec.close(exit_code=0)


def _end(path: Path) -> dict[str, Any]:
    s = CaptureStream(str(path))
    return next(r for r in s if r.get("type") == "end")


@pytest.mark.parametrize("reuse", [True, False])
@pytest.mark.parametrize("with_end", [True, False])
def test_reannotation_counts_each_gap_record(tmp_path: Path, reuse: bool, with_end: bool) -> None:
    path = tmp_path / "cap.jsonl"
    live = _record(path, gaps=2)
    assert live["codes"]["capture.gap"] == 2            # the recorder's own count: the reference
    s = CaptureStream(str(path))
    records = [r for r in s if with_end or r.get("type") != "end"]
    end = list(reannotate(s.header, records, reuse=reuse))[-1]
    assert end["type"] == "end"
    assert end["codes"].get("capture.gap") == 2, end["codes"]
    assert end["severities"]["error"] == live["severities"]["error"] if with_end else end["severities"]["error"] >= 2


def test_an_extended_capture_end_counts_its_gap_records(tmp_path: Path) -> None:
    path, episode = tmp_path / "cap.jsonl", tmp_path / "episode.jsonl"
    live = _record(path, gaps=1)
    _record(episode, gaps=0)
    extend_capture(str(path), str(episode))
    end = _end(path)
    assert end["codes"].get("capture.gap") == live["codes"]["capture.gap"] == 1, end["codes"]
    assert end["severities"]["error"] >= 1
