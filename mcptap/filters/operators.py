"""Filter expressions over capture records, in MCP terms (pure, level 1).

In the spirit of mitmproxy's filter expressions (``~q``, ``~s``, ``!``, ``&``,
``|``); the language is documented in ``docs/filters.md``::

    ~req & ~tool echo             tools/call requests for the tool "echo" (and, with
                                  the request context, their responses)
    ~s2c & ~lat >100ms            server responses slower than 100 ms
    ~f framing.* | ~sev error     framing findings, or any error finding
    ~j params.name=echo           JSON-path predicate on the message

``compile_filter(text) -> Filter``; a ``Filter`` is called as
``flt(record, request=None) -> bool`` where ``record`` is a capture record
dict (docs/capture-format.md; usually re-annotated) and ``request`` is an
optional dict describing the request the record belongs to (a response's,
a progress notification's or a cancellation's): ``{"seq", "method", "tool"}``.
Bad input raises :class:`~mcptap.errors.FilterSyntaxError` whose ``column``
(1-based) points at the offending character.

This module is the public entry and the meaning of every operator but ``~j``
(JSON-path predicates: :mod:`mcptap.filters.jsonpath`); the record accessors it
shares with show and check are :mod:`mcptap.capture.fields`, the grammar
(lexer, parser, error columns) :mod:`mcptap.filters.parse`.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.fields import message_json, message_text, record_findings, tool_of
from mcptap.filters.exact import exact_field, exact_tool
from mcptap.filters.jsonpath import CMP, JOPS, json_path
from mcptap.filters.members import member_views
from mcptap.filters.parse import ArgError, Pred, Tok, parse
from mcptap.model import PHASE_SHOWN, SEVERITY_RANK
from mcptap.protocol.jsonrpc import show_id

_SEV_RANK = {**SEVERITY_RANK, "warning": SEVERITY_RANK["warn"]}   # the filter language also reads "warning"
#: one operator per name the timeline's kind column prints (``model.KIND_SHOWN``); ``~resp`` takes errors too
_KINDS = {"~req": ("request",), "~notif": ("notification",), "~resp": ("response", "error"), "~err": ("error",),
          "~batch": ("batch",), "~inval": ("invalid",), "~text": ("non_json",)}
_DIRS = {"~c2s": "c2s", "~s2c": "s2c"}


# -- predicates ----------------------------------------------------------------------

def _glob(pat: str) -> Callable[[str], bool]:
    if any(c in pat for c in "*?["):
        rx = re.compile(fnmatch.translate(pat))
        return lambda s: rx.match(s) is not None
    return lambda s: s == pat


def _method_of(r: dict[str, Any], q: dict[str, Any] | None) -> Any:
    m = exact_field(r, "method")        # a lone surrogate exact, not U+FFFD (filters.exact)
    if m is None and q is not None and r.get("kind") in ("response", "error"):
        m = q.get("method")
    return m


def _method(t: Tok) -> Pred:
    try:
        rx = re.compile(t.text)
    except re.error as exc:
        raise ArgError(f"bad regular expression: {exc}", exc.pos or 0) from None
    except (OverflowError, RecursionError) as exc:       # a{99999999999}, or nesting deeper than the compiler goes
        raise ArgError(f"bad regular expression: {exc}", 0) from None

    def p(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
        m = _method_of(r, q)
        return m is not None and rx.search(m) is not None
    return p


def _tool(t: Tok) -> Pred:
    match = _glob(t.text)

    def p(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
        if r.get("type") != "message":
            return False
        name = exact_tool(r, tool_of(r))
        if name is None and q is not None and q.get("method") == "tools/call" and r.get("method") != "tools/call":
            name = q.get("tool")
        return name is not None and match(name)
    return p


def _id(t: Tok) -> Pred:
    want, written = t.text, t.raw

    def p(r: dict[str, Any], q: dict[str, Any] | None) -> bool:
        if "id" not in r:
            return False
        v = exact_field(r, "id")
        if v is None and "raw" in r:
            # a number beyond any double (1e400) is null in the record, ±infinity in its raw bytes
            m = message_json(r)
            v = m.get("id") if isinstance(m, dict) else None
        if isinstance(v, str):
            # the text, or the JSON text as views show it, quotes and escapes as typed
            # ('"\ud800"' for a lone surrogate, which no argument can hold)
            return want == v or written == show_id(v)
        if type(v) is float and math.isinf(v):
            return want == show_id(v)       # 1e400 / -1e400, as views show it
        return dumps(v).decode() == want
    return p


def _field_glob(key: str) -> Callable[[Tok], Pred]:
    def build(t: Tok) -> Pred:
        match = _glob(t.text)
        return lambda r, q: isinstance(r.get(key), str) and match(r[key])
    return build


def _phase(t: Tok) -> Pred:
    # the timeline's short form (before_init) names the phase too: what show prints can be filtered on
    match = _glob(t.text)

    def pred(r: dict[str, Any], q: Any) -> bool:
        phase = r.get("phase")
        return isinstance(phase, str) and (match(phase) or match(PHASE_SHOWN.get(phase, phase)))
    return pred


def _finding_code(t: Tok) -> Pred:
    pat = t.text
    if not any(c in pat for c in "*?[."):
        pat += ".*"                     # a bare family name: ~f lifecycle
    match = _glob(pat)
    return lambda r, q: any(match(f.get("code", "")) for f in record_findings(r))


def _severity(t: Tok) -> Pred:
    rank = _SEV_RANK.get(t.text.lower())
    if rank is None:
        raise ArgError(f"severity must be error, warn or info, not {t.text!r}")
    return lambda r, q: any(_SEV_RANK.get(f.get("severity") or "", -1) >= rank for f in record_findings(r))


_LAT = re.compile(r"^(>=|<=|>|<|=|==)?\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s)?$")
_UNIT = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000, None: 1000}
def _latency(t: Tok) -> Pred:
    m = _LAT.match(t.text.strip())
    if m is None:
        raise ArgError(f"latency must look like >100ms, <=2s, >500us (unit defaults to ms), not {t.text!r}")
    cmp = CMP[m.group(1) or ">="]
    bound = float(m.group(2)) * _UNIT[m.group(3)]
    return lambda r, q: isinstance(r.get("latency_us"), int) and cmp(r["latency_us"], bound)


def _text(s: str) -> Pred:
    needle = s.lower()
    return lambda r, q: needle in message_text(r).lower()


def _kind(kinds: tuple[str, ...]) -> Pred:
    if "batch" in kinds:                # a batch's members (members.member_views) are in a batch too
        return lambda r, q: r.get("type") == "message" and (r.get("kind") in kinds or "member" in r)
    return lambda r, q: r.get("type") == "message" and r.get("kind") in kinds


def _dir(d: str) -> Pred:
    return lambda r, q: r.get("type") == "message" and r.get("dir") == d


#: operators without an argument
_NULLARY: dict[str, Pred] = {**{op: _kind(k) for op, k in _KINDS.items()}, **{op: _dir(d) for op, d in _DIRS.items()}}
#: operators that take one argument
_BUILDERS: dict[str, Callable[[Tok], Pred]] = {
    "~m": _method, "~tool": _tool, "~id": _id, "~phase": _phase, "~session": _field_glob("session"),
    "~f": _finding_code, "~sev": _severity, "~lat": _latency, "~t": lambda t: _text(t.text), "~j": json_path,
}


# -- the operator table: the language's reference (docs/filters.md and ``show --help``
#    are generated from it; tests/test_filters.py keeps them in sync) ---------------

@dataclass(frozen=True, slots=True)
class Operator:
    """One row of the filter language's reference. ``forms``: how it is written
    (``~m REGEX``); ``doc``: what it matches (Markdown, one table cell);
    ``short``: the same in a few words, for ``mcptap show --help``."""

    forms: tuple[str, ...]
    doc: str
    short: str

    @property
    def names(self) -> tuple[str, ...]:
        """The operator names it documents (``~m``); () for a bare word."""
        return tuple(dict.fromkeys(f.split()[0] for f in self.forms if f.startswith("~")))


OPERATORS: tuple[Operator, ...] = (
    Operator(("~c2s", "~s2c"), "messages sent by the client / by the server", "sent by the client / the server"),
    Operator(("~req", "~notif", "~resp", "~err"),
             "JSON-RPC requests, notifications, responses (result **or** error), error responses",
             "requests, notifications, responses (result or error), errors"),
    Operator(("~batch", "~inval", "~text"),
             "the other kinds the timeline prints: JSON-RPC batches (a JSON array, its members as one record: any filter matches a batch "
             "when it matches the batch or one of its members, `~m tools/list`, `~id 3`, `~req` alike), JSON that is not "
             "JSON-RPC (`invalid`), and what is not JSON at all (`non_json`: a blank or log line on stdout, a body that does not "
             "parse). `~text` takes no argument: text search is `~t TEXT`",
             "batches, JSON that is not JSON-RPC, what is not JSON"),
    Operator(("~m REGEX",), "method matches the regular expression (searched, not anchored: use `^…$`). A response matches its request's method",
             "method matches REGEX (a response: its request's)"),
    Operator(("~tool NAME",), "`tools/call` requests whose `params.name` is NAME (a glob: `*`, `?`, `[…]`), plus the progress notifications, "
             "cancellations and response that belong to them", "tools/call of tool NAME (glob), with its progress and response"),
    Operator(("~id V",), "messages whose JSON-RPC id, as text, is V (`~id 3` matches `3` and `\"3\"`; use `~j id=3` to tell them apart)",
             "JSON-RPC id is V (as text)"),
    Operator(("~phase P",), "lifecycle phase (glob): `before_initialize` (the timeline's `before_init` names it too), `initializing`, `initialized`, "
             "`operating`, `closing`, `stateless`",
             "lifecycle phase (glob)"),
    Operator(("~session S",), "session id (glob; HTTP captures)", "session id (glob)"),
    Operator(("~f CODE",), "records with a finding whose code matches the glob (`~f framing.crlf`, `~f 'jsonrpc.*'`); a bare family name means "
             "the whole family (`~f lifecycle` = `~f lifecycle.*`). Codes: [findings.md](findings.md)",
             "a finding code matches (glob; a family name: all of it)"),
    Operator(("~sev S",), "records with a finding of severity S **or above**: `error`, `warn`, `info` (so `~sev info` = any finding)",
             "a finding of severity S or above (error, warn, info)"),
    Operator(("~lat OP N[UNIT]",), "responses whose latency compares: OP is `>` `>=` `<` `<=` `=` (default `>=`), UNIT `us`/`µs`, `ms` (default), "
             "`s`: `~lat >100ms`, `~lat <=2s`", "response latency compares (~lat >100ms)"),
    Operator(("~t TEXT",), "the exact bytes of the message (or a stderr record's data) contain TEXT, case-insensitively",
             "the bytes contain TEXT (any case)"),
    Operator(("~j PATH", "~j PATH OP VALUE"), "JSON-path predicate on the message (below)", "JSON path exists / compares (~j params.name=echo)"),
    Operator(("WORD",), "a bare word is `~t WORD`", "a bare word is ~t WORD"),
)


class Filter:
    """A compiled filter expression. ``flt(record, request=None, members=None) -> bool``."""

    __slots__ = ("expr", "_pred")

    def __init__(self, expr: str, pred: Pred) -> None:
        self.expr = expr
        self._pred = pred

    def __call__(self, record: dict[str, Any], request: dict[str, Any] | None = None,
                 members: list[tuple[dict[str, Any], dict[str, Any] | None]] | None = None) -> bool:
        """``members``: a batch record's members as (``members.member_views``
        record, its request context) pairs (``show.tracker.Tracker.members``): the
        batch matches when it or any member matches."""
        if self._pred(record, request):
            return True
        if members is None and record.get("kind") == "batch":
            members = [(v, None) for v in member_views(record)]
        return any(self._pred(v, q) for v, q in members or ())

    def __repr__(self) -> str:
        return f"Filter({self.expr!r})"


def compile_filter(expr: str) -> Filter:
    """Parse ``expr`` (see docs/filters.md). Raises FilterSyntaxError."""
    # a bare word searches the message text, like ~t
    return Filter(expr, parse(expr, _NULLARY, _BUILDERS, _text))


def operator_table() -> dict[str, Any]:
    """The operator table as data, for the HTML report's in-browser port of
    this language (mcptap/show/assets/report.js): operator names with their
    arity, the kinds and directions of the nullary ones, severity ranks,
    latency units, JSON-path comparison operators and the phases' short
    names (``~phase before_init``)."""
    return {
        "nullary": sorted(_NULLARY), "unary": sorted(_BUILDERS),
        "kinds": {op: list(k) for op, k in _KINDS.items()}, "dirs": dict(_DIRS),
        "severity": dict(_SEV_RANK), "units": {k or "": v for k, v in _UNIT.items()}, "jops": list(JOPS),
        "phases": {str(k): v for k, v in PHASE_SHOWN.items()},
    }
