"""Cross-message conventions: error codes per revision, 2025-11-25 task-bound
progress tokens (pure). Pagination cursors live in ``contracts.py``.

Sources: ``mcp-methods.json`` ``error_codes`` (which revision defines which
MCP error code); 2025-11-25
basic/utilities/tasks and progress (a task-augmented request's progress token
stays valid until the task is terminal).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from mcptap.model import Finding, Severity
from mcptap.protocol.codes import finding
from mcptap.protocol.rules import methods_table, normalize_revision

TERMINAL_TASK_STATES = frozenset({"completed", "failed", "cancelled"})


@lru_cache(maxsize=1)
def _error_codes() -> dict[int, tuple[str, frozenset[str]]]:
    data = methods_table()
    out: dict[int, tuple[str, frozenset[str]]] = {}
    for e in data["error_codes"]:
        if "example" in e["name"]:
            continue
        revs = (normalize_revision(v) for v in e["versions"])
        out[e["code"]] = (e["name"], frozenset(r for r in revs if r is not None))
    return out


def error_code(code: Any, revision: str | None) -> list[Finding]:
    """An MCP-defined error code used under a revision that does not define it
    (e.g. -32042 before 2025-11-25, -32021 on a legacy session, -32002 on
    2026-07-28 where resource-not-found is -32602)."""
    rev = normalize_revision(revision)
    if rev is None or not isinstance(code, int):
        return []
    known = _error_codes().get(code)
    if known is None or rev in known[1]:
        return []
    name, versions = known
    if code == -32002:
        return [finding("jsonrpc.error_code_not_in_revision",
                        f"-32002 ({name}) on {rev}: resource not found is -32602 there (clients SHOULD still accept -32002)",
                        {"code": code}, severity=Severity.INFO)]
    return [finding("jsonrpc.error_code_not_in_revision", f"error code {code} ({name}) is defined only in {', '.join(sorted(versions))}, not in {rev}",
                    {"code": code})]


def task_id_of(result: Any) -> str | None:
    """taskId of a 2025-11-25 CreateTaskResult (``{"task": {"taskId": …}}``)."""
    if isinstance(result, dict) and isinstance(result.get("task"), dict):
        tid = result["task"].get("taskId")
        return tid if isinstance(tid, str) else None
    return None
