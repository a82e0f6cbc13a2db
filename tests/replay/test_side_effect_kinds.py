"""Every message that would call a tool goes through replay's side-effect
policy, whatever its shape: a batch member (the batch is sent without it, or
not at all when nothing is left), a call without an id, in any revision
(2026-07-28 included). Against a real server process that logs every line it
reads: the destructive call never reaches it unless --allow-side-effects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcptap.replay.plan import plan_from_path
from scripted import META, c2s, handshake, j, note, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]

#: answers every request, alone or in a batch (an array of answers); logs each line it reads
LOGGING_SERVER = """
import json, sys
log = open(sys.argv[1], "a")
def answer(m):
    if m.get("method") == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    elif m.get("method") == "tools/list":
        r = {"tools": TOOLS}
    else:
        r = {"content": []}
    return {"jsonrpc": "2.0", "id": m["id"], "result": r}
TOOLS = %s
for line in sys.stdin:
    log.write(line); log.flush()
    m = json.loads(line)
    if isinstance(m, list):
        out = [answer(x) for x in m if isinstance(x, dict) and "id" in x and "method" in x]
        if out:
            print(json.dumps(out), flush=True)
    elif "id" in m and "method" in m:
        print(json.dumps(answer(m)), flush=True)
"""

TOOLS = [{"name": "rm", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}},
         {"name": "ls", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]
LS = {"name": "ls", "arguments": {}}
RM = {"name": "rm", "arguments": {"path": "/"}}


def call(i: Any, params: dict[str, Any], **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": "tools/call", "params": {**params, **extra}}
    return m if i is None else {**m, "id": i}


def _legacy(*steps: tuple[str, Any]) -> list[tuple[str, Any]]:
    return handshake("2025-03-26") + [c2s(req(2, "tools/list")), s2c(res(2, {"tools": TOOLS})), *steps]


def _modern(*steps: tuple[str, Any]) -> list[tuple[str, Any]]:
    return [c2s(req(1, "tools/list", {"_meta": META})), s2c(res(1, {"tools": TOOLS, "resultType": "complete"})), *steps]


def _replay(tmp_path: Path, steps: list[tuple[str, Any]], *extra: str) -> tuple[dict[str, Any], str]:
    """The JSON report of replaying ``steps`` against the logging server, and every line it read."""
    cap = record(tmp_path / "cap.jsonl", [*steps, ("exit", 0)])
    (tmp_path / "srv.py").write_text(LOGGING_SERVER % repr(TOOLS))
    log = tmp_path / "srv.log"
    log.unlink(missing_ok=True)
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", str(cap), "--timeout", "10", "--format", "json",
                        "-o", str(tmp_path / "new.jsonl"), *extra, "--", sys.executable, "srv.py", str(log)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout), log.read_text()


def _rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["label"], r["status"]) for r in report["exchanges"]]


def test_a_destructive_call_in_a_batch_is_not_sent_and_is_reported_skipped(tmp_path: Path) -> None:
    steps = _legacy(c2s(j([call(3, LS), call(4, RM)])), s2c(j([{"jsonrpc": "2.0", "id": 3, "result": {"content": []}},
                                                              {"jsonrpc": "2.0", "id": 4, "result": {"content": []}}])))
    report, log = _replay(tmp_path, steps)
    assert '"rm"' not in log, log
    assert '"ls"' in log                                     # the rest of the batch is sent, still as a batch
    assert json.loads(log.splitlines()[-1]) == [call(3, LS)]
    assert _rows(report)[-2:] == [("batch tools/call", "MATCH"), ("batch tools/call", "SKIPPED")], report
    assert "'rm' is not declared read-only" in report["exchanges"][-1]["note"]
    report, log = _replay(tmp_path, steps, "--allow-side-effects")
    assert '"rm"' in log and _rows(report)[-1] == ("batch tools/call", "MATCH")


def test_a_batch_of_only_destructive_calls_is_not_sent(tmp_path: Path) -> None:
    report, log = _replay(tmp_path, _legacy(c2s(j([call(4, RM), call(None, RM)])),
                                            s2c(j([{"jsonrpc": "2.0", "id": 4, "result": {"content": []}}]))))
    assert '"rm"' not in log and not log.splitlines()[-1].startswith("["), log
    # each member is a row of its own: the one without an id too
    assert _rows(report)[-2:] == [("batch tools/call", "SKIPPED")] * 2, report


def test_a_destructive_call_without_an_id_is_not_sent(tmp_path: Path) -> None:
    report, log = _replay(tmp_path, _legacy(c2s(j(call(None, RM))), c2s(req(5, "ping")), s2c(res(5))))
    assert '"rm"' not in log and '"ping"' in log, log
    assert ("tools/call rm", "SKIPPED") in _rows(report), report


def test_modern_era_calls_of_every_shape_go_through_the_policy(tmp_path: Path) -> None:
    steps = _modern(c2s(j(call(None, RM, _meta=META))),
                    c2s(j([call(3, LS, _meta=META), call(4, RM, _meta=META)])),
                    s2c(j([{"jsonrpc": "2.0", "id": 3, "result": {"content": [], "resultType": "complete"}}])),
                    c2s(j(call(5, RM, _meta=META))), s2c(res(5, {"content": [], "resultType": "complete"})))
    plan = plan_from_path(str(record(tmp_path / "plan.jsonl", steps)))
    assert plan.revision == "2026-07-28"
    skips = [(s.label, s.skip is not None, s.dropped) for s in plan.steps[1:]]
    assert [(lab, skipped) for lab, skipped, _ in skips] == [("tools/call rm", True), ("batch", False), ("tools/call rm", True)]
    assert list(skips[1][2] or ()) == [1]                   # the batch goes without its member 1
    report, log = _replay(tmp_path, steps)
    assert '"rm"' not in log and '"ls"' in log, log
    assert [r for r in _rows(report) if r[1] == "SKIPPED"] == [("tools/call rm", "SKIPPED"), ("batch tools/call", "SKIPPED"),
                                                               ("tools/call rm", "SKIPPED")], report


def test_notifications_calling_no_tool_are_untouched(tmp_path: Path) -> None:
    """A notification that calls no tool is sent and is no row, as before."""
    plan = plan_from_path(str(record(tmp_path / "c.jsonl", _legacy(c2s(note("notifications/roots/list_changed"))))))
    assert not any(s.skip or s.dropped for s in plan.steps)
