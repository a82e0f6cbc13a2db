"""A task-augmented request is answered with a CreateTaskResult, not the method's
own result (spec/2025-11-25/basic/utilities/tasks.mdx). Seen on a real peer:
@modelcontextprotocol/server-everything 2026.8.31 (stdio, 2025-11-25) answering
the TypeScript SDK's `client.experimental.tasks.callToolStream` for its
`simulate-research-query` tool (execution.taskSupport "required") was flagged
`shape.invalid_result` ("content: Field required") before the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.check.report import check_capture
from mcptap.model import Direction, Kind, Severity
from mcptap.protocol import shapes
from scripted import c2s, handshake, note, record, req, res, s2c

C2S, S2C = Direction.C2S, Direction.S2C
TASK = {"taskId": "bee23e3a4e58dddef375a5156389cb63", "status": "working", "ttl": 300000,
        "createdAt": "2026-12-01T02:15:32.835Z", "lastUpdatedAt": "2026-12-01T02:15:32.835Z",
        "pollInterval": 1000, "statusMessage": "Gathering sources..."}
CALL = {"name": "simulate-research-query", "arguments": {"topic": "x"}, "task": {"ttl": 60000}}
SERVER_CAPS = {"tools": {"listChanged": True}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}


def test_create_task_result_answers_a_task_augmented_call() -> None:
    assert shapes.check(S2C, Kind.RESPONSE, "tools/call", {"task": TASK}, "2025-11-25", CALL) == []


def test_a_broken_create_task_result_is_still_an_error() -> None:
    broken = {k: v for k, v in TASK.items() if k != "createdAt"}
    (f,) = shapes.check(S2C, Kind.RESPONSE, "tools/call", {"task": broken}, "2025-11-25", CALL)
    assert f.code == "shape.invalid_result" and f.severity is Severity.ERROR
    assert "CreateTaskResult" in f.message and "createdAt" in f.message


@pytest.mark.parametrize("params, result, revision", [
    ({"name": "x", "arguments": {}}, {"task": TASK}, "2025-11-25"),   # not task-augmented: judged as CallToolResult
    (CALL, {"task": TASK}, "2025-06-18"),                             # no tasks in that revision
    (CALL, {"isError": False}, "2025-11-25"),                         # neither a CreateTaskResult nor a CallToolResult
])
def test_near_misses_are_judged_as_the_methods_result(params: Any, result: Any, revision: str) -> None:
    (f,) = shapes.check(S2C, Kind.RESPONSE, "tools/call", result, revision, params)
    assert f.code == "shape.invalid_result" and "content" in f.message and "CreateTaskResult" not in f.message


def test_a_receiver_without_tasks_answers_normally() -> None:
    # spec: a receiver that does not support task augmentation processes the request as usual
    assert shapes.check(S2C, Kind.RESPONSE, "tools/call", {"content": []}, "2025-11-25", CALL) == []


def test_sampling_answered_with_a_task_by_the_client() -> None:
    params = {"messages": [], "maxTokens": 10, "task": {"ttl": 1000}}
    assert shapes.check(C2S, Kind.RESPONSE, "sampling/createMessage", {"task": TASK}, "2025-11-25", params) == []


def _session(tmp_path: Path, result: Any) -> Path:
    return record(tmp_path / "cap.jsonl", handshake("2025-11-25", server_caps=SERVER_CAPS) + [
        c2s(req(19, "tools/call", CALL)),
        s2c(note("notifications/tasks/status", TASK)),
        s2c(res(19, result)),
        c2s(req(20, "tasks/get", {"taskId": TASK["taskId"]})),
        s2c(res(20, {**TASK, "status": "completed"})),
    ])


@pytest.mark.parametrize("reuse", [True, False], ids=["check", "check-full"])
def test_check_both_paths(tmp_path: Path, reuse: bool) -> None:
    rep = check_capture(str(_session(tmp_path, {"task": TASK})), reuse=reuse)
    assert rep.severities["error"] == 0 and rep.severities["warn"] == 0, rep.groups
    broken = {"task": {k: v for k, v in TASK.items() if k != "status"}}
    rep = check_capture(str(_session(tmp_path, broken)), reuse=reuse)
    assert rep.groups["shape.invalid_result"].count == 1
