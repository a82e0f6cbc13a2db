"""An official-SDK server whose tools log while they run (``notifications/message``):
``note`` (read-only) and ``wipe`` (destructive: replay skips it by default).
``python log_server.py`` serves stdio; ``--sse-tls PORT KEY CERT`` the legacy
HTTP+SSE transport over https on 127.0.0.1 (uvicorn with that key and certificate)."""

from __future__ import annotations

import sys

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
    if "--sse-tls" in sys.argv:
        import uvicorn

        port, key, cert = sys.argv[sys.argv.index("--sse-tls") + 1:][:3]
        uvicorn.run(app.sse_app(), host="127.0.0.1", port=int(port), ssl_keyfile=key, ssl_certfile=cert, log_level="warning")
    else:
        app.run("stdio")
