"""JSON-RPC ids are compared and echoed by their exact value as sent. A
string id may hold a lone UTF-16 surrogate escape (``"\\ud800"``: valid JSON
grammar, RFC 8259 §8.2); the tap reads the rest of such a payload with
U+FFFD (tests/protocol/test_lone_surrogate.py) but an id keeps its
surrogate: ``"\\ud800"``, ``"\\udfff"`` and a real U+FFFD are three ids. They
were all read as U+FFFD: a false jsonrpc.duplicate_id_in_flight, an answer
to another request paired, and ``serve`` answering ``"\\ud800"`` with U+FFFD.
Numbers keep mcptap's decision: ``1`` and ``1.0`` are one id
(``protocol.jsonrpc.id_key``); ``1`` and ``"1"`` are two."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcptap.capture.dumps import dumps
from mcptap.capture.reader import read_capture
from mcptap.check.report import check_capture
from mcptap.cli.main import mcptap
from mcptap.protocol.jsonparse import LONE_SURROGATE, parse_json_full
from mcptap.protocol.jsonrpc import show_id
from scripted import c2s, handshake, record, s2c

LONE = ["\ud800", "\udfff", "a\udc00b", "\ud83d"]


def _line(obj: dict[str, Any]) -> bytes:
    """``obj`` as the JSON line a JavaScript peer writes: lone surrogates as escapes."""
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _req(i: Any, method: str = "ping") -> bytes:
    return _line({"jsonrpc": "2.0", "id": i, "method": method})


def _res(i: Any, result: Any = None) -> bytes:
    return _line({"jsonrpc": "2.0", "id": i, "result": {} if result is None else result})


def test_an_id_keeps_its_lone_surrogate_the_rest_reads_as_replacement() -> None:
    raw = b'{"jsonrpc":"2.0","id":"r-\\ud800","method":"ping","params":{"t":"\\udfff"}}'
    value, _, odd = parse_json_full(raw)
    assert odd == LONE_SURROGATE
    assert value["id"] == "r-\ud800" and value["params"]["t"] == "\ufffd"
    batch, _, odd = parse_json_full(b'[{"jsonrpc":"2.0","id":"\\udfff","method":"ping"},{"id":"\\ufffd","result":{}}]')
    assert odd == LONE_SURROGATE and [m["id"] for m in batch] == ["\udfff", "\ufffd"]
    # written back as the escape, never as U+FFFD; shown as the escape
    assert dumps(value).startswith(b'{"jsonrpc":"2.0","id":"r-\\ud800"') and json.loads(dumps(value))["id"] == "r-\ud800"
    assert json.loads(dumps(value, indent=True))["id"] == "r-\ud800"
    assert show_id("r-\ud800") == '"r-\\ud800"'


def _cap(tmp: Path, name: str, steps: list[tuple[str, Any]]) -> Path:
    return record(tmp / name, handshake(server_caps={}) + steps + [("exit", 0)])


def _messages(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_capture(str(path)).records if r["type"] == "message"]


def _codes(recs: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for r in recs for f in r.get("findings", ()) if f["code"] != "jsonrpc.lone_surrogate"]


def test_distinct_lone_surrogate_ids_pair_exactly(tmp_path: Path) -> None:
    """The breaker's case: requests "\\ud800", "\\udfff", "x"; a real U+FFFD answer
    is unmatched, each other answer pairs with its own request."""
    path = _cap(tmp_path, "sur.jsonl", [c2s(_req("\ud800")), c2s(_req("\udfff")), c2s(_req("x")),
                                        s2c(_res("\ufffd")), s2c(_res("\udfff", {"n": 2})), s2c(_res("x")), s2c(_res("\ud800", {"n": 1}))])
    recs = _messages(path)[3:]
    seq = {r["seq"]: r for r in recs}
    assert _codes(recs) == ["jsonrpc.unmatched_response"]
    unmatched, r2, rx, r1 = recs[3:]
    assert "pair" not in unmatched and _codes([unmatched]) == ["jsonrpc.unmatched_response"]
    assert seq[r1["pair"]]["raw"] == _req("\ud800").decode() and seq[r2["pair"]]["raw"] == _req("\udfff").decode()
    assert seq[rx["pair"]]["id"] == "x"
    # typed readers get the exact ids back (the record's own "id" field holds U+FFFD: orjson reads no surrogate)
    ids = [m.id for m in read_capture(str(path)).messages()][3:]
    assert ids == ["\ud800", "\udfff", "x", "\ufffd", "\udfff", "x", "\ud800"]
    # check (recorded annotations) and check --full (re-annotated) agree
    groups = [{c: g.count for c, g in check_capture(str(path), reuse=reuse).groups.items()} for reuse in (True, False)]
    assert groups[0] == groups[1] and "jsonrpc.duplicate_id_in_flight" not in groups[0] and groups[0]["jsonrpc.unmatched_response"] == 1
    for full in ([], ["--full"]):
        out = CliRunner().invoke(mcptap, ["show", "--no-color", "--no-summary", str(path), *full], catch_exceptions=False).stdout
        assert 'ping id="\\ud800"' in out and 'ping id="\\udfff"' in out and "duplicate_id" not in out
        assert out.count("unmatched_response") == 2         # the mark and the finding line of the U+FFFD answer


#: ids that a lossy reading conflates: lone surrogates and U+FFFD, numbers beyond 64 bits or a double's precision
_TRICKY = st.sampled_from(["\ud800", "\udfff", "\ufffd", "a\udc00b", "a\ufffdb", "\ud83d\ude00", "\\ud800", 1, 1.0, "1",
                           2**64 + 1, 2**64 + 2, float(2**64), 2**53 + 1, -(2**63) - 1])
_IDS = (_TRICKY | st.integers() | st.integers(min_value=-(2**70), max_value=2**70).map(float).filter(math.isfinite)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=4) | st.builds(lambda a, s, b: a + s + b, st.text(max_size=2), st.sampled_from(LONE + ["\ufffd", "\\u", '"']),
                                          st.text(max_size=2)))


def _same(a: Any, b: Any) -> bool:
    """Two ids are one: the same string, or numbers of one value (1 and 1.0, mcptap's id_key)."""
    return (type(a) is str) == (type(b) is str) and a == b


@settings(max_examples=80, deadline=None)
@given(a=_IDS, b=_IDS, answer=st.integers(0, 2), other=_IDS)
def test_a_response_pairs_exactly_with_the_request_of_its_id(a: Any, b: Any, answer: int, other: Any) -> None:
    """For any two request ids and an answer carrying one of them (or another
    id): no false duplicate, and the answer pairs with the request of the
    identical id, or with none."""
    rid = (a, b, other)[answer]
    # the handshake's initialize took id 1: an answer to it now is for a completed id, not unmatched
    assume(not _same(rid, 1) or _same(rid, a) or _same(rid, b))
    with tempfile.TemporaryDirectory() as tmp:
        path = _cap(Path(tmp), "p.jsonl", [c2s(_req(a)), c2s(_req(b)), s2c(_res(rid))])
        recs = _messages(path)[3:]
        codes = _codes(recs)
        assert ("jsonrpc.duplicate_id_in_flight" in codes) == _same(a, b)
        # (a duplicate leaves the id to the first request)
        want = None if not (_same(rid, a) or _same(rid, b)) else recs[0]["seq"] if _same(rid, a) else recs[1]["seq"]
        assert recs[2].get("pair") == want, (a, b, rid, recs[2])
        assert ("jsonrpc.unmatched_response" in codes) == (want is None)


SERVE_IN = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": "\ud800", "method": "ping"},
            {"jsonrpc": "2.0", "id": "\udfff", "method": "ping"}, {"jsonrpc": "2.0", "id": "\ufffd", "method": "ping"}]


