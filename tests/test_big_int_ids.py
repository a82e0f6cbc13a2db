"""A peer's JSON-RPC id beyond 64 bits (``2**80``): orjson refuses to encode
it, and show (every format), export messages and report used to end in a
``TypeError: Integer exceeds 64-bit range`` traceback when the capture was
re-annotated (``--full``, or rules newer than the capture's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcptap.capture.dumps import dumps
from mcptap.capture.follow import Follower
from mcptap.capture.reader import CaptureStream
from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, s2c

BIG = 2**80 + 1


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "big.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % BIG), s2c(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % BIG),
        ("exit", 0)])


@pytest.mark.parametrize("argv", [
    ["show", "--full"], ["show", "--full", "--format", "json"], ["show", "--full", "--format", "mermaid"],
    ["export", "-f", "messages"], ["check", "--full"],
])
def test_commands_print_a_big_id_exactly(cap: Path, argv: list[str]) -> None:
    r = CliRunner().invoke(mcptap, [argv[0], str(cap), *argv[1:]], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.stderr
    if argv[0] != "check":
        assert str(BIG) in r.stdout


def test_report_holds_a_big_id(cap: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = CliRunner().invoke(mcptap, ["report", str(cap), "--no-scrub", "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert str(BIG) in out.read_text()


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids), max_leaves=20))
def test_dumps_round_trips_any_json_value_exactly(value: object) -> None:
    assert json.loads(dumps(value)) == value
    assert json.loads(dumps(value, indent=True)) == value


def test_big_integer_beside_a_number_beyond_any_double(tmp_path: Path) -> None:
    """orjson refuses the big integer, the stdlib the infinity (1e400): the
    value is still written (infinity as null, as orjson writes it), and
    ``export --format messages`` no longer stops with an internal error."""
    assert dumps({"a": BIG, "b": float("inf")}) == b'{"a":%d,"b":null}' % BIG
    assert json.loads(dumps([BIG, float("-inf")], indent=True, sort=True, newline=True)) == [BIG, None]
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":1e400,"big":%d}}}\n' % BIG
    src = record(tmp_path / "c.jsonl", handshake() + [s2c(line)])
    r = CliRunner().invoke(mcptap, ["export", str(src), "--format", "messages"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    data = [json.loads(x)["json"]["params"]["data"] for x in r.stdout.splitlines() if '"notifications/message"' in x]
    assert data == [{"n": None, "big": BIG}]


def test_filter_by_a_big_id(cap: Path) -> None:
    r = CliRunner().invoke(mcptap, ["show", str(cap), "--full", "--oneline", "--no-summary", "-f", f"~id {BIG}"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert sum(f"id={BIG}" in line for line in r.stdout.splitlines()) == 2


ECHO_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {}}) + "\\n"); sys.stdout.flush()
    if m.get("method") == "notifications/initialized":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": BIG_ID, "method": "ping"}) + "\\n"); sys.stdout.flush()
""".replace("BIG_ID", str(BIG))


def test_replay_answers_a_server_request_with_a_big_id(tmp_path: Path) -> None:
    """The recorded answer to the server's `ping` (id 2**80+1) is sent back: it
    used to crash the replay runner's stdio link."""
    import sys
    cap = record(tmp_path / "srv.jsonl", handshake() + [
        s2c(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % BIG), c2s(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % BIG),
        ("exit", 0)])
    out = tmp_path / "new.jsonl"
    r = CliRunner().invoke(mcptap, ["replay", str(cap), "-o", str(out), "--", sys.executable, "-c", ECHO_SERVER], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.stderr
    assert "Traceback" not in r.stderr and "s2c ping" in r.stdout


# -- reading a capture back: recorded annotations and payloads stay exact ------
# orjson reads an integer beyond 64 bits as a float; the record keeps the exact
# digits, and every reader (show without --full, serve, replay, diff) must too.

U64 = 2**64 + 1          # beyond unsigned 64 bits
I64 = -(2**63) - 1       # below signed 64 bits


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    tools = {"tools": [{"name": "count", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]}
    return record(tmp_path / "wide.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'),
        s2c(b'{"jsonrpc":"2.0","id":2,"result":%s}\n' % json.dumps(tools).encode()),
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count","arguments":{"n":%d}}}\n' % (U64, I64)),
        s2c(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"n":%d,"m":%d}}}\n' % (U64, U64, I64)),
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % I64), s2c(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % I64),
        c2s(b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}\n'), s2c(b'{"jsonrpc":"2.0","id":1e400,"result":{}}\n'),
        ("exit", 0)])


