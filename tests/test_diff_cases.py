"""mcptap diff: cases found by a tester (stdin input, concurrent requests in
another order, changes with no path, counts against the verdict, cut captures)."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
from click.testing import CliRunner

from mcptap.cli.diff import command as diff_command
from replay.capgen import Ex, text_result, write_capture


def _pair(tmp: Path, a: list[Ex], b: list[Ex]) -> tuple[str, str]:
    pa, pb = str(tmp / "a.jsonl"), str(tmp / "b.jsonl")
    write_capture(pa, a)
    write_capture(pb, b)
    return pa, pb


def test_stdin_capture_that_differs_is_diffed(tmp_path: Path) -> None:
    """Differing exchanges are read twice: stdin (plain or gzip) is spooled
    first, not opened again after its EOF."""
    pa, pb = _pair(tmp_path, [Ex("tools/call", {"name": "add", "arguments": {"a": 1}}, text_result("2"))],
                   [Ex("tools/call", {"name": "add", "arguments": {"a": 1}}, text_result("3"))])
    raw = Path(pa).read_bytes()
    runner = CliRunner()
    for data in (raw, gzip.compress(raw)):
        res = runner.invoke(diff_command, ["-", pb], input=data)
        assert res.exit_code == 1, res.output
        assert "A: -" in res.output and "result.content[0].text: '2' -> '3'" in res.output
        back = runner.invoke(diff_command, [pb, "-", "--format", "json"], input=data)
        assert back.exit_code == 1, back.output
        doc = orjson.loads(back.output)
        assert doc["b"] == "-" and doc["exchanges"]["CHANGED"] == 1
    empty = runner.invoke(diff_command, ["-", pb], input=b"")
    assert empty.exit_code == 2 and "-: empty file" in empty.output
