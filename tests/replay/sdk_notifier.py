"""An official-SDK stdio server whose tools send notifications, for replay
tests: ``python sdk_notifier.py loud|quiet``. ``work`` (read-only) reports
progress twice and logs a message when loud, nothing when quiet; ``wipe``
(destructive: replay skips it) reports progress in both builds."""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

LOUD = sys.argv[1] == "loud"
app = MCPServer("notes")

@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def work(ctx: Context) -> str:
    """Work, saying how far it got."""
    if LOUD:
        await ctx.report_progress(1, 2)
        await ctx.info("disk failing")
        await ctx.report_progress(2, 2)
    return "done"

@app.tool(annotations=ToolAnnotations(destructiveHint=True))
async def wipe(ctx: Context) -> str:
    """Wipe, saying how far it got."""
    await ctx.report_progress(1, 1)
    return "wiped"

app.run()
