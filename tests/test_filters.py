"""The filter language (mcptap/filters/, docs/filters.md): every operator,
the combinators, request context for responses, and syntax errors with columns."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.capture.fields import record_findings
from mcptap.errors import FilterSyntaxError
from mcptap.filters.operators import compile_filter

CALL = {"type": "message", "seq": 5, "t_us": 100, "dir": "c2s", "kind": "request", "id": 3, "method": "tools/call",
        "phase": "operating", "session": "sess-A",
        "json": {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "echo", "arguments": {"text": "Hello World", "n": 5, "flag": True, "tags": ["a", "b"]}}}}
RESULT = {"type": "message", "seq": 7, "t_us": 150_100, "dir": "s2c", "kind": "response", "id": 3, "pair": 5,
          "latency_us": 150_000, "phase": "operating", "session": "sess-A",
          "json": {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "Hello World"}]}},
          "findings": [{"code": "framing.crlf", "severity": "warn", "message": "s2c line ends in CR LF"}]}
ERROR = {"type": "message", "seq": 9, "t_us": 200, "dir": "s2c", "kind": "error", "id": "x", "pair": 8, "latency_us": 900,
         "phase": "operating", "raw": '{"jsonrpc":"2.0","id":"x","error":{"code":0,"message":"boom"}}\r\n',
         "findings": [{"code": "jsonrpc.nonstandard_error_code", "severity": "info", "message": "code 0"}]}
NOTE = {"type": "message", "seq": 6, "t_us": 120, "dir": "s2c", "kind": "notification", "method": "notifications/progress",
        "phase": "operating", "link": 5, "json": {"jsonrpc": "2.0", "method": "notifications/progress",
                                                  "params": {"progressToken": 1, "progress": 1}}}
BANNER = {"type": "message", "seq": 2, "t_us": 30, "dir": "s2c", "kind": "non_json", "phase": "initializing",
          "raw": "example-server ready\n",
          "findings": [{"code": "framing.non_jsonrpc_line", "severity": "error", "message": "not JSON"}]}
EOF_REC = {"type": "eof", "seq": 10, "t_us": 300, "dir": "s2c",
           "findings": [{"code": "lifecycle.eof_with_pending_requests", "severity": "error", "message": "lost"}]}
STDERR = {"type": "stderr", "seq": 11, "t_us": 310, "data": "Traceback: boom\n"}
END = {"type": "end", "seq": 12, "t_us": 400, "findings": {"error": 1, "warn": 0, "info": 0},
       "unanswered": [{"code": "jsonrpc.unanswered_request", "severity": "error", "message": "never answered"}]}

ALL = [BANNER, CALL, NOTE, RESULT, ERROR, EOF_REC, STDERR, END]
CALL_INFO = {"seq": 5, "method": "tools/call", "tool": "echo"}
CONTEXT = {7: CALL_INFO, 6: CALL_INFO, 9: {"seq": 8, "method": "resources/read", "tool": None}}


def matching(expr: str) -> list[int]:
    flt = compile_filter(expr)
    return [r["seq"] for r in ALL if flt(r, CONTEXT.get(r["seq"]))]


@pytest.mark.parametrize("expr, seqs", [
    ("~c2s", [5]),
    ("~s2c", [2, 6, 7, 9]),
    ("~req", [5]),
    ("~notif", [6]),
    ("~resp", [7, 9]),
    ("~err", [9]),
    ("~m tools/call", [5, 7]),                      # a response matches its request's method
    ("~m ^resources/", [9]),
    ("~m (call|read)", [5, 7, 9]),                  # parentheses inside a regex argument
    ("~m notifications/", [6]),
    ("~tool echo", [5, 6, 7]),                     # with its progress and response
    ("~tool ec*", [5, 6, 7]),
    ("~tool other", []),
    ("~id 3", [5, 7]),
    ("~id x", [9]),
    ("~phase operating", [5, 6, 7, 9]),
    ("~phase init*", [2]),
    ("~session sess-A", [5, 7]),
    ("~f framing.crlf", [7]),
    ("~f framing", [2, 7]),                         # a bare family name
    ("~f *.non*", [2, 9]),
    ("~f jsonrpc.unanswered_request", [12]),        # end record: unanswered requests
    ("~sev error", [2, 10, 12]),
    ("~sev warn", [2, 7, 10, 12]),
    ("~sev info", [2, 7, 9, 10, 12]),
    ("~lat >100ms", [7]),
    ("~lat <1ms", [9]),
    ("~lat >=150000us", [7]),
    ("~lat <=0.15s", [7, 9]),
    ("~lat =900us", [9]),
    ("~t hello", [5, 7]),                           # case-insensitive text search
    ('~t "ready"', [2]),
    ("~t boom", [9, 11]),                           # raw bytes and stderr data
    ("boom", [9, 11]),                              # a bare word is ~t
    ("~j params.name=echo", [5]),
    ("~j params.arguments.n=5", [5]),
    ('~j params.arguments.n="5"', []),              # JSON literal: the string "5" is not the number 5
    ("~j params.arguments.n>4", [5]),
    ("~j params.arguments.n<5", []),
    ("~j params.arguments.flag=true", [5]),
    ("~j params.arguments.tags[1]=b", [5]),
    ("~j params.arguments.tags.0=a", [5]),
    ("~j result.content[*].type=text", [7]),
    ("~j result.content[0].text~=^Hello", [7]),
    ("~j error.code=0", [9]),                       # parsed from raw bytes (no json field)
    ('~j params.arguments.text="Hello World"', [5]),
    ("~j params.progress!=2", [6]),                 # != : the path exists and no value there equals
    ("~j params.name!=echo", []),
    ("~j result", [7]),                             # path exists
    ("~j params.missing", []),
    ("~req & ~tool echo", [5]),
    ("~req ~tool echo", [5]),                       # juxtaposition is &
    ("~resp | ~notif", [6, 7, 9]),
    ("!~s2c", [5, 10, 11, 12]),
    ("!(~s2c | ~c2s)", [10, 11, 12]),
    ("~s2c & !(~f framing | ~err)", [6]),
    ("~c2s | ~s2c & ~err", [5, 9]),                 # & binds tighter than |
    ("(~c2s | ~s2c) & ~err", [9]),
    ("!!~req", [5]),
])
def test_operator(expr: str, seqs: list[int]) -> None:
    assert matching(expr) == seqs


def test_response_without_context_does_not_match_method_or_tool() -> None:
    flt = compile_filter("~m tools/call | ~tool echo")
    assert not flt(RESULT)
    assert flt(RESULT, CALL_INFO)


def test_tool_context_applies_only_to_tools_call_requests() -> None:
    assert not compile_filter("~tool echo")(NOTE, {"seq": 5, "method": "tools/list", "tool": None})


@pytest.mark.parametrize("expr, column, words", [
    ("", 1, "empty filter"),
    ("~tol echo", 1, "did you mean ~tool"),
    ("~req &", 7, "expression expected"),
    ("~req | | ~c2s", 8, "expression expected before '|'"),
    ("(~req", 6, "')' expected"),
    ("~req)", 5, "no matching '('"),
    ("~m", 3, "~m needs an argument"),
    ("~tool )", 7, "~tool needs an argument"),
    ("~lat fast", 6, "latency must look like"),
    ("~lat >5h", 6, "latency must look like"),
    ("~sev fatal", 6, "severity must be"),
    ("~m '(", 4, "unterminated ' string"),
    ("~m a(", 5, "bad regular expression"),
    ("~j a..b=1", 6, "empty segment"),
    ("~j a[x]=1", 6, "index in []"),
    ("~j a>x", 6, "needs a number"),
    ("~c2s ~m [", 9, "bad regular expression"),
    # Python's re raises OverflowError / RecursionError for these, not re.error: once an "internal error"
    ("~m a{99999999999}", 4, "bad regular expression: the repetition number is too large"),
    ("~j params.s~=a{99999999999}", 14, "bad regular expression"),
    ("~m " + "(" * 2000 + ")" * 2000, 4, "bad regular expression"),
])
def test_syntax_errors_have_a_column(expr: str, column: int, words: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_filter(expr)
    assert info.value.column == column  # type: ignore[attr-defined]
    assert words in str(info.value)
    assert f"column {column}" in str(info.value)
    # the caret line points at the column under the echoed expression
    lines = str(info.value).splitlines()
    assert lines[-1].index("^") - 2 == column - 1


@pytest.mark.parametrize(("expr", "under"), [("~m \x1b[31m(", "["), ("~tool \u202e\t~m [", "["), ("~x\x1b", "~")])
def test_the_caret_points_under_the_character_as_shown(expr: str, under: str) -> None:
    """Control characters are shown escaped (ESC as \\x1b, four characters): the
    caret counted raw characters and pointed into the escape (found by a breaker helper)."""
    with pytest.raises(FilterSyntaxError) as info:
        compile_filter(expr)
    _, shown, caret = str(info.value).splitlines()
    assert "\x1b" not in shown and "\u202e" not in shown
    assert shown[caret.index("^")] == under


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="~!&|() \"'\\mjtfsevlaqrpciod=<>*.[]0123456789abc", max_size=24))
def test_arbitrary_input_compiles_or_raises_filter_syntax_error(expr: str) -> None:
    try:
        flt = compile_filter(expr)
    except FilterSyntaxError as exc:
        assert 1 <= exc.column <= len(expr) + 1  # type: ignore[attr-defined]
        return
    for r in ALL:  # a compiled filter never raises on a record
        flt(r, CONTEXT.get(r["seq"]))


def test_record_findings_reads_the_end_records_unanswered_list() -> None:
    assert [f["code"] for f in record_findings(END)] == ["jsonrpc.unanswered_request"]
    assert record_findings({"type": "end", "findings": {"error": 0}}) == []
    assert record_findings(CALL) == []


def _rec(**kw: Any) -> dict[str, Any]:
    return {"type": "message", "seq": 1, "t_us": 0, "dir": "c2s", "kind": "request", **kw}


def test_id_matches_json_text_of_non_string_ids() -> None:
    assert compile_filter("~id 7")(_rec(id=7))
    assert compile_filter("~id 7")(_rec(id="7"))       # the text "7" either way: ~j tells types apart
    assert not compile_filter("~id 7")(_rec())          # no id at all
    assert compile_filter("~id null")(_rec(id=None))


# -- the operator table is the reference -------------------------------------------------

def test_docs_and_show_help_are_generated_from_the_operator_table() -> None:
    """docs/filters.md is exactly what the table generates; every operator the
    parser knows is documented and nothing else is; show --help lists them."""
    from pathlib import Path

    from click.testing import CliRunner

    from mcptap.cli.show import command as show
    from mcptap.filters.doc import markdown
    from mcptap.filters.operators import _BUILDERS, _NULLARY, OPERATORS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "filters.md").read_text()
    assert doc == markdown(), "docs/filters.md is stale: run `.venv/bin/python -m mcptap.filters.doc > docs/filters.md`"
    documented = [n for op in OPERATORS for n in op.names]
    assert sorted(documented) == sorted(set(_NULLARY) | set(_BUILDERS))
    text = CliRunner().invoke(show, ["--help"]).output
    for op in OPERATORS:
        assert ", ".join(op.forms) in text and op.short in text


@pytest.mark.parametrize("expr", ["(" * 5000, "(" * 500 + "~c2s" + ")" * 500, "!" * 5000 + "~c2s", "!(" * 300 + "~c2s" + ")" * 300])
def test_deep_nesting_is_a_syntax_error_not_a_recursion_error(expr: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_filter(expr)
    assert "nested" in str(info.value)


def test_nesting_up_to_the_limit_compiles_and_runs() -> None:
    flt = compile_filter("(" * 60 + "!" * 2 + "~c2s" + ")" * 60)
    for r in ALL:
        flt(r, CONTEXT.get(r["seq"]))


# -- every kind the timeline prints has its operator ------------------------------------

def test_each_kind_the_timeline_prints_has_an_operator_of_that_name() -> None:
    """The kind column (``model.KIND_SHOWN``: req notif resp err batch inval text) names the
    operator that keeps that kind: what show prints can be filtered on."""
    from mcptap.filters.operators import _NULLARY
    from mcptap.model import KIND_SHOWN

    for kind, name in KIND_SHOWN.items():
        assert f"~{name}" in _NULLARY, f"no operator ~{name} for kind {kind!r}"
        assert compile_filter(f"~{name}")(_rec(kind=kind)), f"~{name} does not keep a {kind!r} message"


def test_batch_inval_and_text_keep_those_kinds_of_a_recorded_capture(tmp_path: Any) -> None:
    """Through show --format json on a capture the real Recorder wrote: a batch, JSON that is not
    JSON-RPC, a log line on the server's stdout; ``~t TEXT`` is still the text search."""
    import orjson
    from click.testing import CliRunner

    from mcptap.cli.show import command as show
    from scripted import c2s, handshake, j, record, req, res, s2c

    steps = handshake() + [c2s(b"[" + req(2, "ping").rstrip() + b"," + req(3, "tools/list").rstrip() + b"]\n"),
                           s2c(j([{"jsonrpc": "2.0", "id": 2, "result": {}}, {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}])),
                           s2c(j({"hello": "not json-rpc"})), s2c(b"server log: text mode\n"), c2s(req(4, "ping")), s2c(res(4))]
    path = str(record(tmp_path / "kinds.jsonl", steps))

    def kinds(expr: str) -> list[str]:
        out = CliRunner().invoke(show, [path, "--format", "json", "-f", expr])
        assert out.exit_code == 0, out.output
        return [r["kind"] for r in map(orjson.loads, out.output.splitlines()) if r.get("type") == "message"]

    assert kinds("~batch") == ["batch", "batch"]
    assert kinds("~inval") == ["invalid"]
    assert kinds("~text") == ["non_json"]
    assert kinds("~batch & ~c2s | ~inval") == ["batch", "invalid"]
    assert kinds("~t text") == ["non_json"]               # the argument form is ~t, as before
    assert kinds("!(~batch | ~inval | ~text) & ~req") == ["request", "request"]