@pytest.mark.parametrize("full", [[], ["--full"]])
def test_show_reads_recorded_ids_exactly(wide: Path, full: list[str]) -> None:
    r = CliRunner().invoke(mcptap, ["show", str(wide), "--no-summary", *full], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count(f"id={U64}") == 2 and r.stdout.count(f"id={I64}") == 2
    assert "e+19" not in r.stdout and "e+18" not in r.stdout
    j = CliRunner().invoke(mcptap, ["show", str(wide), "--format", "json", *full], catch_exceptions=False)
    ids = [rec.get("id") for rec in map(json.loads, j.stdout.splitlines()) if rec.get("type") == "message"]
    assert ids.count(U64) == 2 and ids.count(I64) == 2 and not any(type(i) is float for i in ids)


@pytest.mark.parametrize("expr", [f"~id {U64}", f"~id {I64}", f"~j params.arguments.n={I64}", f"~j result.structuredContent.n={U64}"])
def test_filters_match_big_integers_without_full(wide: Path, expr: str) -> None:
    r = CliRunner().invoke(mcptap, ["show", str(wide), "--oneline", "--no-summary", "-f", expr], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.split()[0].isdigit()]
    assert len(rows) == (2 if expr.startswith("~id") else 1), r.stdout


def test_replay_plan_keeps_big_integers_exact(wide: Path) -> None:
    from mcptap.replay.plan import plan_from_path

    plan = plan_from_path(str(wide))
    call = next(s for s in plan.steps if s.method == "tools/call")
    assert call.orig_id == U64 and type(call.orig_id) is int
    assert call.params["arguments"]["n"] == I64 and type(call.params["arguments"]["n"]) is int
    assert call.response["result"]["structuredContent"] == {"n": U64, "m": I64}


EXACT_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m:
        continue
    r = {}
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "count", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]}
    elif m["method"] == "tools/call":
        r = {"content": [], "structuredContent": {"n": U64, "m": I64}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n"); sys.stdout.flush()
""".replace("U64", str(U64)).replace("I64", str(I64))


def test_replay_against_a_server_answering_the_same_big_integers_matches(wide: Path, tmp_path: Path) -> None:
    """The recorded answer (raw record, integers beyond 64 bits) compares equal
    to the live one: it used to be read back as floats and reported changed."""
    import sys
    r = CliRunner().invoke(mcptap, ["replay", str(wide), "-o", str(tmp_path / "n.jsonl"), "--format", "json", "--",
                                    sys.executable, "-c", EXACT_SERVER], catch_exceptions=False)
    rep = json.loads(r.stdout)
    call = next(e for e in rep["exchanges"] if "tools/call" in e["label"])
    assert call["status"] == "MATCH", call


def test_serve_answers_with_the_recorded_big_integers(wide: Path, tmp_path: Path) -> None:
    import subprocess
    import sys
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                        "clientInfo": {"name": "x", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    stdin = b"".join(json.dumps(v).encode() + b"\n" for v in lines)
    stdin += b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count","arguments":{"n":%d}}}\n' % (U64 + 1, I64)
    stdin += b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % I64
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "serve", str(wide), "-o", str(tmp_path / "own.jsonl")],
                          input=stdin, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    call = next(o for o in out if o.get("id") == U64 + 1)
    assert call["result"]["structuredContent"] == {"n": U64, "m": I64}
    assert any(o.get("id") == I64 and o.get("result") == {} for o in out)
    assert b"e+19" not in proc.stdout


def test_diff_sees_big_integers_that_differ_by_one(tmp_path: Path) -> None:
    """2**64+1 and 2**64+2 are the same double: read as floats, the two
    captures compared equal."""
    caps = []
    for n in (U64, U64 + 1):
        caps.append(record(tmp_path / f"d{n}.jsonl", handshake() + [
            c2s(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}}\n'),
            s2c(b'{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"n":%d}}}\n' % n), ("exit", 0)]))
    r = CliRunner().invoke(mcptap, ["diff", str(caps[0]), str(caps[1]), "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 1, r.stdout
    assert str(U64 + 1) in r.stdout


def test_html_report_rows_carry_big_ids_as_exact_text(wide: Path) -> None:
    """The report's browser filter reads ids through JSON.parse (doubles):
    an id beyond 2^53 is embedded as its decimal text, so `~id 18446744073709551617`
    matches in the browser as it does in show."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.check.reannotated import Reannotated
    from mcptap.show.html import report_data

    stream = CaptureStream(str(wide))
    data = report_data(stream.header, Reannotated(stream.header, iter(stream), str(wide), lambda: stream.truncated))
    ids = [row[6] for row in data["rows"] if row[7]]
    assert str(U64) in ids and str(I64) in ids and 2 in ids


def test_end_record_keeps_pending_ids_beyond_64_bits_and_beyond_doubles(tmp_path: Path) -> None:
    """Requests left unanswered with ids 2**80+1 and 1e400 (read as infinity):
    the end record is written (pending ids exact, the non-finite one as null)
    instead of a gap record that makes the capture look cut short."""
    cap = record(tmp_path / "pending.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % BIG),
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % I64),
        c2s(b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}\n'),
        ("exit", 0)])
    last = json.loads(cap.read_bytes().splitlines()[-1])
    assert last["type"] == "end"
    assert sorted((p["id"] is None, p["id"]) for p in last["pending"]) == [(False, I64), (False, BIG), (True, None)]
    assert [p.get("id_text") for p in last["pending"]] == [None, None, "1e400"]
    r = CliRunner().invoke(mcptap, ["check", str(cap), "--format", "json"], catch_exceptions=False)
    assert "capture.incomplete" not in r.stdout and "unencodable" not in r.stdout
    shown = CliRunner().invoke(mcptap, ["show", str(cap)], catch_exceptions=False).stdout
    pending = shown[shown.index("pending at end"):]
    assert "ping id=1e400 from the client" in pending and "id=null" not in pending, pending


