"""A capture whose header line is cut (a truncated copy, ``head -c N``; a tap killed while writing
it): every command that reads a header says the same, "damaged capture: its header line is cut
short", as ``ls`` lists it "damaged" (capture.reader.parse_header, the one place headers are read);
never "first line is not JSON"."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.catalog import DAMAGED, read_info
from mcptap.cli.main import mcptap as cli

DATA = Path(__file__).resolve().parents[1] / "data" / "http-host-rejected.jsonl"
CUT = "damaged capture: its header line is cut short"

#: each command that reads a capture's header, as it is called on ``CAPTURE``
COMMANDS = [
    ["show", "CAPTURE"], ["show", "--format", "json", "CAPTURE"], ["check", "CAPTURE"], ["check", "--full", "CAPTURE"],
    ["report", "CAPTURE", "-o", "OUT"], ["export", "-f", "har", "CAPTURE"], ["export", "-f", "messages", "CAPTURE"],
    ["diff", "CAPTURE", "WHOLE"], ["diff", "WHOLE", "CAPTURE"], ["scrub", "--dry-run", "CAPTURE"],
    ["serve", "CAPTURE"], ["recover", "CAPTURE"], ["replay", "CAPTURE", "--", sys.executable, "-c", "pass"],
]


@pytest.fixture(params=[20, 100, 150], ids=lambda n: f"head-c-{n}")
def cut(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    head = DATA.read_bytes()[:request.param]
    assert b"\n" not in head
    p = tmp_path / "cut.jsonl"
    p.write_bytes(head)
    return p


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_command_says_a_cut_header_is_damaged(cut: Path, tmp_path: Path, argv: list[str]) -> None:
    args = [{"CAPTURE": str(cut), "WHOLE": str(DATA), "OUT": str(tmp_path / "r.html")}.get(a, a) for a in argv]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code != 0, res.output
    assert CUT in res.output, res.output
    assert "not JSON" not in res.output, res.output
    assert read_info(cut).status == DAMAGED          # what ls calls it


def test_a_gzip_capture_cut_inside_its_header_is_damaged_too(tmp_path: Path) -> None:
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(gzip.compress(DATA.read_bytes())[:40])
    res = CliRunner().invoke(cli, ["show", str(p)])
    assert res.exit_code == 2 and "damaged capture: its gzip stream is cut short" in res.output, res.output


def test_a_header_line_whose_newline_is_cut_reads_as_a_cut_capture(tmp_path: Path) -> None:
    """The header whole but not its newline: readable (nothing of it is lost), and cut short, as a
    capture whose last record is cut is (capture.incomplete), not complete."""
    from mcptap.capture.reader import CaptureStream

    p = tmp_path / "cut.jsonl"
    p.write_bytes(DATA.read_bytes().split(b"\n", 1)[0])
    stream = CaptureStream(str(p))
    assert list(stream) == [] and stream.truncated
    assert read_info(p).status == DAMAGED
