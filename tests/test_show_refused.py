"""A request the HTTP tap refused itself (it never reached the server) is marked in every view
of ``show`` and ``report``: the text timeline (``⊘ tap 403`` where a reply would be, phase
``refused``, the request record said refused), ``--format json`` (``tap_answer``), Mermaid,
the HTML report's rows and diagram; the summary counts it apart. Escape-safe for a ``how`` a
newer or hand-edited capture holds. Old captures (no marker) are marked the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.show.html import report_data

DATA = Path(__file__).parent / "data" / "http-host-rejected.jsonl"


def run(*args: str) -> str:
    res = CliRunner().invoke(mcptap, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _old(tmp_path: Path) -> Path:
    """The capture as an mcptap before the marker wrote it."""
    out = []
    for r in _lines(DATA):
        r.pop("refused", None)
        if isinstance(r.get("transport"), dict):
            r["transport"].pop("refused", None)
        out.append(r)
    return _write(tmp_path / "old.jsonl", out)


def test_every_view_marks_the_refused_request(tmp_path: Path) -> None:
    for cap in (DATA, _old(tmp_path)):
        text = run("show", str(cap), "--no-color").splitlines()
        line = next(x for x in text if x.split()[:1] == ["2"])
        assert "initialize id=1" in line and "⊘ tap 403" in line and line.rstrip().endswith("refused"), line
        assert "⊘ tap 403: refused, never forwarded" in next(x for x in text if x.split()[:1] == ["1"])
        forwarded = next(x for x in text if x.split()[:1] == ["5"])
        assert "⊘" not in forwarded and "before_init" in forwarded
        assert any("refused by the tap itself, never forwarded: 1 message (host_rejected 1)" in x for x in text)

        shown = [orjson.loads(x) for x in run("show", str(cap), "--format", "json").splitlines()]
        answers = {r["seq"]: r["tap_answer"] for r in shown if "tap_answer" in r}
        assert answers == {1: {"how": "host_rejected", "status": 403, "reason": "Forbidden"},
                           2: {"how": "host_rejected", "status": 403, "reason": "Forbidden"}}
        assert shown[-1]["refused"] == {"host_rejected": 1} and shown[-1]["methods"]["initialize"]["c2s"] == 1

        assert "2 initialize id=1 (⊘ tap 403: refused)" in run("show", str(cap), "--format", "mermaid")


def test_the_report_marks_the_refused_request(tmp_path: Path) -> None:
    from mcptap.check.reannotated import Reannotated

    for cap in (DATA, _old(tmp_path)):
        ra = Reannotated.open(str(cap))
        rows = {r[0]: r for r in report_data(ra.header, ra)["rows"]}
        assert rows[2][17] == "⊘ tap 403" and "⊘ tap 403" in rows[2][15] and rows[1][17] == "⊘ tap 403"
        assert rows[5][17] is None and rows[4][17] is None


def test_an_unknown_refusal_is_shown_escaped(tmp_path: Path) -> None:
    how = "\x1b[31m<b>new"
    records = _lines(DATA)
    records[1]["refused"] = how
    records[2]["transport"]["refused"] = how
    cap = _write(tmp_path / "newer.jsonl", records)
    text = run("show", str(cap), "--no-color")
    assert "\x1b" not in text and "⊘ tap \\x1b[31m" in text
    shown = [orjson.loads(x) for x in run("show", str(cap), "--format", "json").splitlines()]
    assert {r["seq"]: r["tap_answer"] for r in shown if "tap_answer" in r}[2] == {"how": how, "status": None, "reason": None}
    html = tmp_path / "r.html"
    run("report", str(cap), "-o", str(html))
    page = html.read_text()
    assert "<b>new" not in page and "\x1b" not in page
