"""JSON-in-text compares as the JSON it holds (docs/replay-diff.md): a tool's
text result whose only difference is object key order (or spacing) is the same
answer for replay and diff; arrays keep their order, and text that is not JSON
compares exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from mcptap.compare.mask import Masker
from mcptap.compare.paths import json_diff, same
from mcptap.compare.verdict import CHANGED, MATCH, compare_responses
from mcptap.diff.captures import DETAIL_LIMIT, diff_captures
from tests.replay.capgen import Ex, text_result, write_capture

ROOT = Path(__file__).resolve().parents[1]
AB = json.dumps({"version": "1.0", "name": "x", "env": {"A": "1", "B": "2"}}, indent=2)
BA = json.dumps({"env": {"B": "2", "A": "1"}, "name": "x", "version": "1.0"})


def _resp(text: str) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "result": text_result(text)}


def test_key_order_and_spacing_inside_json_text_are_no_difference() -> None:
    assert compare_responses(_resp(AB), _resp(BA)).status == MATCH
    assert same(AB, BA) and json_diff(text_result(AB), text_result(BA)) == []
    assert Masker().fingerprint(text_result(AB)) == Masker().fingerprint(text_result(BA))


def test_json_text_still_differs_by_value_and_array_order() -> None:
    v = compare_responses(_resp(AB), _resp(BA.replace('"1.0"', '"2.0"')))
    assert v.status == CHANGED and [p.path for p in v.paths] == ["result.content[0].text(json).version"]
    assert compare_responses(_resp("[1, 2]"), _resp("[2, 1]")).status == CHANGED
    assert compare_responses(_resp('{"a": true}'), _resp('{"a": 1}')).status == CHANGED


def test_text_that_is_not_json_compares_exactly() -> None:
    assert compare_responses(_resp("a  b"), _resp("a b")).status == CHANGED
    assert compare_responses(_resp('{"a": 1} and more'), _resp('{"a":1} and more')).status == CHANGED
    assert compare_responses(_resp('"quoted"'), _resp(' "quoted"')).status == CHANGED   # a JSON scalar is text


def test_diff_counts_key_order_as_match_beyond_the_detail_limit(tmp_path: Path) -> None:
    # more exchanges than diff re-reads in full: the counts rest on the summaries' hashes alone
    n = DETAIL_LIMIT + 50
    pa, pb = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    write_capture(pa, [Ex("tools/call", {"name": "add", "arguments": {"a": i, "b": 0}}, text_result(AB)) for i in range(n)])
    write_capture(pb, [Ex("tools/call", {"name": "add", "arguments": {"a": i, "b": 0}}, text_result(BA)) for i in range(n)])
    report = diff_captures(pa, pb)
    # every call, and initialize and tools/list
    assert report.counts["CHANGED"] == 0 and report.counts["MATCH"] == n + 2, report.counts
    assert [i for i in report.items if i.section == "exchanges"] == []


SERVER = r'''
import json, sys
order = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "jt", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "info", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]}
    else:
        d = {"version": "1.0", "name": "x"} if order == "ab" else {"name": "x", "version": "1.0"}
        r = {"content": [{"type": "text", "text": json.dumps(d, indent=2 if order == "ab" else None)}]}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
'''


def test_replay_of_a_server_answering_json_text_in_another_key_order_matches(tmp_path: Path) -> None:
    server = tmp_path / "jt.py"
    server.write_text(SERVER)
    cli = [sys.executable, "-m", "mcptap.cli.main"]
    cap = str(tmp_path / "a.jsonl")
    ask = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
           b'"clientInfo":{"name":"t","version":"0"}}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
           b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
           b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"info","arguments":{}}}\n')
    rec = subprocess.run([*cli, "record", "-q", "-o", cap, "--", sys.executable, str(server), "ab"],
                         cwd=ROOT, input=ask, capture_output=True, timeout=60)
    assert rec.returncode == 0 and b'\\"version\\": \\"1.0\\"' in Path(cap).read_bytes(), rec.stderr.decode()
    out = subprocess.run([*cli, "replay", cap, "--format", "json", "--allow-side-effects", "--timeout", "20", "-o", str(tmp_path / "b.jsonl"),
                          "--", sys.executable, str(server), "ba"], cwd=ROOT, capture_output=True, timeout=60)
    doc = orjson.loads(out.stdout)
    assert out.returncode == 0, (out.stdout.decode(), out.stderr.decode())
    assert doc["counts"]["CHANGED"] == 0 and doc["counts"]["MATCH"] == 3, doc
