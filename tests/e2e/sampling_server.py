"""A stdio MCP server on the official SDK whose tools ask the client back:
``ask`` (sampling/createMessage) and ``pick`` (elicitation/create), each on the
response stream of the tools/call that caused it (``related_request_id``).
Recorded through ``mcptap record`` and served over HTTP (``mcptap serve``,
sessionless) by tests/e2e/test_sessionless_server_requests.py."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import SamplingMessage, TextContent

app = MCPServer(name="asking-server", version="1.0.0")


@app.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling)."""
    r: Any = await ctx.session.create_message([SamplingMessage(role="user", content=TextContent(type="text", text=question))],
                                              max_tokens=16, related_request_id=ctx.request_id)
    return str(getattr(r.content, "text", "?"))


@app.tool()
async def pick(ctx: Context) -> str:
    """Ask the user (elicitation)."""
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
    r = await ctx.session.elicit_form("Favourite colour?", schema, related_request_id=ctx.request_id)
    return str((r.content or {}).get("colour"))


if __name__ == "__main__":
    app.run("stdio")
