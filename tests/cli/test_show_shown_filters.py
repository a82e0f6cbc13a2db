"""What the ``show`` timeline prints for a value a filter takes can be given
back to ``--filter``: each phase it prints (``before_init`` included) to
``~phase``, each kind it prints that has an operator to that operator, each
severity word of a finding line to ``~sev``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.filters.operators import OPERATORS
from scripted import c2s, err, handshake, note, record, req, res, s2c

ARROW_OPS = {"C → S": "~c2s", "C ← S": "~s2c"}


def _capture(tmp_path: Path) -> str:
    steps = [c2s(req(0, "ping")), s2c(res(0))] + handshake() + [
        c2s(req(2, "tools/call", {"name": "x"})), s2c(err(2)), s2c(note("notifications/message", {"level": "info", "data": "x"})),
        s2c(b"banner\n"), s2c(b'{"a":1}\n'), c2s(req(3, "ping")), c2s(b"")]
    return str(record(tmp_path / "c.jsonl", steps))


def _rows(path: str, *flt: str) -> dict[str, dict[str, str]]:
    """seq -> the columns of the timeline lines ``show`` prints (messages only)."""
    r = CliRunner().invoke(mcptap, ["show", "--no-summary", "--oneline", *flt, path], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    head = lines[1]
    at = {c: head.index(c) for c in ("dir", "kind", "what", "pair", "phase", "findings")}
    rows = {}
    for line in lines[2:]:
        if line[at["dir"]:at["dir"] + 5] in ARROW_OPS:
            rows[line[:6].strip()] = {"dir": line[at["dir"]:at["kind"]].strip(), "kind": line[at["kind"]:at["what"]].strip(),
                                      "phase": line[at["phase"]:at["findings"]].strip()}
    return rows


def _operators() -> set[str]:
    return {name for op in OPERATORS for name in op.names}


def test_every_shown_phase_kind_and_direction_filters(tmp_path: Path) -> None:
    path = _capture(tmp_path)
    rows = _rows(path)
    phases = {r["phase"] for r in rows.values()}
    assert "before_init" in phases and len(phases) >= 3
    for phase in phases:
        want = {s for s, r in rows.items() if r["phase"] == phase}
        assert set(_rows(path, "-f", f"~phase {phase}")) == want, phase
    ops = _operators()
    assert {"~req", "~notif", "~resp", "~err"} <= ops
    for kind in {r["kind"] for r in rows.values()}:
        if f"~{kind}" in ops:               # req, notif, resp, err: the kind's own operator
            want = {s for s, r in rows.items() if r["kind"] == kind}
            assert want <= set(_rows(path, "-f", f"~{kind}")), kind
    for arrow, op in ARROW_OPS.items():
        assert set(_rows(path, "-f", op)) == {s for s, r in rows.items() if r["dir"] == arrow}


def test_every_shown_severity_word_filters(tmp_path: Path) -> None:
    path = _capture(tmp_path)
    r = CliRunner().invoke(mcptap, ["show", "--no-summary", path], catch_exceptions=False)
    words = {line.split()[1] for line in r.stdout.splitlines() if line.startswith(" " * 17) and line.split()[0] in "✖!i"}
    assert words
    for w in words:
        assert _rows(path, "-f", f"~sev {w}"), w