def test_serve_echoes_the_clients_id_exactly(tmp_path: Path) -> None:
    path = _cap(tmp_path, "s.jsonl", [c2s(_req("\ud800")), s2c(_res("\ud800"))])
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "serve", "-q", str(path)],
                          input=b"".join(_line(v) for v in SERVE_IN), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b'"id":"\\ud800","result":{}' in proc.stdout and b'"id":"\\udfff","result":{}' in proc.stdout
    assert [json.loads(x)["id"] for x in proc.stdout.splitlines()] == [0, "\ud800", "\udfff", "\ufffd"]


ECHO = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        r = {"n": m["id"]}
        if m["method"] == "initialize":
            r = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n"); sys.stdout.flush()
"""


def test_replay_and_diff_agree_on_lone_surrogate_ids(tmp_path: Path) -> None:
    """Replay sends each id as recorded and matches each live answer to its
    own request; diff of the recording and the replay's capture finds nothing."""
    path = _cap(tmp_path, "r.jsonl", [c2s(_req("\ud800")), c2s(_req("\udfff")), s2c(_res("\udfff", {"n": "\udfff"})),
                                      s2c(_res("\ud800", {"n": "\ud800"}))])
    new = tmp_path / "new.jsonl"
    r = CliRunner().invoke(mcptap, ["replay", str(path), "-o", str(new), "--format", "json", "--", sys.executable, "-c", ECHO],
                           catch_exceptions=False)
    rep = json.loads(r.stdout)
    pings = [e for e in rep["exchanges"] if "ping" in e["label"]]
    assert len(pings) == 2 and all(e["status"] == "MATCH" for e in pings), rep["exchanges"]
    sent = [m for m in _messages(new) if m["dir"] == "c2s" and m.get("method") == "ping"]
    assert [m["raw"] for m in sent] == [_req("\ud800").decode(), _req("\udfff").decode()]
    assert "jsonrpc.duplicate_id_in_flight" not in _codes(_messages(new))
    d = CliRunner().invoke(mcptap, ["diff", str(path), str(new)], catch_exceptions=False)
    assert d.exit_code == 0, d.stdout


