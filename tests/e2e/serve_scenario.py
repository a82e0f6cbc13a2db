"""The serve end-to-end scenario: sdk_scenario.drive plus every answer kept whole
(results as JSON, errors as code and message), so a mock's answers can be
compared with the real server's step by step."""

from __future__ import annotations

from typing import Any

from mcp.shared.exceptions import MCPError

from sdk_scenario import drive


def _dump(x: Any) -> Any:
    return x.model_dump(mode="json", exclude_none=True)


async def steps(client: Any) -> dict[str, Any]:
    """The scenario with every answer whole (results as JSON, errors as code and message)."""
    out: dict[str, Any] = {}
    got, progress = await drive(client)
    out["answers"], out["progress"] = got, progress
    out["tools/list"] = _dump(await client.list_tools())
    out["add"] = _dump(await client.call_tool("add", {"a": 2, "b": 40}))
    out["boom"] = _dump(await client.call_tool("boom", {}))
    try:
        out["unknown"] = _dump(await client.call_tool("no_such_tool", {"x": 1}))
    except MCPError as exc:
        out["unknown"] = {"error": exc.error.code, "message": exc.error.message}
    out["resources/read"] = _dump(await client.read_resource("e2e://greeting"))
    out["prompts/get"] = _dump(await client.get_prompt("summarize", {"topic": "MCP"}))
    return out
