"""An MCP server on the official SDK (mcp 2.x MCPServer) whose answers a
client can walk away from: ``sleepy`` answers after ``seconds``, ``big``
returns a text of ``mb`` MiB (one SSE event larger than the SDK client's
1 MiB event limit), ``chatty`` reports progress every 50 ms for ``steps`` steps
before it answers.

    python cut_server.py PORT streamable-http [--json] [--stateless]
    python cut_server.py PORT sse                             # legacy HTTP+SSE

HTTP listens on 127.0.0.1 only. Used by tests/e2e/test_http_client_cut.py.
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer(name="e2e-cut-server", version="1.0.0")


@app.tool()
async def sleepy(seconds: float) -> str:
    """Answer after ``seconds``."""
    await anyio.sleep(seconds)
    return "woke up"


@app.tool()
async def chatty(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, 50 ms apart, then answer."""
    for i in range(steps):
        await ctx.report_progress(i, steps)
        await anyio.sleep(0.05)
    return "done"


@app.tool()
def big(mb: int) -> str:
    """A text of ``mb`` MiB."""
    return "x" * (mb << 20)


if __name__ == "__main__":
    if sys.argv[2] == "sse":
        app.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        flags = set(sys.argv[3:])
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response="--json" in flags,
                stateless_http="--stateless" in flags)
