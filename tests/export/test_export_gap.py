"""Exports of a capture with recording gaps: a gap is said (OTLP: an INTERNAL
span with its ``capture.gap`` finding; HAR: the cut exchange's comment and
``_mcp.findings``), and a request whose answer may be in the hole is no error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcptap.capture.reader import read_capture
from mcptap.cli.main import mcptap
from mcptap.export.spans import INTERNAL, STATUS_ERROR, STATUS_UNSET, spans_of
from mcptap.model import Direction
from mcptap.recorder import Recorder
from otlp_helpers import attrs, parse_otlp_json
from otlp_helpers import spans_of as otlp_spans
from scripted import c2s, handshake, note, record, req, s2c

LOG = note("notifications/message", {"level": "info", "data": "x"})


def _gap_capture(path: Path) -> Path:
    return record(path, handshake() + [c2s(req(2, "tools/list")), ("lost", ("s2c", 5000)), s2c(LOG), c2s(req(3, "ping")),
                                       ("eof", "s2c"), ("exit", 0)])


def test_otlp_export_gives_the_gap_a_span_and_blames_no_one_for_its_hole(tmp_path: Path) -> None:
    cap = _gap_capture(tmp_path / "g.jsonl")
    out = tmp_path / "g.otlp"
    r = CliRunner().invoke(mcptap, ["export", str(cap), "-f", "otlp-json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    spans = [s for line in out.read_bytes().splitlines() for s in otlp_spans(parse_otlp_json(line))]
    gaps = [s for s in spans if s.name == "mcptap gap s2c"]
    assert len(gaps) == 1 and gaps[0].kind == INTERNAL
    assert [attrs(e)["mcptap.finding.code"] for e in gaps[0].events] == ["capture.gap"]
    listed = next(s for s in spans if s.name == "tools/list")
    a = attrs(listed)
    assert a.get("mcptap.answer_in_gap") is True and "error.type" not in a
    assert listed.status.code != STATUS_ERROR
    # a request sent after the gap is still the server's to answer
    ping = next(s for s in spans if s.name == "ping")
    assert attrs(ping)["error.type"] == "no_response" and ping.status.code == STATUS_ERROR


def test_the_live_export_sees_the_gap_as_the_file_export_does(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    now = {"t": 0}

    def clock() -> int:
        now["t"] += 1
        return now["t"]

    rec = Recorder(None, clock=clock, started="2026-01-01T00:00:00Z")
    rec.record_observers.append(seen.append)
    for d, data in handshake() + [c2s(req(2, "tools/list"))]:
        rec.stdio_bytes(Direction(d), data)
    rec.lost(Direction.S2C, 10)
    assert [r["type"] for r in seen] == ["gap"]
    cap = read_capture(str(_gap_capture(tmp_path / "l.jsonl")))
    span = next(s for s in spans_of(cap.header, cap.records) if s.name == "tools/list")
    assert span.attributes.get("mcptap.answer_in_gap") is True and span.status_code == STATUS_UNSET
