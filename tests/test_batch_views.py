"""JSON-RPC batch members count for ``show``: a filter matches a batch record
when it matches the batch or one of its members (``~tool``, ``~id``, ``~m``,
``~lat``, ``~req``…; filters/members.py), a response (plain or a member) to a
member request gets that request's context, and the summary's method and tool
tables count every member as a message of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.cli.show import command as show
from scripted import c2s, handshake, j, record, req, res, s2c


def batch(*items: bytes) -> bytes:
    return j([json.loads(x) for x in items])


def capture(tmp_path: Path) -> str:
    steps = handshake("2025-03-26") + [
        c2s(batch(req(2, "tools/call", {"name": "echo", "arguments": {}}), req(3, "tools/list"))),     # seq 4
        s2c(batch(res(2, {"content": []}), res(3, {"tools": []}))),                                    # seq 5
        c2s(batch(req(4, "tools/call", {"name": "add", "arguments": {}}), req(5, "ping"))),            # seq 6
        s2c(res(4, {"content": []})), s2c(res(5)),                                                    # seq 7, 8: plain answers to members
        c2s(req(6, "ping")), s2c(batch(res(6))),                                                       # seq 9, 10: a member answers a plain request
        ("eof", "c2s"), ("exit", 0)]
    return str(record(tmp_path / "batch.jsonl", steps))


def _show(path: str, *args: str) -> list[dict[str, Any]]:
    out = CliRunner().invoke(show, [path, "--format", "json", *args])
    assert out.exit_code == 0, out.output
    return [orjson.loads(x) for x in out.output.splitlines()]


def seqs(path: str, expr: str) -> list[int]:
    return [r["seq"] for r in _show(path, "-f", expr) if r.get("type") == "message"]


def test_filters_match_batch_members(tmp_path: Path) -> None:
    path = capture(tmp_path)
    assert seqs(path, "~tool echo") == [4, 5]           # the call inside a batch, and the member answering it
    assert seqs(path, "~tool add") == [6, 7]            # a plain response to a member call
    assert seqs(path, "~id 2") == [4, 5]
    assert seqs(path, "~id 3") == [4, 5]
    assert seqs(path, "~m tools/list") == [4, 5]
    assert seqs(path, "~m ping") == [6, 8, 9, 10]
    assert seqs(path, "~req & ~m tools/call") == [4, 6]
    assert seqs(path, "~j params.name=echo") == [4]
    assert seqs(path, "~lat >=0") == [2, 5, 7, 8, 10]       # the initialize response, then members' and plain answers
    assert seqs(path, "~batch") == [4, 5, 6, 10]
    assert seqs(path, "!~batch & ~req") == [1, 9]       # a batch's members are in a batch


def test_summary_counts_batch_members(tmp_path: Path) -> None:
    path = capture(tmp_path)
    summary = _show(path)[-1]
    methods, tools = summary["methods"], summary["tools"]
    assert {m: (s["c2s"], s["responses"]) for m, s in methods.items()} == {
        "initialize": (1, 1), "notifications/initialized": (1, 0), "tools/call": (2, 2), "tools/list": (1, 1), "ping": (2, 2)}
    assert {t: (s["calls"], s["latency"]["count"]) for t, s in tools.items()} == {"echo": (1, 1), "add": (1, 1)}
    assert summary["messages"] == {"c2s": 5, "s2c": 5}                                  # records, as before
    # filtered: the summary of what the filter shows counts the members it shows
    assert set(_show(path, "-f", "~tool echo")[-1]["tools"]) == {"echo"}
