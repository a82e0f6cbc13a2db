"""Captures prove themselves (issue 9 item 2): ``check`` verifies the end
record's per-direction counts and SHA-256 digests against the message records
and the record sequence, so a hand-edited capture no longer passes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mcptap.check.report import check_capture
from scripted import c2s, handshake, record, req, res, s2c

STEPS = [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []})), ("err", b"log line\n"), ("eof", "c2s"), ("exit", 0)]


def _capture(tmp_path: Path) -> Path:
    return record(tmp_path / "c.jsonl", STEPS)


def _edit(path: Path, fn) -> None:
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    lines = fn(lines)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def _codes(path: Path, full: bool = False) -> dict[str, str]:
    rep = check_capture(str(path), reuse=not full)
    return {g.code: g.severity for g in rep.groups.values()}


@pytest.mark.parametrize("full", [False, True])
def test_an_untouched_capture_holds_together(tmp_path: Path, full: bool) -> None:
    codes = _codes(_capture(tmp_path), full)
    assert "capture.digest_mismatch" not in codes and "capture.out_of_sequence" not in codes


def _set_result(lines: list[dict]) -> list[dict]:
    for r in lines:
        if r["type"] == "message" and r.get("id") == 2 and r["dir"] == "s2c":
            r["json"]["result"]["tools"] = [{"name": "injected"}]
    return lines


def _drop_message(lines: list[dict]) -> list[dict]:
    victim = next(r for r in lines if r["type"] == "message" and r.get("method") == "tools/list")
    return [r for r in lines if r is not victim]


def _swap(lines: list[dict]) -> list[dict]:
    i = next(i for i, r in enumerate(lines) if r["type"] == "message" and r.get("method") == "tools/list")
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return lines


def _edit_stderr(lines: list[dict]) -> list[dict]:
    for r in lines:
        if r["type"] == "stderr":
            r["data"] = "another line\n"
    return lines


def _duplicate(lines: list[dict]) -> list[dict]:
    i = next(i for i, r in enumerate(lines) if r["type"] == "message")
    return lines[: i + 1] + [dict(lines[i])] + lines[i + 1:]


@pytest.mark.parametrize(("edit", "code"), [
    (_set_result, "capture.digest_mismatch"),       # relayed bytes edited
    (_edit_stderr, "capture.digest_mismatch"),
    (_drop_message, "capture.out_of_sequence"),     # a record removed: a hole in seq, and the count is off
    (_drop_message, "capture.digest_mismatch"),
    (_swap, "capture.out_of_sequence"),             # records reordered
    (_duplicate, "capture.out_of_sequence"),
])
@pytest.mark.parametrize("full", [False, True])
def test_an_edited_capture_is_an_error(tmp_path: Path, edit, code: str, full: bool) -> None:
    path = _capture(tmp_path)
    _edit(path, edit)
    codes = _codes(path, full)
    assert codes.get(code) == "error", codes


def test_a_gap_explains_a_hole_and_the_digests_are_not_judged(tmp_path: Path) -> None:
    path = _capture(tmp_path)

    def lose(lines: list[dict]) -> list[dict]:
        lines = _drop_message(lines)
        i = next(i for i, r in enumerate(lines) if r["type"] == "message" and r.get("id") == 2)
        return lines[:i] + [{"type": "gap", "seq": None, "reason": "capture write failed: No space left on device", "dropped_records": 1}] + lines[i:]

    _edit(path, lose)
    codes = _codes(path)
    assert codes.get("capture.gap") == "error"
    assert "capture.out_of_sequence" not in codes and "capture.digest_mismatch" not in codes


def test_check_cli_fails_on_an_edited_capture(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = _capture(tmp_path)
    _edit(path, _set_result)
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "capture.digest_mismatch" in p.stdout


def test_chunk_records_count_toward_the_stream(tmp_path: Path) -> None:
    """Bytes stored unframed (``chunk`` records, analysis fell behind) are part
    of the direction's stream: a capture with them still holds together, and
    editing one is caught."""
    from mcptap.model import Direction
    from tests.transport.test_handoff import LINES, _record

    s2c_ = Direction.S2C
    path = _record(tmp_path, [(s2c_, LINES[1][:20], "frame"), (s2c_, LINES[1][20:] + LINES[4], "unframed"),
                              (s2c_, LINES[4][:5], "unframed"), (s2c_, LINES[4][5:] + LINES[4], "frame")], "c.jsonl")
    assert any(orjson.loads(x)["type"] == "chunk" for x in path.read_bytes().splitlines())
    assert "capture.digest_mismatch" not in _codes(path) and "capture.digest_mismatch" not in _codes(path, full=True)

    def edit_chunk(lines: list[dict]) -> list[dict]:
        for r in lines:
            if r["type"] == "chunk" and "data" in r:
                r["data"] = r["data"].replace("2.0", "2.1", 1)
                break
        return lines

    _edit(path, edit_chunk)
    assert _codes(path).get("capture.digest_mismatch") == "error"
