"""The gap records the capture writer makes itself (a failed write, an
unencodable record) reach the live annotator where they stand in the capture,
as a transport gap's do (mcptap/protocol/gap_pending.py): the live
annotations and a re-annotation (``check``, ``check --full``) agree.
Sans-IO: the real Recorder, a writer whose disk fills on demand."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.check.parallel import check_capture as fast_check
from mcptap.check.report import check_capture
from mcptap.model import Direction
from mcptap.reannotate import reannotate
from mcptap.recorder import Recorder
from scripted import handshake, note, req

LOG = note("notifications/message", {"level": "info", "data": "x"})
BLAME = {"lifecycle.eof_with_pending_requests", "jsonrpc.unanswered_request"}


class Disk(CaptureWriter):
    """A writer whose disk is full (ENOSPC) while ``full`` is set, and whose
    next ``poison``-typed record cannot be encoded (our own bug: no peer's
    data does that, its bytes are stored as text or base64)."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.full = False
        self.poison: str | None = None
        self.transform = self._poison

    def _poison(self, rec: dict[str, Any]) -> dict[str, Any]:
        if rec.get("type") == self.poison:
            self.poison = None
            return {**rec, "oops": object()}
        return rec

    def _write(self, data: bytes | memoryview) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(self._fd, data)


def _codes(recs: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for r in recs for f in r.get("findings") or r.get("unanswered") or ()]


def _record(path: Path, fault: str) -> list[dict[str, Any]]:
    now = {"t": 0}

    def clock() -> int:
        now["t"] += 1000
        return now["t"]

    w = Disk(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    rec = Recorder(w, "stdio", {"argv": ["server"]}, clock=clock, started="2026-01-01T00:00:00.000000Z")
    for d, data in handshake():
        rec.stdio_bytes(Direction(d), data)
    rec.stdio_bytes(Direction.C2S, req(2, "tools/list"))     # open while the writer loses records
    if fault == "disk":
        w.full = True
        rec.stdio_bytes(Direction.S2C, LOG)                   # lost: the disk is full
        w.full = False
    else:
        w.poison = "stderr"
        rec.stderr(b"a line the writer cannot encode\n", final=True)
    rec.stdio_bytes(Direction.S2C, LOG)                       # the gap record lands before this one
    rec.stdio_eof(Direction.C2S)
    rec.stdio_eof(Direction.S2C)
    rec.exit(code=0)
    rec.close()
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize("fault", ["disk", "encode"])
def test_the_writers_own_gap_is_judged_live_as_on_re_annotation(tmp_path: Path, fault: str) -> None:
    path = tmp_path / "c.jsonl"
    recs = _record(path, fault)
    gaps = [r for r in recs if r.get("type") == "gap"]
    assert len(gaps) == 1 and ("write failed" if fault == "disk" else "unencodable") in gaps[0]["reason"]
    live = _codes(recs)
    # the request open across the gap may have been answered in it: not the server's fault, live as in check
    assert not BLAME & set(live), live
    assert live.count("capture.answers_in_gap") == 1
    cap = read_capture(str(path))
    assert _codes(list(reannotate(cap.header, cap.records + [cap.end], reuse=False))) == live
    full = {c: g.count for c, g in check_capture(str(path), reuse=False).groups.items()}
    assert not BLAME & set(full), sorted(full)
    for check, reuse in ((check_capture, True), (fast_check, True), (fast_check, False)):
        assert {c: g.count for c, g in check(str(path), reuse=reuse).groups.items()} == full, (check, reuse)
