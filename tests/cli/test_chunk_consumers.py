"""Every reader of a capture sees the messages a live tap stored as ``chunk``
records (bytes kept unframed while analysis was behind). A capture written by
this mcptap carries today's rules fingerprint, so readers reuse its recorded
annotations; that path never re-frames chunks, and ``export`` (every format)
and ``report --no-scrub`` left those messages out, with the findings of the
end record, without a word (found by a breaker helper). ``check`` and
``show`` took the full path already; now every reader does."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from mcptap.capture.writer import CaptureWriter
from mcptap.cli.main import mcptap
from mcptap.model import Direction
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.recorder import Recorder
from scripted import handshake, req, res


def chunk_capture(path: Path) -> Path:
    """A stdio session whose tools/call request and answer were stored as chunk records."""
    ticks = iter(range(1000, 10 ** 9, 1000))
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": ["server"]}, clock=lambda: next(ticks),
                   started="2026-01-01T00:00:00.000000Z")
    for d, data in handshake():
        rec.stdio_bytes(Direction(d), data)
    rec.stdio_unframed(Direction.C2S, req(2, "tools/list") + req(3, "ping"))
    rec.stdio_unframed(Direction.S2C, res(2, {"tools": []}))
    rec.stdio_bytes(Direction.S2C, res(3))
    rec.close()
    lines = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert lines[0]["rules"] == rules_fingerprint()            # the reuse path's condition
    assert sum(r["type"] == "chunk" for r in lines) == 2
    return path


def run(*args: str, input: bytes | None = None) -> str:
    r = CliRunner().invoke(mcptap, list(args), input=input, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


KINDS = ["request", "response", "notification", "request", "request", "response", "response"]


def test_export_messages_and_otlp_hold_the_chunked_messages(tmp_path: Path) -> None:
    cap = str(chunk_capture(tmp_path / "c.jsonl"))
    rows = [json.loads(x) for x in run("export", "-f", "messages", cap).splitlines()]
    assert len(rows) == 7
    spans = run("export", "-f", "otlp-json", cap)
    assert spans.count('"name":"tools/list"') + spans.count('"name": "tools/list"') >= 1
    assert '"ping"' in spans


def test_report_without_scrubbing_holds_them(tmp_path: Path) -> None:
    cap = str(chunk_capture(tmp_path / "c.jsonl"))
    for extra in ((), ("--no-scrub",)):
        out = tmp_path / f"r{len(extra)}.html"
        run("report", cap, "-o", str(out), *extra)
        page = out.read_text()
        counts = re.search(r'"end":\{"c2s":\{[^}]*"messages":(\d+)\},"s2c":\{[^}]*"messages":(\d+)\}', page)
        assert counts is not None and counts.groups() == ("4", "3"), extra
        assert '"type":"chunk"' not in page


def test_show_and_show_from_stdin_hold_them(tmp_path: Path) -> None:
    cap = chunk_capture(tmp_path / "c.jsonl")
    for args, stdin in (((str(cap),), None), (("-",), cap.read_bytes())):
        rows = [json.loads(x) for x in run("show", "--format", "json", *args, input=stdin).splitlines()]
        assert [r["kind"] for r in rows if r.get("type") == "message"] == KINDS
