"""A capture whose recorder was killed while a peer's long line streamed in
(stored as ``chunk`` records, 24 MB in the tester's case) ends mid-line: the
summary counted those bytes, but `show` had no row and no finding for them and
`check` said only ``capture.incomplete`` (re-annotation flushed the partial
line as a message at the end and dropped it). Now the end carries
``capture.cut_line`` with the direction and the byte count, in `show` and in
both of `check`'s paths; the line is not judged as the peer's (it may have
finished it)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcptap.check.report import check_capture
from mcptap.cli.main import mcptap
from scripted import handshake, note, record

LOG = note("notifications/message", {"level": "info", "data": "x" * 200})
PART = LOG[:150]


def _killed(tmp_path: Path, tail: bytes, end: bool = False) -> Path:
    eof = [("eof", "s2c")] if end else []
    return record(tmp_path / "c.jsonl", handshake() + [("chunk", ("s2c", LOG)), ("chunk", ("s2c", tail))] + eof, end=end)


def test_the_cut_line_of_a_killed_capture_is_reported(tmp_path: Path) -> None:
    path = _killed(tmp_path, LOG + PART)
    rep = check_capture(str(path))
    group = rep.groups["capture.cut_line"]
    assert group.count == 1 and group.severity == "warn"
    for args in (["check", "--fail-on", "never", str(path)], ["show", str(path)]):
        out = CliRunner().invoke(mcptap, args)
        assert out.exit_code == 0, out.output
        assert "capture.cut_line" in out.output and f"s2c line: {len(PART)} bytes" in out.output, out.output
        assert "framing.unterminated_line" not in out.output and "framing.non_jsonrpc_line" not in out.output
    assert rep.messages == 3 + 2                # the handshake and the two whole lines


def test_no_cut_line_when_the_capture_stops_at_a_line_end_or_the_stream_ended_there(tmp_path: Path) -> None:
    assert "capture.cut_line" not in check_capture(str(_killed(tmp_path, LOG))).groups
    done = check_capture(str(_killed(tmp_path, LOG + PART, end=True))).groups
    assert "capture.cut_line" not in done and "framing.unterminated_line" in done
