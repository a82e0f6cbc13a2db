"""The client scenario every SDK end-to-end test drives against sdk_server.py
(stdio or HTTP), and the answers the server must give."""

from __future__ import annotations

from typing import Any

EXPECTED: dict[str, Any] = {
    "tools": ["add", "boom", "echo", "slow"], "echo": "héllo ☕", "add": "42", "slow": "counted to 3",
    "boom_is_error": True, "resources": ["e2e://greeting"], "resource_text": "hello from the resource",
    "prompts": ["summarize"], "prompt_text": "Summarize MCP in one line.",
}


async def drive(client: Any) -> tuple[dict[str, Any], list[float]]:
    """tools/list, tools/call (echo, add, slow with progress, boom → isError),
    resources, prompts. Returns (answers, progress values seen)."""
    out: dict[str, Any] = {}
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
    out["echo"] = (await client.call_tool("echo", {"text": "héllo ☕"})).content[0].text
    out["add"] = (await client.call_tool("add", {"a": 2, "b": 40})).content[0].text
    out["slow"] = (await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)).content[0].text
    out["boom_is_error"] = (await client.call_tool("boom", {})).is_error
    out["resources"] = [str(x.uri) for x in (await client.list_resources()).resources]
    out["resource_text"] = (await client.read_resource("e2e://greeting")).contents[0].text
    out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
    out["prompt_text"] = (await client.get_prompt("summarize", {"topic": "MCP"})).messages[0].content.text
    return out, progress