def _floats(value: object) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


@pytest.mark.parametrize("full", [[], ["--full"]])
def test_findings_name_pending_ids_beyond_64_bits_exactly(tmp_path: Path, full: list[str]) -> None:
    """The server's stdout closes with requests 2**64+1 and -2**63-1 unanswered:
    the eof record's finding names them in ``data.pending``; read back (the
    recorded annotations reused or re-annotated), every reader keeps the ids
    exact instead of orjson's floats."""
    cap = record(tmp_path / "eof.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % U64),
        c2s(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % I64),
        ("eof", "s2c"), ("exit", 0)])
    recs = list(CaptureStream(str(cap)))
    eof = [r for r in recs if r["type"] == "eof"]
    assert [sorted(p["id"] for p in f["data"]["pending"]) for r in eof for f in r["findings"] if "pending" in f.get("data", {})] == [[I64, U64]]
    assert not _floats(recs)
    followed = list(Follower(str(cap)))
    assert not _floats(followed) and any(r.get("type") == "eof" for r in followed)
    j = CliRunner().invoke(mcptap, ["show", str(cap), "--format", "json", *full], catch_exceptions=False)
    assert j.exit_code == 0, j.stderr
    out = [json.loads(x) for x in j.stdout.splitlines()]
    assert not _floats(out)
    assert str(U64) in j.stdout and str(I64) in j.stdout


def test_export_messages_keeps_big_integers_inside_the_payload(wide: Path) -> None:
    """``export -f messages``: a record kept as raw bytes (it holds a big
    integer) is exported with its payload parsed exactly, not with orjson's
    floats (``"id":1.8446744073709552e+19`` inside ``json``)."""
    r = CliRunner().invoke(mcptap, ["export", str(wide), "-f", "messages"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert not _floats(out)
    ids = [m["json"].get("id") for m in out if isinstance(m.get("json"), dict)]
    assert ids.count(U64) == 2 and ids.count(I64) == 2
    structured = [m["json"]["result"]["structuredContent"] for m in out if "structuredContent" in str(m.get("json"))]
    assert structured == [{"n": U64, "m": I64}]


ONE_LINE_SERVER = r"""
import sys
for line in sys.stdin:
    if '"initialize"' in line:
        sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
                         '"serverInfo":{"name":"s","version":"1"}}}\n')
    elif '"tools/list"' in line:
        sys.stdout.write('{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n')
    elif '"tools/call"' in line:
        sys.stdout.write('{"jsonrpc":"2.0","id":1e400,"result":{"content":[]}}\n')
    sys.stdout.flush()
"""


def test_dumps_writes_a_fragment_beside_a_big_integer_verbatim() -> None:
    """replay's 1e400 id is an orjson.Fragment: orjson refuses the big integer
    beside it and the stdlib the fragment (TypeError); both are written exactly."""
    import orjson
    value = {"id": orjson.Fragment(b"1e400"), "params": {"n": BIG, "m": [orjson.Fragment(b"-1e400"), float("inf")]}}
    assert dumps(value) == b'{"id":1e400,"params":{"n":%d,"m":[-1e400,null]}}' % BIG
    assert dumps(value, indent=True, newline=True) == b'{"id":1e400,"params":{"n":%d,"m":[-1e400,null]}}\n' % BIG
    with pytest.raises(TypeError):
        dumps({"id": orjson.Fragment(b"1"), "n": BIG, "x": object()})


def test_replay_sends_a_1e400_id_beside_a_big_integer_byte_exact(tmp_path: Path) -> None:
    """A recorded request whose id is 1e400 (kept verbatim on replay) and whose
    params hold an integer beyond 64 bits: the runner's stdio link used to end
    in ``TypeError: Object of type Fragment is not JSON serializable``; it is
    now sent as the recorded bytes."""
    import sys
    tools = {"tools": [{"name": "count", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]}
    call = b'{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"count","arguments":{"n":%d}}}\n' % BIG
    cap = record(tmp_path / "c.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'),
        s2c(b'{"jsonrpc":"2.0","id":2,"result":%s}\n' % json.dumps(tools).encode()),
        c2s(call), s2c(b'{"jsonrpc":"2.0","id":1e400,"result":{"content":[]}}\n'), ("exit", 0)])
    out = tmp_path / "new.jsonl"
    r = CliRunner().invoke(mcptap, ["replay", str(cap), "-o", str(out), "--format", "json", "--",
                                    sys.executable, "-c", ONE_LINE_SERVER], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.stderr
    row = next(e for e in json.loads(r.stdout)["exchanges"] if e["label"] == "tools/call count")
    assert row["status"] == "MATCH", row
    sent = [rec["raw"] for rec in map(json.loads, out.read_text().splitlines())
            if rec.get("type") == "message" and rec.get("dir") == "c2s" and rec.get("method") == "tools/call"]
    assert sent == [call.decode()]
