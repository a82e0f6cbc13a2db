"""The HTML report shows every peer text escaped as mcptap/escape.py does
(``\\x1b``, ``\\u202e``…), not only in the timeline and findings: the header's
pending list, the session heading (client and server info), the sessions'
capabilities and the sequence diagram's labels too, so no peer can move the
cursor, break a line or reverse text (``tools/call \\u202egnp.exe`` drawn as
``exe.png``) in them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcptap.capture.reader import CaptureStream
from mcptap.check.reannotated import Reannotated
from mcptap.cli.main import mcptap
from mcptap.escape import escape_controls, has_controls
from mcptap.show.html import report_data
from scripted import c2s, j, note, record, req, s2c
from test_html_report import dom, dump, needs_chromium

EVIL = "evil\x1b[31mserver\x07 1\n2\r3\u2028x\u202ey"
TOOL = "\u202egnp.exe"
METHOD = "\x1b]0;title\x07tools/list"
#: raw characters no peer text may leave in the page (the DOM's own newlines aside)
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile(path: Path) -> Path:
    return record(path, [
        c2s(req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {"x\u202e": {}},
                                  "clientInfo": {"name": "c\x1b[2K", "version": "1\u2028"}})),
        s2c(j({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, EVIL: {}},
                                                      "serverInfo": {"name": EVIL, "version": "1\r\n2"}}})),
        c2s(note("notifications/initialized")),
        c2s(req(2, "tools/call", {"name": TOOL, "arguments": {}})),
        s2c(j({"jsonrpc": "2.0", "id": 2, "result": {"content": []}})),
        c2s(req(3, METHOD)),                   # never answered: pending
        ("eof", "c2s"), ("exit", 0)])


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in _strings(k) + _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return []


def test_every_shown_peer_text_field_is_escaped(tmp_path: Path) -> None:
    path = hostile(tmp_path / "h.jsonl")
    stream = CaptureStream(str(path))
    data = report_data(stream.header, Reannotated(stream.header, iter(stream), str(path), lambda: stream.truncated), str(path))
    shown = _strings(data["meta"]) + _strings(data["findings"]) + [s for r in data["rows"] for s in _strings([r[15], r[18], r[19]])]
    assert not [s for s in shown if has_controls(s)]
    assert escape_controls(EVIL) in _strings(data["meta"]["sessions"])
    assert any(escape_controls(METHOD) in s for s in _strings(data["meta"]["end"]["pending"]))
    # the filter's fields keep the exact peer values (~m, ~tool match what the peer sent)
    assert [r[13] for r in data["rows"] if r[13]] == [TOOL] and METHOD in [r[5] for r in data["rows"]]
    assert [r[19] for r in data["rows"] if r[19]] == [escape_controls(TOOL)]


@needs_chromium
def test_report_page_shows_no_raw_peer_controls(tmp_path: Path) -> None:
    path = hostile(tmp_path / "h.jsonl")
    for args in ([], ["--no-scrub"]):
        out = tmp_path / f"r{len(args)}.html"
        r = CliRunner().invoke(mcptap, ["report", *args, str(path), "-o", str(out)], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        page = dom(out)
        assert RAW.findall(page) == []
        text = page.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        assert "evil\\x1b[31mserver\\x07 1\\n2\\r3\\u2028x\\u202ey" in text          # the session heading
        assert text.count("\\x1b]0;title\\x07tools/list") >= 2                  # pending, and the diagram label
        assert "tools/call \\u202egnp.exe" in text                             # the diagram label


#: what a peer sends raw in a payload: bidi overrides and isolates, line and paragraph separators,
#: zero-width and invisible characters, ESC and BEL (in text that is not JSON), a private-use character
PAYLOAD_CHARS = "\u202e\u2028\u2029\u200f\u2066\u200b\u3164\ue000"


def payload_capture(path: Path) -> Path:
    text = "a" + PAYLOAD_CHARS + "z"
    return record(path, [
        c2s(req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}})),
        s2c(j({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                      "serverInfo": {"name": "s", "version": "1"}}})),
        c2s(note("notifications/initialized")),
        c2s(j({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}).replace(
            b"\\u202e", "\u202e".encode()).replace(b"\\u2028", "\u2028".encode())),       # seq 4: as UTF-8, not as JSON escapes
        s2c(j({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text}]}})),   # seq 5: JSON escapes (json.dumps)
        s2c(("\x1b[2Klog " + text + "\x07\n").encode()),                     # seq 6: not JSON
        ("err", ("boom\x1b]0;t\x07 " + text + "\n").encode()),                # seq 7: stderr
        ("gap", "r\u202eeason"),                                              # seq 8: a record the pane shows whole
        ("eof", "c2s"), ("exit", 0)])


def _escaped_text(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


@needs_chromium
def test_the_payload_pane_escapes_a_peers_controls(tmp_path: Path) -> None:
    path = payload_capture(tmp_path / "p.jsonl")
    out = tmp_path / "p.html"
    r = CliRunner().invoke(mcptap, ["report", "--no-scrub", str(path), "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    want = "a" + _escaped_text(PAYLOAD_CHARS) + "z"
    panes = {}
    for seq in (4, 5, 6, 7, 8):
        page = dom(out, f"seq={seq}&dump")
        assert RAW.findall(page) == [], seq
        panes[seq] = dump(page)["payload"]
        assert not has_controls(panes[seq].replace("\n", "")), (seq, panes[seq])     # the pane's own layout aside
    assert want in panes[4] and '"text": "a\\u202e\\u2028' in panes[5]           # JSON escapes stay as the peer wrote them
    assert "\\x1b[2Klog " + want + "\\x07" in panes[6] and "\n" not in panes[6]
    assert "boom\\x1b]0;t\\x07 " + want + "\\n" in panes[7]
    assert "r\\u202eeason" in panes[8]
