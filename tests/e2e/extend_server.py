"""The real server behind ``mcptap serve --extend`` in tests/e2e/test_serve_extend.py
(official SDK, stdio): ``echo``, ``sleepy`` (sleeps; when cancelled it writes
``cancelled <seconds>`` to the file named by ``EXTEND_MARK``, so a test can tell the
server was told), ``shout`` (logs its text as a notifications/message, then echoes it),
``die`` (the process exits at once, status 9, answering nothing: a server that crashes)
and one line on stderr at start."""

from __future__ import annotations

import os
import sys
import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer(name="extend-server", version="1.0.0")


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool()
async def shout(text: str, ctx: Context) -> str:
    """Log the text, then echo it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # logging is deprecated in 2026-07-28; this server's clients are older
        await ctx.info(f"shouted {text}")
    return text


@app.tool()
async def sleepy(seconds: float) -> str:
    """Sleep ``seconds``."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        mark = os.environ.get("EXTEND_MARK")
        if mark:
            with open(mark, "a") as fp:
                fp.write(f"cancelled {seconds:g}\n")
        raise
    return f"slept {seconds:g}"


@app.tool()
def die() -> str:
    """Exit the server process at once, answering nothing."""
    os._exit(9)


if __name__ == "__main__":
    print("extend-server up", file=sys.stderr, flush=True)
    app.run("stdio")
