"""Very long peer strings (a 50 KB method name, id, tool name, error message,
session id) in human-readable output: each run without a space is quoted as
its first characters, "…" and its full length, and a piece of peer text is cut
after LINE characters (mcptap.escape.shown), so no line of show, check, diff,
replay or the report page's findings grows with the peer's strings; controls
stay escaped. JSON output keeps the exact values."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcptap.check.reannotated import Reannotated
from mcptap.check.report import check_capture, run_check
from mcptap.check.text import format_text
from mcptap.diff.captures import diff_captures
from mcptap.diff.render import render_text
from mcptap.escape import CONTROLS, LINE, WORD, escape_controls, shown
from mcptap.show import render
from mcptap.show.html import report_data
from tests.scripted import c2s, err, handshake, note, record, req, res, s2c

RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: a timeline line holds a few peer pieces (what, codes) beside its own columns
BOUND = 3 * (LINE + 40) + 200

#: short and long strings, with spaces, controls, non-ASCII and lone surrogates
peer = st.one_of(
    st.text(max_size=40),
    st.builds(lambda c, n: c * n, st.characters(), st.integers(WORD, 60_000)),
    st.builds(lambda w, n: " ".join([w] * n), st.text(min_size=1, max_size=8), st.integers(100, 5_000)),
    st.builds(lambda a, b: a + b, st.text(max_size=300), st.text(alphabet="\x1b[\u202e\r\x9b", min_size=1, max_size=3_000)),
)


@given(st.text(max_size=5_000) | peer)
def test_shown_is_bounded_and_escaped(text: str) -> None:
    out = shown(text)
    assert CONTROLS.search(out) is None
    assert len(out) <= LINE + 30
    if len(text) <= WORD and CONTROLS.search(text) is None:
        assert out is text
    if " " not in text and len(text) > WORD:
        assert out.endswith(f"…({len(text):,} chars)")
    if max((len(r) for r in text.split(" ")), default=0) <= WORD and len(escape_controls(text)) <= LINE:
        assert out == escape_controls(text)


def _capture(path: Path, s: str, n: int) -> Path:
    tool = s or "t"
    steps = [
        *handshake(),
        c2s(req(2, "tools/list")),
        s2c(res(2, {"tools": [{"name": tool, "inputSchema": {"type": "object"}}]})),
        c2s(req(s, s, {"x": 1})),                        # unknown method, string id: findings quote both
        s2c(err(s, -32601 - n, s)),                       # a nonstandard error code, quoting the id
        c2s(req(3, "tools/call", {"name": tool, "arguments": {}})),
        s2c(res(3, {"content": [{"type": "text", "text": s}], "isError": True})),
        s2c(note(s, {"level": s})),
        s2c(res(s + "x")),                                # answers nothing: unmatched, quoting the id
        ("err", (s + "\n").encode("utf-8", "surrogatepass")),
        c2s(req(4, s)),                                   # never answered: pending at the end
        ("eof", "c2s"),
        ("exit", 1),
    ]
    return record(path, steps)


def _lines_ok(lines: list[str], where: str) -> None:
    for line in lines:
        assert len(line) <= BOUND, (where, len(line), line[:200])
        assert RAW_CONTROL.search(line) is None, (where, line[:200])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(s=peer.filter(lambda s: "\n" not in s), n=st.integers(0, 5))
@example(s="\ud800" * 120, n=0)
@example(s="\ud83d\ude00\udc00x", n=1)
def test_every_text_output_is_bounded(tmp_path: Path, s: str, n: int) -> None:
    path = _capture(tmp_path / "long.jsonl", s, n)
    ra = Reannotated.open(str(path))
    _lines_ok(list(render.timeline(ra, ra.header)), "show")
    ra = Reannotated.open(str(path))
    _lines_ok([x for line in render.mermaid(ra, ra.header) for x in line.split("\n")], "mermaid")
    _lines_ok(list(format_text(run_check([str(path)], keep=20, check=check_capture), errors_shown=False)), "check")
    other = _capture(tmp_path / "other.jsonl", s[::-1] + "y", n + 1)
    _lines_ok(render_text(diff_captures(str(path), str(other))).split("\n"), "diff")
    ra = Reannotated.open(str(path))
    data = report_data(ra.header, ra, str(path))
    _lines_ok([p[2] for g in data["findings"].values() for c in g for p in c["places"]], "report findings")
    _lines_ok([r[15] for r in data["rows"]], "report rows")
    # JSON keeps the exact values, but for an escaped lone surrogate (``\\ud800``: no UTF-8 can
    # hold it), which reads as U+FFFD (protocol/jsonparse.py); an escaped pair is its character
    exact = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    ra = Reannotated.open(str(path))
    recs = [orjson.loads(x) for x in render.json_lines(ra, ra.header)]
    assert any(r.get("method") == exact and r.get("id") == exact for r in recs)


def test_a_50_kb_method_name_and_id(tmp_path: Path) -> None:
    """As a user meets it: before, show printed the name whole in the line and in each finding
    quoting it (several times 50 KB); now a few KB in all, with the full length stated."""
    s = "m" * 50_000
    path = _capture(tmp_path / "big.jsonl", s, 0)
    ra = Reannotated.open(str(path))
    text = "\n".join(render.timeline(ra, ra.header))
    assert len(text) < 40_000 and "m" * (WORD + 1) not in text
    assert f"{'m' * WORD}…(50,000 chars)" in text
    check = "\n".join(format_text(run_check([str(path)], keep=20, check=check_capture), errors_shown=False))
    assert len(check) < 20_000 and "…(50,000 chars)" in check


def test_replay_report_line() -> None:
    from mcptap.cli.replay import _line
    from mcptap.compare.verdict import CHANGED
    from mcptap.replay.compare import ExchangeResult

    fields: dict[str, Any] = {f: None for f in ExchangeResult.__dataclass_fields__}
    fields.update(seq=3, label="tools/call x", status=CHANGED, note="server said " + "\x1b" * 60_000)
    line = _line(ExchangeResult(**fields))
    assert len(line) <= BOUND and RAW_CONTROL.search(line) is None and "…(60,000 chars)" in line
