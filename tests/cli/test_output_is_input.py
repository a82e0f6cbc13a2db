"""`-o` naming the capture being read is refused (exit 2, one line, the
capture untouched) by every command that reads a capture and writes a file:
`report cap.jsonl -o cap.jsonl` used to replace the capture with HTML, and
`replay`/`serve`/`export`/`check` overwrote it the same way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, req, res, s2c


def run(*args: str):
    return CliRunner().invoke(mcptap, list(args), catch_exceptions=False)


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])


@pytest.mark.parametrize("argv", [
    ["report", "{cap}", "-o", "{out}"],
    ["export", "{cap}", "-f", "messages", "-o", "{out}"],
    ["check", "{cap}", "-o", "{out}"],
    ["scrub", "{cap}", "-o", "{out}"],
    ["replay", "{cap}", "-o", "{out}", "--", "true"],
    ["serve", "{cap}", "-o", "{out}"],
])
@pytest.mark.parametrize("spelling", ["same", "relative", "hardlink"])
def test_output_that_is_the_input_is_refused(tmp_path: Path, cap: Path, argv: list[str], spelling: str,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    before = cap.read_bytes()
    out = str(cap)
    if spelling == "relative":
        monkeypatch.chdir(tmp_path)
        out = "./cap.jsonl"
    elif spelling == "hardlink":
        out = str(tmp_path / "link.jsonl")
        os.link(cap, out)
    from mcptap.cli.main import main

    with pytest.raises(SystemExit) as stop:         # the console entry point: how a shell meets it
        main([a.format(cap=cap, out=out) for a in argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    # a usage error (README): the command named, its help pointed at
    assert err.startswith(f"mcptap: {argv[0]}: -o ") and "is the input" in err and len(err.splitlines()) == 1, err
    assert err.rstrip().endswith(f"(see 'mcptap {argv[0]} --help')"), err
    assert cap.read_bytes() == before


def test_scrub_of_a_missing_capture_says_it_is_missing(tmp_path: Path) -> None:
    existing = tmp_path / "out.jsonl"
    existing.write_text("keep")
    r = run("scrub", str(tmp_path / "missing.jsonl"), "-o", str(existing))
    assert r.exit_code == 2
    assert "cannot open capture" in r.stderr and "write" not in r.stderr
