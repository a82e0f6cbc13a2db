"""The HTML report's filter box selects what ``mcptap show -f`` selects, JSON-RPC
batch members included (filters/members.py: a batch matches when it or one of
its members matches; a record answering a member has that member's request
context), and ids, methods and tool names with a lone surrogate compare
exactly (filters/exact.py), never through the U+FFFD their record holds.
Checked in real headless Chromium against ``show`` on the same capture."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from scripted import c2s, handshake, j, note, record, req, res, s2c
from test_html_report import dom, dump, needs_chromium


def batch(*items: bytes) -> bytes:
    return j([json.loads(x) for x in items])


def capture(tmp_path: Path) -> Path:
    return record(tmp_path / "batch.jsonl", handshake("2025-03-26") + [
        c2s(batch(req(2, "tools/call", {"name": "echo", "arguments": {"text": "Hi There"}}), req(3, "tools/list"))),   # seq 4
        s2c(batch(res(2, {"content": []}), res(3, {"tools": []}))),                                      # 5
        c2s(batch(req(4, "tools/call", {"name": "add", "arguments": {}}), req(5, "ping"),
                  note("notifications/progress", {"progressToken": 1, "progress": 1}))),                 # 6
        s2c(res(4, {"content": []})), s2c(res(5)),                                                      # 7, 8: plain answers to members
        c2s(req(6, "ping")), s2c(batch(res(6))),                                                         # 9, 10: a member answers a plain request
        # lone surrogates (a JavaScript peer's text cut inside an emoji) in members' ids, methods, tools
        c2s(batch(req("a\ud800", "tools/x\ud800"), req(8, "tools/call", {"name": "t\udc00", "arguments": {}}))),    # 11
        s2c(batch(res("a\ud800"), res(8, {"content": []}))),                                             # 12
        c2s(req("p\udfff", "ping")), s2c(res("p\udfff")),                                                # 13, 14: plain ones
        s2c(batch(res(99))),                                                                             # 15: answers nothing
        ("eof", "c2s"), ("exit", 0)])


EXPRS = ["~tool echo", "~tool add", "~tool 'e*'", "~id 2", "~id 3", "~id 6", "~m tools/list", "~m ping", "~m ^tools/call$", "~req & ~m tools/call",
         "~j params.name=echo", "~j id=3", "~j result.tools", "~lat >=0", "~lat <1us", "~batch", "!~batch & ~req", "~batch & ~resp", "~notif",
         "~resp", "~err", "~c2s & ~req", "~s2c", "~t 'hi there'", "~t '\"id\":3'", "~f framing", "~sev warn", "~phase operating",
         "~phase before_init", "~session *", "!(~m ping)", "~m tools & !~tool echo",
         # exact, not U+FFFD: a lone surrogate matches itself only
         "~id a\ud800", "~id a\ufffd", "~id p\udfff", "~id p\ufffd", "~m x\ud800", "~m x\ufffd", "~m 'x.$'", "~tool t\udc00", "~tool t\ufffd", "~tool 't?'"]


def show_seqs(path: Path, expr: str) -> list[Any]:
    out = CliRunner().invoke(mcptap, ["show", str(path), "--format", "json", "--filter", expr], catch_exceptions=False)
    assert out.exit_code == 0, (expr, out.output)
    return [r["seq"] for r in map(orjson.loads, out.output.splitlines()) if r.get("type") not in ("header", "end", "summary")]


def test_show_matches_lone_surrogates_exactly(tmp_path: Path) -> None:
    path = capture(tmp_path)
    assert show_seqs(path, "~id a\ud800") == [11, 12] and show_seqs(path, "~id a\ufffd") == []
    assert show_seqs(path, "~id p\udfff") == [13, 14] and show_seqs(path, "~id p\ufffd") == []
    assert show_seqs(path, "~m x\ud800") == [11, 12] and show_seqs(path, "~m x\ufffd") == []
    assert show_seqs(path, "~tool t\udc00") == [11, 12] and show_seqs(path, "~tool t\ufffd") == []


def test_show_matches_batch_members_and_their_answers(tmp_path: Path) -> None:
    path = capture(tmp_path)
    assert show_seqs(path, "~tool add") == [6, 7] and show_seqs(path, "~id 3") == [4, 5] and show_seqs(path, "~notif") == [3, 6]


@needs_chromium
def test_browser_filter_selects_what_show_selects(tmp_path: Path) -> None:
    path = capture(tmp_path)
    out = tmp_path / "b.html"
    r = CliRunner().invoke(mcptap, ["report", str(path), "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    got = dump(dom(out, "dump&filters=" + urllib.parse.quote(json.dumps(EXPRS))))["filters"]
    wrong = {}
    for expr in EXPRS:
        want = show_seqs(path, expr)
        if got[expr] != want:
            wrong[expr] = (got[expr], want)
    assert not wrong, wrong            # expression: (the page's rows, show's)
    assert got["~tool add"] == [6, 7] and got["~id a\ud800"] == [11, 12] and got["~id a\ufffd"] == []


def test_show_gives_batch_members_names_exactly(tmp_path: Path) -> None:
    out = CliRunner().invoke(mcptap, ["show", str(capture(tmp_path)), "--no-color"], catch_exceptions=False)
    assert out.exit_code == 0 and "\ufffd" not in out.output, out.output      # the batch's line and its finding texts
    assert "batch of 2: tools/x\\ud800, tools/call" in out.output and "unknown_method: tools/x\\ud800 is not" in out.output
