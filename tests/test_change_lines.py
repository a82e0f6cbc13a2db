"""``replay`` and ``diff`` render the same change the same way: one
renderer (compare.verdict.describe_verdict) writes the line both print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcptap.compare.paths import PathChange
from mcptap.compare.verdict import CHANGED, ERROR_CHANGED, MISSING, NEW, Verdict, compare_responses, describe_verdict
from scripted import c2s, handshake, record, req, res, s2c

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]

#: answers initialize; every tools/call gets error -32601 (a tool that became a failure) except
#: "calc", whose result changes value
SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}
    elif m["params"]["name"] == "calc":
        out = {"result": {"content": [{"type": "text", "text": "5"}]}}
    else:
        out = {"error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], **out}) + "\\n")
    sys.stdout.flush()
"""


def _call(i: int, name: str) -> bytes:
    return req(i, "tools/call", {"name": name, "arguments": {}})


def test_replay_and_diff_print_the_same_line_for_the_same_change(tmp_path: Path) -> None:
    original = record(tmp_path / "a.jsonl", [
        *handshake(),
        c2s(_call(2, "echo")), s2c(res(2, {"content": [{"type": "text", "text": "hi"}]})),
        c2s(_call(3, "calc")), s2c(res(3, {"content": [{"type": "text", "text": "4"}]})),
    ])
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    replayed = tmp_path / "b.jsonl"
    rp = subprocess.run([*MCPTAP, "replay", str(original), "--allow-side-effects", "--no-color", "-o", str(replayed), "--",
                         sys.executable, str(server)], capture_output=True, text=True, timeout=120)
    assert rp.returncode == 1, rp.stdout + rp.stderr
    df = subprocess.run([*MCPTAP, "diff", "--no-color", str(original), str(replayed)], capture_output=True, text=True, timeout=120)
    assert df.returncode == 1, df.stdout + df.stderr
    error_line = "result -> error -32601 'Method not found'"
    value_line = "result.content[0].text: '4' -> '5'"
    for expected, status in ((error_line, "ERROR-CHANGED"), (value_line, "CHANGED")):
        replay_rows = [ln for ln in rp.stdout.splitlines() if expected in ln]
        diff_rows = [ln for ln in df.stdout.splitlines() if expected in ln]
        assert len(replay_rows) == 1 and status in replay_rows[0], rp.stdout
        assert len(diff_rows) == 1, df.stdout
        # the same rendering ends both lines
        assert replay_rows[0].endswith(expected) and diff_rows[0].endswith(expected), (replay_rows, diff_rows)


def test_describe_verdict_lines() -> None:
    ok = {"jsonrpc": "2.0", "id": 1, "result": {"x": 1}}
    bad = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad\nparams"}}
    assert describe_verdict(compare_responses(ok, bad)) == "result -> error -32602 'bad\\nparams'"
    assert describe_verdict(compare_responses(bad, ok)) == "error -32602 'bad\\nparams' -> result"
    other = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}
    assert describe_verdict(compare_responses(bad, other)) == "error -32602 'bad\\nparams' -> error -32603 'x'"
    assert describe_verdict(compare_responses(ok, {"jsonrpc": "2.0", "id": 1, "result": {"x": 2, "y": 3}})) == "result.x: 1 -> 2, +result.y: 3"
    many = Verdict(CHANGED, [PathChange(f"result.k{i}", "removed", i, None) for i in range(6)])
    assert describe_verdict(many) == "-result.k0: 0, -result.k1: 1, -result.k2: 2, -result.k3: 3 …"
    assert describe_verdict(Verdict(MISSING)) == "no answer in B" and describe_verdict(Verdict(NEW)) == "no answer in A"
    assert describe_verdict(Verdict(ERROR_CHANGED, [PathChange("$", "changed", {"result": {}}, {"none": None})])) == \
        "result -> neither result nor error"
