"""Every filter example the user is shown (docs/filters.md, README.md,
``mcptap show --help``) parses and keeps exactly the records it is described
to keep. A new example without an expectation here fails the test, so the
docs cannot drift from the language again (``~j 'result.content[*].type=image'``
was documented and rejected)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from mcptap.errors import FilterSyntaxError
from mcptap.filters.operators import compile_filter

ROOT = Path(__file__).resolve().parents[1]


def _m(seq: int, d: str, kind: str, body: dict, **kw: object) -> dict:
    return {"type": "message", "seq": seq, "t_us": seq * 1000, "dir": d, "kind": kind, "phase": "operating",
            "json": {"jsonrpc": "2.0", **body}, **kw}


WARN_ID = {"code": "jsonrpc.id_type_mismatch", "severity": "warn", "message": "response id type differs"}
CRLF = {"code": "framing.crlf", "severity": "warn", "message": "CR LF"}
LC = {"code": "lifecycle.message_before_initialize", "severity": "error", "message": "too early"}
INFO = {"code": "process.exit", "severity": "info", "message": "exit 0"}
RECORDS = [
    _m(1, "c2s", "notification", {"method": "notifications/initialized"}, method="notifications/initialized", findings=[LC]),
    _m(2, "c2s", "request", {"id": 3, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"path": "/etc/passwd", "count": 11, "expr": "a=b"}, "_meta": {"progressToken": "p"}}}, id=3, method="tools/call"),
    _m(3, "s2c", "notification", {"method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}},
       method="notifications/progress", link=2),
    _m(4, "s2c", "response", {"id": 3, "result": {"isError": True, "content": [{"type": "text", "text": "user pressed stop"},
                                                                             {"type": "image", "data": "", "mimeType": "image/png"}]}},
       id=3, pair=2, latency_us=150_000, findings=[CRLF]),
    _m(5, "c2s", "request", {"id": "5", "method": "tools/list"}, id="5", method="tools/list"),
    _m(6, "s2c", "response", {"id": 5, "result": {"tools": []}}, id=5, pair=5, latency_us=2_500_000, findings=[WARN_ID]),
    _m(7, "c2s", "request", {"id": 7, "method": "foo/bar"}, id=7, method="foo/bar"),
    _m(8, "s2c", "error", {"id": 7, "error": {"code": -32601, "message": "Method not found"}}, id=7, pair=7, latency_us=50),
    _m(9, "c2s", "request", {"id": 9, "method": "prompts/list"}, id=9, method="prompts/list"),
    {"type": "process", "seq": 10, "t_us": 10_000, "event": "exit", "code": 0, "findings": [INFO]},
]
REQUESTS = {r["seq"]: {"seq": r["pair"], "method": next(x["method"] for x in RECORDS if x["seq"] == r["pair"]),
                       "tool": "echo" if r["pair"] == 2 else None} for r in RECORDS if "pair" in r}
REQUESTS[3] = {"seq": 2, "method": "tools/call", "tool": "echo"}

#: example -> seqs it keeps on RECORDS (what its documentation says it does)
EXPECTED: dict[str, list[int]] = {
    "~tool echo": [2, 3, 4],                        # the call, its progress and its response
    "~s2c & ~lat >100ms": [4, 6],
    "~sev warn": [1, 4, 6],                         # warn or above
    "~f framing | ~f jsonrpc.id_*": [4, 6],
    "~j params.arguments.path~=^/etc": [2],
    "!(~m ^notifications/)": [2, 4, 5, 6, 7, 8, 9, 10],
    "~f framing.crlf": [4],
    "~f 'jsonrpc.*'": [6],
    "~f lifecycle": [1],
    "~f lifecycle.*": [1],
    "~sev info": [1, 4, 6, 10],                     # any finding
    "~lat >100ms": [4, 6],
    "~lat <=2s": [4, 8],
    "~id 3": [2, 4],
    "~id 5": [5, 6],                                # "5" and 5
    "~id 'a\ufffd'": [],                            # no id here is U+FFFD (lone surrogates: test_lone_surrogate_views)
    "~j id=3": [2, 4],
    "~j id=5": [6],
    "~j 'id=\"5\"'": [5],
    "~req ~tool echo": [2],
    "~m (call|list)": [2, 4, 5, 6, 9],
    "(~m foo | ~m bar)": [7, 8],
    "~t \"user pressed stop\"": [4],
    "~m '^tools/'": [2, 4, 5, 6],
    "~m foo&~c2s": [],                              # the regex is "foo&~c2s"
    "~j params.name=echo": [2],
    "~j params.arguments.count>10": [2],
    "~j result.isError=true": [4],
    "~j 'result.content[*].type=image'": [4],
    "~j 'result.content[*].type=text'": [4],
    "~j result.content[*].type=text": [4],
    '~j params.arguments.expr="a=b"': [2],
    "~j error.code=-32601": [8],
    "~j params._meta.progressToken": [2],
    "~m tools/call & ~lat >100ms": [4],
    "~tool echo & ~lat >100ms": [4],
    "~sev warn & ~s2c": [4, 6],
    "~m tools/list": [5, 6],
}
#: documented as errors
REJECTED = {"~tol echo"}

_PLACEHOLDER = re.compile(r"\b(REGEX|NAME|CODE|TEXT|PATH|VALUE|WORD|OP|UNIT|EXPR)\b|\bN\b|~\w+ [VPS]$|^~[a-z0-9]+(, ~[a-z0-9]+)*$")


def _candidates(text: str) -> set[str]:
    """Filter expressions in ``text``: backticked spans and quoted --filter/-f
    arguments that start like an expression, minus operator syntax
    placeholders (``~m REGEX``) and bare operator names (``~c2s``)."""
    out = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        if span.startswith(("~", "!(", "(~")):
            out.add(span)
    for span in re.findall(r"(?:--filter|-f) '([^']+)'", text):
        out.add(span)
    for span in re.findall(r"\((~\w+ [^)]+)\)$", text, re.M):       # show --help: "(~lat >100ms)"
        out.add(span)
    for span in re.findall(r"'(~[^']+)'", text):                    # show --help option text
        out.add(span)
    return {s for s in out if not _PLACEHOLDER.search(s) and not s.startswith("~/")}      # ~/.config/…: a home path


def _documented() -> set[str]:
    help_text = CliRunner().invoke(mcptap, ["show", "--help"], terminal_width=200).stdout
    found = set()
    for text in ((ROOT / "docs" / "filters.md").read_text(), (ROOT / "README.md").read_text(), help_text):
        found |= _candidates(text)
    return found


def test_every_documented_example_has_an_expectation() -> None:
    found = _documented()
    assert found - set(EXPECTED) - REJECTED == set(), "documented filter examples without an expectation in this test"
    # and the extraction really sees the docs (a broken regex must not make this vacuous)
    assert {"~j 'result.content[*].type=image'", "~tool echo & ~lat >100ms", "~lat >100ms", "~m foo&~c2s"} <= found


@pytest.mark.parametrize("expr", sorted(EXPECTED))
def test_example_keeps_what_it_is_described_to_keep(expr: str) -> None:
    flt = compile_filter(expr)
    assert [r["seq"] for r in RECORDS if flt(r, REQUESTS.get(r["seq"]))] == EXPECTED[expr]


@pytest.mark.parametrize("expr", sorted(REJECTED))
def test_documented_errors_are_errors(expr: str) -> None:
    with pytest.raises(FilterSyntaxError):
        compile_filter(expr)


@pytest.mark.parametrize("expr, seqs", [
    ('~j "result.content[*].type=text"', [4]),      # double quotes as well
    ("~j 'params.arguments.path~=^/etc'", [2]),
    ("~j result.content[*].type='image'", [4]),     # only the value quoted
    ("~j 'result.isError'", [4]),
])
def test_quoted_json_path_arguments(expr: str, seqs: list[int]) -> None:
    flt = compile_filter(expr)
    assert [r["seq"] for r in RECORDS if flt(r, REQUESTS.get(r["seq"]))] == seqs
