"""A stdio capture holding several sessions (replay of a multi-session capture:
``replay-session-2``; ``serve --extend``: ``episode-N``): the session key is mcptap's, not an
MCP session id, so ``mcp.session.id`` stays absent on stdio (docs/export.md); and the server
process records of a later session, which carry no key, land in that session's trace (the
second session's ``mcptap process exit`` span was in the first one's)."""

from __future__ import annotations

from typing import Any

import pytest

from mcptap.export.spans import spans_of

HEADER = {"type": "header", "started": "2026-01-02T03:04:05.000006Z", "transport": "stdio", "target": {"argv": ["srv"]}}
EXIT = [{"code": "process.exit", "severity": "info", "message": "exit 0"}]


def _session(base: int, key: str | None) -> list[dict[str, Any]]:
    extra = {"session": key} if key is not None else {}
    return [
        {"type": "process", "seq": base, "t_us": base * 10, "event": "spawn", "pid": base},
        {"type": "message", "seq": base + 1, "t_us": base * 10 + 1, "dir": "c2s", "kind": "request", "id": 1, "method": "ping",
         "json": {"jsonrpc": "2.0", "id": 1, "method": "ping"}, **extra},
        {"type": "message", "seq": base + 2, "t_us": base * 10 + 2, "dir": "s2c", "kind": "response", "id": 1, "pair": base + 1,
         "latency_us": 1, "json": {"jsonrpc": "2.0", "id": 1, "result": {}}, **extra},
        {"type": "eof", "seq": base + 3, "t_us": base * 10 + 3, "dir": "c2s", **extra},
        {"type": "process", "seq": base + 4, "t_us": base * 10 + 4, "event": "exit", "code": 0, "pid": base, "findings": EXIT},
    ]


@pytest.mark.parametrize("key", ["replay-session-2", "episode-1"])
def test_later_stdio_sessions_have_their_own_trace_and_no_mcp_session_id(key: str) -> None:
    spans = spans_of(HEADER, _session(1, None) + _session(10, key))
    assert [s.name for s in spans] == ["ping", "mcptap process exit", "ping", "mcptap process exit"]
    assert all("mcp.session.id" not in s.attributes for s in spans)
    first, second = {s.trace_id for s in spans[:2]}, {s.trace_id for s in spans[2:]}
    assert len(first) == len(second) == 1 and first != second


def test_http_keeps_the_mcp_session_id() -> None:
    recs = _session(1, "abc")[1:3]
    spans = spans_of({**HEADER, "transport": "http", "target": {"url": "http://127.0.0.1:1/mcp"}}, recs)
    assert [s.attributes.get("mcp.session.id") for s in spans] == ["abc"]