def _note(method: str, params: dict[str, Any]) -> bytes:
    return _line({"jsonrpc": "2.0", "method": method, "params": params})


def test_cancels_and_progress_name_requests_and_tokens_exactly(tmp_path: Path) -> None:
    """A cancel's requestId and a progress token are compared as sent too: a
    cancel of "\\udfff" names no request when only "\\ud800" is open, a cancel of
    "\\ud800" names it; so for progress tokens."""
    call = {"jsonrpc": "2.0", "id": "\ud800", "method": "tools/call", "params": {"name": "t", "arguments": {}, "_meta": {"progressToken": "\udc00"}}}
    path = _cap(tmp_path, "c.jsonl", [
        c2s(_line(call)),
        s2c(_note("notifications/progress", {"progressToken": "\udbff", "progress": 1})),
        s2c(_note("notifications/progress", {"progressToken": "\udc00", "progress": 2})),
        c2s(_note("notifications/cancelled", {"requestId": "\udfff"})),
        c2s(_note("notifications/cancelled", {"requestId": "\ud800", "reason": "stop \udfff"})),
    ])
    recs = _messages(path)[3:]
    call_seq = recs[0]["seq"]
    assert [r.get("link") for r in recs[1:]] == [None, call_seq, None, call_seq]
    assert [_codes([r]) for r in recs[1:]] == [["progress.unknown_token"], [], ["cancel.unknown_request"], ["cancel.request"]]
    groups = [{c: g.count for c, g in check_capture(str(path), reuse=reuse).groups.items()} for reuse in (True, False)]
    assert groups[0] == groups[1]
    for argv in (["show", "--no-color", "--full"], ["check", "--full"]):
        r = CliRunner().invoke(mcptap, [argv[0], str(path), *argv[1:]], catch_exceptions=False)
        assert r.exit_code in (0, 1) and "Traceback" not in r.output
