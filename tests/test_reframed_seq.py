"""Records re-framed from ``chunk`` records (bytes stored unframed while live
analysis fell behind) are numbered afresh, in order (docs/capture-format.md). A
record kept as recorded before the first chunk (an ``eof``, a process event) did
not advance the count: the first re-framed message took its number again, so
`show` and `check` printed two records #3 and "pending #1" could name the spawn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from mcptap.reannotate import reannotate
from scripted import record, req, res

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def chunked(tmp_path: Path) -> Path:
    return record(tmp_path / "c.jsonl", [("c2s", req(1, "ping")), ("eof", "c2s"), ("chunk", ("s2c", res(1) + res(77)[:9])),
                                         ("chunk", ("s2c", res(77)[9:])), ("eof", "s2c"), ("exit", 0)])


def _assert_in_order(seqs: list[int]) -> None:
    assert seqs == sorted(set(seqs)), seqs


def test_reannotated_records_are_numbered_once_each_in_order(chunked: Path) -> None:
    cap = read_capture(str(chunked))
    out = [r for r in reannotate(cap.header, cap.records, reuse=False) if isinstance(r.get("seq"), int)]
    _assert_in_order([r["seq"] for r in out])
    assert [r["type"] for r in out] == ["message", "eof", "message", "message", "eof", "process", "end"]
    ping, answer = out[0], out[2]
    assert answer["pair"] == ping["seq"]


def test_show_json_numbers_each_record_once(chunked: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "mcptap", "show", "--format", "json", str(chunked)], capture_output=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    seqs = [r["seq"] for r in map(json.loads, p.stdout.splitlines()) if isinstance(r.get("seq"), int)]
    _assert_in_order(seqs)
    assert len(seqs) >= 6
