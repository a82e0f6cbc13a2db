"""A real SDK client session, recorded through ``mcptap record`` (stdio) or
talking to a URL (HTTP): ``python sdk_client.py legacy|modern OUT -- SERVER ARGS…``
or ``python sdk_client.py legacy|modern --url URL``, or ``python sdk_client.py
legacy --sse URL`` (the legacy HTTP+SSE transport: ``URL`` is the event stream).

The scenario: list tools, call add and greet, call interview (the server asks
for elicitation and sampling; answered here), call the destructive wipe, list
resources.
"""

from __future__ import annotations

import sys

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, ElicitResult, TextContent

MCPTAP = [sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o"]


async def sampling(ctx, params):
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="banana"), model="fake")


async def elicit(ctx, params):
    return ElicitResult(action="accept", content={"colour": "blue"})


async def scenario(call) -> None:
    await call("list_tools")
    await call("call_tool", "add", {"a": 1, "b": 2})
    await call("call_tool", "greet", {"name": "Ann"})
    await call("call_tool", "interview", {})
    await call("call_tool", "wipe", {"path": "/tmp/nothing"})
    await call("list_resources")


async def main(era: str, out: str | None, server: list[str], url: str | None, sse: bool = False) -> None:
    if url is None:
        params = StdioServerParameters(command=MCPTAP[0], args=[*MCPTAP[1:], out, "--", *server])
    if era == "legacy":
        transport = stdio_client(params) if url is None else sse_client(url) if sse else streamable_http_client(url)
        async with transport as streams:
            async with ClientSession(streams[0], streams[1], sampling_callback=sampling, elicitation_callback=elicit) as s:
                await s.initialize()
                await scenario(lambda name, *a: getattr(s, name)(*a))
    else:
        target = params if url is None else url
        async with Client(target, sampling_callback=sampling, elicitation_callback=elicit, cache=None) as c:
            await scenario(lambda name, *a: getattr(c, name)(*a))


if __name__ == "__main__":
    era = sys.argv[1]
    if sys.argv[2] in ("--url", "--sse"):
        anyio.run(main, era, None, [], sys.argv[3], sys.argv[2] == "--sse")
    else:
        sep = sys.argv.index("--")
        anyio.run(main, era, sys.argv[2], sys.argv[sep + 1:], None)
