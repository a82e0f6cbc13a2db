"""An official-SDK server whose tools log while they run (``notifications/message``):
``note`` (read-only) and ``wipe`` (destructive: replay skips it by default).
``python log_server.py`` serves stdio."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

app = MCPServer(name="logs", version="1")


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def note(text: str, ctx: Context) -> str:
    """Log the text, then return it."""
    await ctx.info(f"note {text}")
    return text


@app.tool(annotations=ToolAnnotations(destructiveHint=True))
async def wipe(path: str, ctx: Context) -> str:
    """Log that it wipes ``path`` (pretend)."""
    await ctx.info(f"wiping {path}")
    return "ok"


if __name__ == "__main__":
    app.run("stdio")
