"""A lone UTF-16 surrogate (``"\\ud800"``, a JavaScript peer's text cut inside an emoji) in an
id, a method name, a tool name or a URI: analysis keeps ids exact (the raw bytes are the
truth), and every view a person or a tool reads shows the exact value, escaped, as ``id_text``
says it: the capture's records (``id`` U+FFFD for orjson's readers, ``id_text`` exact), the end
record's pending entries (U+FFFD, not ``?``), ``show``'s timeline and summary, ``export -f
messages`` and the HTML report. Captures written before ``id_text`` read the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.check.reannotated import Reannotated
from mcptap.cli.main import mcptap
from mcptap.show.html import report_data
from scripted import c2s, handshake, record, s2c
from test_html_report import dom, needs_chromium


def _line(o: dict[str, Any]) -> bytes:
    return json.dumps(o, separators=(",", ":")).encode() + b"\n"     # lone surrogates as escapes, as a JavaScript peer writes them


def _cap(tmp_path: Path) -> Path:
    return record(tmp_path / "lone.jsonl", handshake(server_caps={"resources": {}, "tools": {}}) + [
        c2s(_line({"jsonrpc": "2.0", "id": "a\ud800", "method": "ping"})),
        c2s(_line({"jsonrpc": "2.0", "id": "p\udfff", "method": "tools/x\ud800"})),
        c2s(_line({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "file:///a\ud800"}})),
        c2s(_line({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "t\udc00", "arguments": {}}})),
        s2c(_line({"jsonrpc": "2.0", "id": "a\ud800", "result": {}})),
        s2c(_line({"jsonrpc": "2.0", "id": 9, "result": {"contents": []}})),
        s2c(_line({"jsonrpc": "2.0", "id": 10, "result": {"content": []}})),
        ("exit", 0)])


def run(*args: str) -> str:
    res = CliRunner().invoke(mcptap, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def test_the_capture_says_the_exact_id_and_stays_readable(tmp_path: Path) -> None:
    recs = _records(_cap(tmp_path))       # orjson, as every reader: no lone surrogate in any record
    by_seq = {r.get("seq"): r for r in recs}
    assert by_seq[4]["id"] == "a\ufffd" and by_seq[4]["id_text"] == '"a\\ud800"'
    assert by_seq[5]["id"] == "p\ufffd" and by_seq[5]["id_text"] == '"p\\udfff"'
    pending = recs[-1]["pending"]
    assert [(p["id"], p["id_text"]) for p in pending] == [("p\ufffd", '"p\\udfff"')]
    assert [(u["data"]["id"], u["data"]["id_text"]) for u in recs[-1]["unanswered"]] == [("p\ufffd", '"p\\udfff"')]


def _old(tmp_path: Path) -> Path:
    """The capture as an mcptap before ``id_text`` wrote it (pending ids as ``?``)."""
    out = []
    for r in _records(_cap(tmp_path)):
        r.pop("id_text", None)
        for p in r.get("pending", ()):
            p["id"] = p["id"].replace("\ufffd", "?")
        out.append(r)
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in out))
    return path


def test_show_gives_ids_methods_and_tools_exactly(tmp_path: Path) -> None:
    for cap in (_cap(tmp_path), _old(tmp_path)):
        text = run("show", str(cap), "--no-color")
        assert "\ufffd" not in text, text       # finding texts too (show/lone.py): analysis reads the method as U+FFFD
        assert "capability.unknown_method: tools/x\\ud800 is not a method" in text
        assert "request #5 tools/x\\ud800 id=\"p\\udfff\" from the client was never answered" in text and "(#5 tools/x\\ud800)" in text
        assert 'ping id="a\\ud800"' in text and 'tools/x\\ud800 id="p\\udfff"' in text and "tools/call t\\udc00 id=10" in text
        assert "  tools/x\\ud800 " in text and "  t\\udc00 " in text      # the summary's method and tool tables
        assert '#5 tools/x\\ud800 id="p\\udfff" from the client' in text
        lines = run("show", str(cap), "--format", "json").splitlines()
        shown = [orjson.loads(x) for x in lines]        # strict JSON: a finding's message quotes the exact name escaped
        assert {r["seq"]: r["id_text"] for r in shown if "id_text" in r} == {4: '"a\\ud800"', 5: '"p\\udfff"', 8: '"a\\ud800"'}
        assert [r["seq"] for r in shown if r.get("method") == "tools/x\ufffd"] == [5]      # the record's fields as recorded
        messages = [f["message"] for r in shown for k in ("findings", "unanswered", "capture") if isinstance(r.get(k), list) for f in r[k]]
        assert not [m for m in messages if "\ufffd" in m], messages
        assert "tools/x\\ud800 is not a method of any MCP revision (vendor or extension method?)" in messages
        assert 'request #5 tools/x\\ud800 id="p\\udfff" from the client was never answered' in messages


def test_export_messages_gives_the_exact_values(tmp_path: Path) -> None:
    for cap in (_cap(tmp_path), _old(tmp_path)):
        lines = {m["seq"]: m for m in map(json.loads, run("export", "-f", "messages", str(cap)).splitlines())}   # stdlib: keeps them
        assert lines[4]["id"] == "a\ud800" and lines[4]["json"]["id"] == "a\ud800"
        assert lines[5]["id"] == "p\udfff" and lines[5]["method"] == "tools/x\ud800" and lines[5]["json"]["method"] == "tools/x\ud800"
        assert lines[6]["json"]["params"]["uri"] == "file:///a\ud800"
        assert lines[7]["json"]["params"]["name"] == "t\udc00"
        assert lines[8]["id"] == "a\ud800"


def test_the_report_gives_the_exact_values(tmp_path: Path) -> None:
    for cap in (_cap(tmp_path), _old(tmp_path)):
        ra = Reannotated.open(str(cap))
        data = report_data(ra.header, ra)
        rows = {r[0]: r for r in data["rows"]}
        assert rows[4][6] == "a\ud800" and rows[5][6] == "p\udfff" and rows[5][5] == "tools/x\ud800" and rows[7][13] == "t\udc00"
        assert 'id="a\\ud800"' in rows[4][15]
        page = tmp_path / "r.html"
        run("report", str(cap), "-o", str(page))
        assert "\ufffd" not in page.read_text().split('"payloads"')[0].replace("U+FFFD", "")


def test_the_reports_finding_texts_give_the_exact_method(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    ra = Reannotated.open(str(cap))
    places = [p[2] for groups in report_data(ra.header, ra)["findings"].values() for g in groups for p in g["places"]]
    assert not [p for p in places if "\ufffd" in p], places
    assert "tools/x\\ud800 is not a method of any MCP revision (vendor or extension method?)" in places


@needs_chromium
def test_the_report_page_shows_finding_texts_with_the_exact_method(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    run("report", str(_cap(tmp_path)), "-o", str(page))
    findings = dom(page).split('id="findings"', 1)[1].split('id="timeline"', 1)[0]
    assert "\ufffd" not in findings
    assert "tools/x\\ud800 is not a method" in findings and "request #5 tools/x\\ud800 id=" in findings


def test_otlp_export_gives_the_exact_values_escaped(tmp_path: Path) -> None:
    """OTLP JSON takes UTF-8 strings only: the exact names in escape form, never U+FFFD."""
    out = run("export", "-f", "otlp-json", str(_cap(tmp_path)))
    assert "\ufffd" not in out
    spans = [s for rs in orjson.loads(out)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    names = {s["name"] for s in spans}
    assert {"tools/x\\ud800", "tools/call t\\udc00", "ping"} <= names
    attrs = {(a["key"], a["value"].get("stringValue")) for s in spans for a in s["attributes"]}
    assert {("jsonrpc.request.id", "a\\ud800"), ("jsonrpc.request.id", "p\\udfff"), ("mcp.resource.uri", "file:///a\\ud800"),
            ("gen_ai.tool.name", "t\\udc00")} <= attrs
    messages = {a["value"]["stringValue"] for s in spans for e in s.get("events", ()) for a in e["attributes"]
                if a["key"] == "mcptap.finding.message"}
    assert "tools/x\\ud800 is not a method of any MCP revision (vendor or extension method?)" in messages
