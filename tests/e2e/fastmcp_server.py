"""A FastMCP 4.x server for the real-peer sweep (runs in the peers venv of
scripts/install_peers.sh, not the test venv).

    python fastmcp_server.py            # stdio
    python fastmcp_server.py PORT       # Streamable HTTP on 127.0.0.1:PORT/mcp

Tools: add (plain result), weather (structured output against an
outputSchema), fail (ToolError: an isError result), chatty (log message and
progress), confirm (elicitation). Four resources with a page size of 2 (paginated
resources/list), a resource template, a prompt with an optional argument.
"""

from __future__ import annotations

import sys

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from pydantic import BaseModel

mcp = FastMCP("mcptap-fastmcp", list_page_size=2)


class Weather(BaseModel):
    city: str
    celsius: float


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
def weather(city: str) -> Weather:
    """Structured output (the result carries structuredContent)."""
    return Weather(city=city, celsius=21.5)


@mcp.tool
def fail(reason: str) -> str:
    """Always fails with a tool error."""
    raise ToolError(f"failed: {reason}")


@mcp.tool
async def chatty(ctx: Context) -> str:
    """Logs and reports progress before answering."""
    await ctx.info("hello from the server")
    await ctx.report_progress(1, 2, "half")
    await ctx.report_progress(2, 2, "done")
    return "ok"


@mcp.tool
async def confirm(ctx: Context) -> str:
    """Asks the client to confirm (elicitation)."""
    r = await ctx.elicit("Proceed?", response_type=bool)
    return str(r.action)


@mcp.resource("data://greeting")
def greeting() -> str:
    return "hello"


@mcp.resource("data://second")
def second() -> str:
    return "second"


@mcp.resource("data://third")
def third() -> str:
    return "third"


@mcp.resource("data://item/{n}")
def item(n: int) -> str:
    return f"item {n}"


@mcp.prompt
def summarize(text: str = "x") -> str:
    return f"Summarize: {text}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
    else:
        mcp.run(show_banner=False)
