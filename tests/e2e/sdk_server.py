"""A well-behaved MCP server on the official SDK (mcp 2.x MCPServer).

    python sdk_server.py                                      # stdio
    python sdk_server.py PORT streamable-http [--json] [--stateless]
    python sdk_server.py PORT sse                             # legacy HTTP+SSE

Tools: echo, add, slow (progress notifications), boom (isError result); a
resource and a prompt. HTTP listens on 127.0.0.1 only. Used by the stdio and
HTTP end-to-end tests through `mcptap record`.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer(name="e2e-sdk-server", version="1.0.0")


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Count to ``steps``, reporting progress."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted to {steps}"


@app.tool()
def boom() -> str:
    """Always fails (the result has isError: true)."""
    raise ValueError("boom on purpose")


@app.resource("e2e://greeting")
def greeting() -> str:
    """A static text resource."""
    return "hello from the resource"


@app.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary."""
    return f"Summarize {topic} in one line."


if __name__ == "__main__":
    if len(sys.argv) < 3:
        app.run("stdio")
    elif sys.argv[2] == "sse":
        app.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        flags = set(sys.argv[3:])
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response="--json" in flags,
                stateless_http="--stateless" in flags)
