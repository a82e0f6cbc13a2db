"""docs/filters.md and the ``mcptap show --help`` operator list, generated from
the operator table (:data:`mcptap.filters.operators.OPERATORS`), as
docs/findings.md is from protocol/codes.py. Regenerate the page with
``python -m mcptap.filters.doc > docs/filters.md``; tests/test_filters.py fails
when it is stale."""

from __future__ import annotations

from mcptap.filters.operators import OPERATORS

_INTRO = """# Filter expressions

`mcptap show --filter EXPR` keeps only the records that match `EXPR`. The
language follows mitmproxy's filter expressions (`~x` operators, `!`, `&`,
`|`, parentheses), with operators in MCP terms. Implementation:
`mcptap/filters/operators.py` (`compile_filter(expr)`; grammar in `filters/parse.py`).

```sh
mcptap show --filter '~tool echo' cap.jsonl               # every tools/call of "echo", its progress and its response
mcptap show --filter '~s2c & ~lat >100ms' cap.jsonl       # responses slower than 100 ms
mcptap show --filter '~sev warn' cap.jsonl                # records with a warn or error finding
mcptap show --filter '~f framing | ~f jsonrpc.id_*' cap.jsonl
mcptap show --filter '~j params.arguments.path~=^/etc' cap.jsonl
mcptap show --filter '!(~m ^notifications/)' cap.jsonl
```

## Operators

"""

_REST = """

Combinators, loosest first: `|` (or), `&` (and; juxtaposition is also
"and": `~req ~tool echo`), `!` (not), parentheses for grouping.

Records that are not messages (stderr, eof, process, gap, end) match only
`~f`, `~sev`, `~t` and `!…`; the end record's summary (bytes, pending
requests) is always used, whatever the filter.

`~id`, `~m` and `~tool` compare the values as the peer sent them. A string
with a lone UTF-16 surrogate escape (`"a\\ud800"`, JSON grammar but not
Unicode) is U+FFFD in the capture's records, which JSON readers take; the
filter reads the exact one from the raw bytes, so `~id 'a\ufffd'` does not
match a peer's `"a\\ud800"` (views show that id as `"a\\ud800"`); the id's JSON text as views show
it, quotes and escape typed (`'"a\\ud800"'`), does. An id beyond any double (`1e400`, null
in the record) matches by that text (`1e400`, `-1e400`), never as `null`, a peer's null id.

The summary under a filtered timeline is the unfiltered summary over the
shown records ("Summary of the N records the filter shows"): the method
table counts requests and notifications by the direction they were sent in
(`c2s`, `s2c`) and responses, results and errors alike, under their
request's method (`resp`, with `err` and the latencies), so every shown
message is counted once. Byte counts and pending requests are the whole
capture's.

## Arguments and quoting

An operator's argument runs to the next whitespace. Parentheses that are
balanced inside it stay part of it, so `~m (call|list)` is a regex and
`(~m foo | ~m bar)` still closes its group. Quote an argument with spaces
or leading operator characters: `~t "user pressed stop"`, `~m '^tools/'`;
a backslash escapes one character. Put spaces around `&` and `|` that
follow an argument (`~m foo&~c2s` reads `foo&~c2s` as the regex).

## JSON paths (`~j`)

A path walks the message's JSON from the top (`jsonrpc`, `id`, `method`,
`params`, `result`, `error`): keys separated by `.`, array indexes as `[0]`
or `.0`, `*` or `[*]` for "any key/element".

| form | matches when |
|---|---|
| `~j PATH` | the path exists |
| `~j PATH=VALUE` | some value at PATH equals VALUE |
| `~j PATH!=VALUE` | the path exists and no value there equals VALUE |
| `~j PATH>N` (`>=`, `<`, `<=`) | some number at PATH compares |
| `~j PATH~=REGEX` | some value at PATH (its JSON text, if not a string) matches |

VALUE is read as a JSON literal when it is one (`5`, `true`, `null`,
`"5"`), else as a string: `~j params.name=echo` compares with the string
"echo", `~j id=5` with the number 5 and `~j 'id="5"'` with the string "5"
(MCP ids are typed: see `jsonrpc.id_type_mismatch`). Numbers compare as
numbers (`1` = `1.0`), `true` is not `1`. Integers keep every digit
(an id `18446744073709551617` is not rounded to a double).

The whole argument may be quoted (the shell's quotes aside, `[*]` and `>`
need them in most shells): its inside is read as above, so
`~j 'result.content[*].type=text'` is `~j result.content[*].type=text`. A
comparison operator inside quotes belongs to the path or the value
(`~j params.arguments.expr="a=b"`).

Examples: `~j params.arguments.count>10`, `~j result.isError=true`,
`~j 'result.content[*].type=image'`, `~j error.code=-32601`,
`~j params._meta.progressToken`.

## Errors

A bad expression is mcptap's own error: `show` prints it on stderr with
the column and a caret, and exits 2:

```
mcptap: show: bad filter at column 1: unknown filter '~tol' (did you mean ~tool?) (see 'mcptap show --help')
  ~tol echo
  ^
```

`FilterSyntaxError.column` is 1-based. Parentheses and `!` nest at most 100 levels deep (deeper is a bad filter, not a crash).
"""

_NOTE = ("<!-- Generated from `mcptap/filters/operators.py` "
         "(`python -m mcptap.filters.doc > docs/filters.md`); edit the table there. -->\n")


def markdown() -> str:
    """docs/filters.md."""
    rows = ["| operator | matches |", "|---|---|"]
    for op in OPERATORS:
        rows.append("| " + ", ".join(f"`{f}`" for f in op.forms) + f" | {op.doc} |")
    return _NOTE + _INTRO + "\n".join(rows) + _REST


def help_text() -> str:
    """The operator list for ``mcptap show --help`` (a click epilog block)."""
    forms = [", ".join(op.forms) for op in OPERATORS]
    width = max(len(f) for f in forms)
    lines = [f"  {f:<{width}}  {op.short}" for f, op in zip(forms, OPERATORS, strict=True)]
    return ("\b\nFilter operators (combine with & | ! and parentheses; docs/filters.md):\n" + "\n".join(lines))


if __name__ == "__main__":
    print(markdown(), end="")
