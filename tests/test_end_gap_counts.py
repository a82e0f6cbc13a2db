"""The end record's counts (``mcptap ls``) agree with ``check`` about gaps.

Every ``gap`` record written mid-capture (the relay's spill file at its bound,
a failed capture write, the recorder stopped after an internal error) is a
``capture.gap`` error for ``check``; the end record used to leave them out, so
``ls`` listed such a capture complete with fewer errors than ``check`` reported.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.recorder import Recorder
from scripted import c2s, handshake, req, res, s2c

C2S, S2C = Direction.C2S, Direction.S2C


def ls_and_check(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``ls --format json``'s object for the capture at ``path`` and ``check --format json``'s report."""
    runner = CliRunner()
    listed = runner.invoke(mcptap, ["ls", "--format", "json", "--dir", str(path.parent)])
    assert listed.exit_code == 0, listed.output
    infos = [orjson.loads(line) for line in listed.stdout.splitlines()]
    checked = runner.invoke(mcptap, ["check", "--format", "json", "--fail-on", "never", str(path)])
    assert checked.exit_code == 0, checked.output
    return next(i for i in infos if i["path"].endswith(path.name)), orjson.loads(checked.stdout)


def _lose_bytes(rec: Recorder) -> None:
    rec.lost(S2C, 4096, "the relay's spill file is at its bound (MCPTAP_SPILL_LIMIT): bytes forwarded but not recorded")


def _relay_stopped(rec: Recorder) -> None:
    rec.gap("the relay was stopped")


def _disk_full_once(rec: Recorder) -> None:
    w = rec.writer
    assert w is not None
    real = w._write
    calls = [0]

    def write(data: bytes | memoryview) -> int:
        calls[0] += 1
        if calls[0] == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(data)

    w._write = write  # type: ignore[method-assign]
    _feed(rec, [c2s(req(7, "tools/list"))])      # this record is lost; the gap record says so


def _recorder_stopped(rec: Recorder) -> None:
    rec.stopped("RuntimeError('boom')")


def _feed(rec: Recorder, steps: list[tuple[str, Any]]) -> None:
    for d, data in steps:
        if rec.transport == "stdio":
            rec.stdio_bytes(Direction(d), data)
        else:
            rec.frame(Direction(d), data.rstrip(b"\n"))


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("cause", [_lose_bytes, _relay_stopped, _disk_full_once, _recorder_stopped])
def test_a_mid_capture_gap_counts_in_ls_as_in_check(tmp_path: Path, cause: Any, transport: str) -> None:
    path = tmp_path / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(path)), transport, {"argv": ["srv"]}, clock=lambda: 1000, started="2026-01-01T00:00:00Z")
    _feed(rec, handshake())
    cause(rec)
    _feed(rec, [c2s(req(2, "ping")), s2c(res(2, {}))])
    end = rec.close(exit_code=0)
    info, report = ls_and_check(path)
    gaps = [g for g in report["captures"][0]["codes"] if g["code"] == "capture.gap"]
    assert gaps and report["findings"]["error"] >= 1
    assert info["status"] == "incomplete"
    if info["unframed"]:
        # a stdio stream cut mid-line goes on unframed to the next line start (chunk records):
        # ls shows its counts as unknown, check counts them
        assert transport == "stdio" and cause is _lose_bytes and info["severities"] == {}
    else:
        assert info["severities"].get("error", 0) == report["findings"]["error"], (info, report["findings"])
    if cause is _recorder_stopped:
        assert end["recorder_error"] == "RuntimeError('boom')"


def test_ls_says_its_findings_are_the_live_counts_without_the_shape_checks() -> None:
    """The end record's counts leave out the schema shape checks on purpose (the live tap
    never runs them), so ``check`` may report more warnings (``shape.invalid_result``):
    ``ls`` says whose counts it shows (docs/capture-format.md, end)."""
    from mcptap.cli.ls import text_lines

    assert "LIVE-FINDINGS" in text_lines([])[0].split()
    helped = " ".join(CliRunner().invoke(mcptap, ["ls", "--help"]).output.split())
    assert "live recorder's counts" in helped and "shape" in helped and "mcptap check" in helped, helped
