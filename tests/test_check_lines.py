"""Each first place ``check`` reports names the capture line that holds the
record it is about, on every path (the reference check, the fast reuse scan in
one process and split across two, the --full scan), also after a record cut by
a failed write (a non-JSON line the reader skips, then the writer's gap record)
and in a capture whose last record is cut or ends on a record boundary, plain
and gzip'd. Before: every place after a cut record was one line short."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.check import parallel
from mcptap.check.report import CaptureReport, check_capture
from test_check_scan import _edited, _split

CUT = b'{"type":"message","se\n'


def _cut_record(tmp_path: Path, name: str, at: int) -> Path:
    """busy()'s capture with a cut record at line ``at`` (1-based; the header is line 1)
    followed by the writer's gap record (seq null, as after a failed write)."""
    gap = {"type": "gap", "seq": None, "reason": "capture write failed: No space left on device", "dropped_records": 1}
    path = _edited(tmp_path, name, lambda rs: rs)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:at - 1] + [CUT, orjson.dumps(gap) + b"\n"] + lines[at - 1:]))
    return path


def _places_point_at_their_records(rep: CaptureReport, data: bytes) -> int:
    lines = data.splitlines()
    n = 0
    for code, g in rep.groups.items():
        for p in g.places:
            if p.line is None:
                continue
            rec = orjson.loads(lines[p.line - 1])
            if p.seq is not None:
                assert rec.get("seq") == p.seq, (code, p.seq, p.line)
            else:
                assert rec.get("type") in ("gap", "end"), (code, p.line, rec.get("type"))
            n += 1
    return n


def _all_paths(path: Path, data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "SPLIT_BYTES", 0)         # the two-process split even for a small capture
    reports: list[Any] = []
    for reuse in (True, False):
        reports.append(check_capture(str(path), 20, reuse=reuse))
        for workers in (1, 2):
            reports.append(parallel.check_capture(str(path), 20, reuse=reuse, workers=workers))
    for rep in reports:
        assert _places_point_at_their_records(rep, data) > 5
    assert "capture.gap" in reports[0].groups


@pytest.mark.parametrize("at", [2, 9, 30])
@pytest.mark.parametrize("tail", ["whole", "cut-mid-record", "cut-at-boundary"])
def test_places_after_a_cut_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, tail: str) -> None:
    path = _cut_record(tmp_path, f"cut-{at}-{tail}.jsonl", at)
    data = path.read_bytes()
    if tail == "cut-mid-record":
        data = data[:-40]               # the end record cut: a truncated capture
    elif tail == "cut-at-boundary":
        data = b"".join(data.splitlines(keepends=True)[:-3])
    path.write_bytes(data)
    _all_paths(path, data, monkeypatch)
    for k in range(0, len(data.splitlines()) - 1, 3):      # the reuse scan split before any record
        got, _ = _split(path, k, 20)
        if got is not None:
            _places_point_at_their_records(got, data)
    gz = tmp_path / (path.name + ".gz")
    gz.write_bytes(gzip.compress(data))
    _all_paths(gz, data, monkeypatch)


def test_show_follow_reads_past_a_cut_record_and_counts_its_line(tmp_path: Path) -> None:
    """show --follow's reader skips a cut record before its gap record as the file reader
    does (before: "corrupt record (not JSON)", exit 2), and counts its line."""
    from mcptap.capture.follow import Follower
    from mcptap.check.reannotated import Reannotated
    from mcptap.check.report import check_stream

    path = _cut_record(tmp_path, "follow.jsonl", 9)
    data = path.read_bytes()
    fol = Follower(str(path), poll=0.01)
    ra = Reannotated(fol.header, fol, str(path), lambda: fol.truncated)
    rep = check_stream(ra, str(path), 20)
    assert fol.cut_records == 1 and "capture.gap" in rep.groups
    assert _places_point_at_their_records(rep, data) > 5
    assert _shape_of(rep) == _shape_of(check_capture(str(path), 20))


def _shape_of(rep: CaptureReport) -> Any:
    return [(c, [(p.seq, p.line) for p in g.places]) for c, g in rep.groups.items()]


@pytest.mark.parametrize("how", ["truncate", "replace"])
def test_follow_says_so_when_the_file_is_cut_or_replaced_while_it_is_followed(tmp_path: Path, how: str) -> None:
    """A followed capture that is cut shorter (rewritten in place) or replaced
    (a new capture, an editor's save, under the same name): ``show --follow``
    stopped with "corrupt record (not JSON)" in the middle of the new file's
    bytes. It now says what happened (found by a breaker helper)."""
    import os
    import threading
    import time

    from mcptap.capture.follow import Follower
    from mcptap.errors import CaptureReadError

    path = _cut_record(tmp_path, "live.jsonl", 9)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))                       # no end record yet: following waits
    fol = Follower(str(path), poll=0.01)
    got: list[Any] = []
    errors: list[BaseException] = []

    def follow() -> None:
        try:
            for rec in fol:
                got.append(rec)
        except CaptureReadError as exc:
            errors.append(exc)

    t = threading.Thread(target=follow)
    t.start()
    for _ in range(6000):
        if len(got) >= 5:
            break
        time.sleep(0.01)
    if how == "truncate":
        with open(path, "r+b") as fp:
            fp.truncate(len(lines[0]) + len(lines[1]))
    else:
        other = tmp_path / "other.jsonl"
        other.write_bytes(b"".join(lines))
        os.replace(other, path)
    # A loaded machine may take a while to run the follower's next poll: wait
    # for it to notice rather than for a fixed time.
    for _ in range(6000):
        if errors or not t.is_alive():
            break
        time.sleep(0.01)
    fol.stop = True
    t.join(10)
    assert errors, "the follower did not notice"
    assert ("cut shorter" if how == "truncate" else "another file took the capture's name") in str(errors[0])
