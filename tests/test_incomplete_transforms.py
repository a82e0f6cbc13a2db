"""A capture without its end record (mcptap killed; ``recover`` appended the
spilled bytes as ``chunk`` records) stays incomplete through a transform that
writes a new capture from it: ``scrub`` re-frames the chunks and writes a fresh
end record marked ``incomplete: true`` (``records.end.says_ended``); ``ls``,
``check`` (fast and ``--full``) and ``show`` read that as they read no end:
truncated, ``capture.incomplete``, open requests not judged; the findings are
unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.catalog import TRUNCATED, read_info
from mcptap.cli.main import mcptap
from scripted import c2s, handshake, note, record, req

NOTE = note("notifications/message", {"level": "info", "data": "x" * 50})


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(mcptap, list(args), catch_exceptions=False)
    return r.exit_code, r.output


@pytest.fixture
def killed(tmp_path: Path) -> Path:
    """Killed while a tools/list waited, the server's last lines stored unframed (chunk records)."""
    return record(tmp_path / "k.jsonl", handshake() + [c2s(req(2, "tools/list")), ("chunk", ("s2c", NOTE * 3))], end=False)


def _check(path: Path, *opts: str) -> dict:
    code, out = run("check", str(path), "--format", "json", *opts)
    [cap] = json.loads(out)["captures"]
    return cap


def _codes(cap: dict) -> dict[str, int]:
    return {g["code"]: g["count"] for g in cap["codes"]}


@pytest.mark.parametrize("full", [(), ("--full",)])
def test_scrub_of_an_incomplete_capture_with_chunks_stays_incomplete(killed: Path, tmp_path: Path, full: tuple[str, ...]) -> None:
    out = tmp_path / "s.jsonl"
    assert run("scrub", str(killed), "-o", str(out))[0] == 0
    ends = [json.loads(line) for line in out.read_bytes().splitlines() if b'"type":"end"' in line]
    assert ends and ends[-1].get("incomplete") is True          # how the transform marks it
    src, scrubbed = _check(killed, *full), _check(out, *full)
    assert src["complete"] is False and scrubbed["complete"] is False
    assert "capture.incomplete" in _codes(scrubbed)
    assert _codes(scrubbed) == _codes(src)                        # findings unchanged: tools/list not judged unanswered
    again = tmp_path / "s2.jsonl"                                 # and so on through a second transform
    assert run("scrub", str(out), "-o", str(again))[0] == 0
    assert _check(again, *full)["complete"] is False and _codes(again_ := _check(again, *full)) == _codes(src), again_


def test_ls_and_show_call_the_scrubbed_copy_what_they_call_its_source(killed: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    assert run("scrub", str(killed), "-o", str(out))[0] == 0
    for p in (killed, out):
        assert (info := read_info(p)) is not None and info.status == TRUNCATED, p
    code, text = run("show", str(out))
    assert "capture incomplete" in text


def test_recover_of_a_scrubbed_copy_leaves_its_source_s_spill_file(tmp_path: Path) -> None:
    """A copy scrubbed before ``recover`` names its source's spill file; once
    read as complete (its end record), ``recover COPY`` removed that file,
    losing the bytes only it held."""
    from mcptap.capture.writer import CaptureWriter
    from mcptap.model import Direction
    from mcptap.recorder import Recorder
    from mcptap.transport.spill import SpillFile

    cap = tmp_path / "cap.jsonl"
    rec = Recorder(CaptureWriter.open(str(cap)), "stdio", {"argv": ["x"]}, clock=lambda: 5, started="2026-01-01T00:00:00Z",
                   header_extra={"spill": "cap.jsonl.spill"})
    rec.stdio_unframed(Direction.S2C, NOTE)
    rec.writer.flush()
    rec.writer.close()                                   # killed: no end record
    SpillFile(str(tmp_path / "cap.jsonl.spill")).append(1, 8, len(NOTE) * 2, NOTE)
    spill = (tmp_path / "cap.jsonl.spill").read_bytes()
    copy = tmp_path / "copy.jsonl"
    assert run("scrub", str(cap), "-o", str(copy))[0] == 0
    code, out = run("recover", str(copy))
    assert code == 2 and "recover the capture it was made from" in out, out
    assert (tmp_path / "cap.jsonl.spill").read_bytes() == spill
    assert run("recover", str(cap))[0] == 0 and not (tmp_path / "cap.jsonl.spill").exists()


def test_says_ended() -> None:
    """The one test of "did this capture end" (``records.end.says_ended``); serve --extend's use of it:
    tests/e2e/test_serve_extend.py::test_extend_of_an_incomplete_capture_says_its_earlier_sessions_may_be_incomplete."""
    from mcptap.records.end import says_ended

    assert not says_ended(None) and not says_ended({"type": "end", "incomplete": True})
    assert says_ended({"type": "end"}) and says_ended({"type": "end", "incomplete": False})


def test_diff_notes_that_the_scrubbed_copy_has_no_end_as_it_notes_its_source(killed: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    assert run("scrub", str(killed), "-o", str(out))[0] == 0
    for a in (killed, out):
        code, text = run("diff", str(a), str(killed))
        assert "note: A has no end record" in text, text
