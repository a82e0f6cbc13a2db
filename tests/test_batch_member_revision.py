"""A JSON-RPC batch's members may be judged under different protocol revisions:
in 2026-07-28 each request names its own in ``_meta`` (a known one, or one
mcptap does not know), and an answer takes its request's. The annotator
(``check --full``) judges each member under its own; the capture keeps it in
the member's annotation (``members[].rev``, when it is not the record's), so
the quick check (``check`` reusing the recorded annotations, batch_shapes.py)
gives the same findings instead of judging every member under the batch
record's single revision (its last member's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from scripted import c2s, j, record, s2c


def meta(rev: str) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": rev, "io.modelcontextprotocol/clientCapabilities": {}}


def capture(path: Path, second: str) -> Path:
    bad = {"arguments": 5}        # no name, arguments not an object: invalid params in every revision mcptap knows
    return record(path, [
        c2s(j({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta("2026-07-28")}})),
        s2c(j({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})),
        c2s(j([{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**bad, "_meta": meta("2026-07-28")}},
               {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {**bad, "_meta": meta(second)}}])),       # seq 3
        s2c(j([{"jsonrpc": "2.0", "id": 2, "result": {"content": 7}}, {"jsonrpc": "2.0", "id": 3, "result": {"content": 7}}])),   # seq 4
        ("eof", "c2s"), ("exit", 0)])


def findings(path: Path, *args: str) -> list[tuple[Any, ...]]:
    out = CliRunner().invoke(mcptap, ["check", "--format", "json", "--places", "50", *args, str(path)], catch_exceptions=False)
    codes = json.loads(out.output)["captures"][0]["codes"]
    return sorted((c["code"], c["count"], tuple((p["seq"], p["message"]) for p in c["first"])) for c in codes)


@pytest.mark.parametrize("second", ["2099-01-01", "2025-03-26"])
def test_the_quick_check_judges_each_member_under_its_own_revision(tmp_path: Path, second: str) -> None:
    path = capture(tmp_path / "rev.jsonl", second)
    batch = [r for r in map(orjson.loads, path.read_bytes().splitlines()) if r.get("seq") == 3][0]
    assert batch["rev"] == second and batch["members"][0]["rev"] == "2026-07-28" and "rev" not in batch["members"][1]
    full = findings(path, "--full")
    assert any(code == "shape.invalid_params" for code, *_ in full)
    assert findings(path) == full


def test_a_member_before_the_initialize_answer_in_its_batch_has_no_revision(tmp_path: Path) -> None:
    # the server answers initialize inside a batch, after a request of its own: that request was sent
    # before any revision was negotiated (rev null in its annotation), the batch record has the negotiated one
    path = record(tmp_path / "init.jsonl", [
        c2s(j({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {"sampling": {}},
                                                                             "clientInfo": {"name": "c", "version": "1"}}})),
        s2c(j([{"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {"messages": 5}},
               {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-03-26", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}])),
        c2s(j({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        ("eof", "c2s"), ("exit", 0)])
    batch = [r for r in map(orjson.loads, path.read_bytes().splitlines()) if r.get("kind") == "batch"][0]
    assert batch["rev"] == "2025-03-26" and batch["members"][0]["rev"] is None and "rev" not in batch["members"][1]
    assert findings(path) == findings(path, "--full")


def test_the_batch_finding_says_where_the_revision_came_from(tmp_path: Path) -> None:
    # 2026-07-28 negotiates nothing: the revision the batch is judged under is the one requests name in _meta
    modern = [msg for _, _, fs in findings(capture(tmp_path / "m.jsonl", "2026-07-28")) for msg in fs if "batching" in msg[1]]
    assert modern and all("negotiated" not in m and "requests name 2026-07-28 in _meta" in m for _, m in modern), modern
    legacy = record(tmp_path / "l.jsonl", [
        c2s(j({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                             "clientInfo": {"name": "c", "version": "1"}}})),
        s2c(j({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})),
        c2s(j({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        c2s(j([{"jsonrpc": "2.0", "id": 2, "method": "ping"}])), ("eof", "c2s"), ("exit", 0)])
    said = [m for _, _, fs in findings(legacy) for _, m in fs if "batching" in m]
    assert said == ["top-level JSON array of 1 messages; negotiated 2025-06-18: batching exists only in 2025-03-26"]
