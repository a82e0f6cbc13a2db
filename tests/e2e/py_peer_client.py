"""Python MCP clients for the real-peer sweep (runs in the peers venv of
scripts/install_peers.sh, which has fastmcp and the official SDK).

    python py_peer_client.py sdk|sdk-legacy|fastmcp stdio CALLS_JSON -- CMD [ARGS...]
    python py_peer_client.py sdk|sdk-legacy|fastmcp http  CALLS_JSON URL

sdk: the official SDK's high-level `mcp.Client` (probes server/discover for
2026-07-28, falls back to initialize); sdk-legacy: the same client in the
handshake era; fastmcp: FastMCP's `Client`. Walks the server's surface: ping
(not on 2026-07-28, where it was removed), tools/list, the given tools/call
requests plus one to a missing tool, every page of resources/list, one
resources/read, resources/templates/list, prompts/list and one prompts/get, all
only where the server declared the capability. Sampling and elicitation
handlers answer server requests. One line per step on stdout ("ok STEP" /
"err STEP ERROR"); exit status 1 if the session itself fails.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable
from typing import Any

import anyio
from fastmcp.exceptions import ClientError, FastMCPError
from mcp import MCPError
from mcp.client import stdio as _stdio

# the server here is the tap: give it time to end on stdin EOF and write its end record on a
# loaded machine (the SDK sends SIGTERM to the group after 2 s, SIGKILL 2 s later)
_stdio.PROCESS_TERMINATION_TIMEOUT = 60.0

KIND, MODE, CALLS = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
TARGET = sys.argv[4:][1:] if sys.argv[4:5] == ["--"] else sys.argv[4:]
EXPECTED = (MCPError, ClientError, FastMCPError)


async def step(name: str, aw: Awaitable[Any]) -> Any:
    try:
        r = await aw
    except EXPECTED as e:
        print("err", name, type(e).__name__, str(e).splitlines()[0] if str(e) else "", flush=True)
        return None
    print("ok", name, flush=True)
    return r


def modern(version: object) -> bool:
    return str(version) >= "2026-07-28"


async def sdk() -> None:
    from mcp import Client, types
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def sampling(ctx: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", model="m", content=types.TextContent(type="text", text="sampled"),
                                         stop_reason="endTurn")

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"value": True})

    target: Any = stdio_client(StdioServerParameters(command=TARGET[0], args=TARGET[1:])) if MODE == "stdio" else TARGET[0]
    async with Client(target, mode="legacy" if KIND == "sdk-legacy" else "auto", sampling_callback=sampling,
                      elicitation_callback=elicit) as c:
        print("ok initialize", c.protocol_version, flush=True)
        if not modern(c.protocol_version):
            await step("ping", c.send_ping())
        caps = c.server_capabilities
        if caps.tools:
            await step("tools/list", c.list_tools())
            for x in CALLS:
                await step("tools/call " + x["name"], c.call_tool(x["name"], x.get("arguments", {})))
            await step("tools/call missing", c.call_tool("no_such_tool_mcptap", {}))
        if caps.resources:
            page = await step("resources/list", c.list_resources())
            first = page.resources[0].uri if page and page.resources else None
            while page and page.next_cursor:
                page = await step("resources/list next", c.list_resources(cursor=page.next_cursor))
            if first:
                await step("resources/read", c.read_resource(first))
            await step("resources/templates/list", c.list_resource_templates())
        if caps.prompts:
            ps = await step("prompts/list", c.list_prompts())
            p = next((p for p in ps.prompts if not any(a.required for a in (p.arguments or []))), None) if ps else None
            if p:
                await step("prompts/get", c.get_prompt(p.name, {}))


async def fastmcp_client() -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def sampling(messages: Any, params: Any, ctx: Any) -> str:
        return "sampled"

    async def elicit(message: str, response_type: Any, params: Any, ctx: Any) -> Any:
        return response_type(value=True) if response_type else {}

    async def log(m: Any) -> None:
        pass

    async def progress(p: float, t: float | None, m: str | None) -> None:
        pass

    target: Any = StdioTransport(command=TARGET[0], args=TARGET[1:]) if MODE == "stdio" else TARGET[0]
    async with Client(target, sampling_handler=sampling, elicitation_handler=elicit, log_handler=log,
                      progress_handler=progress) as c:
        print("ok initialize", c.protocol_version, flush=True)
        if not modern(c.protocol_version):
            await step("ping", c.ping())
        caps = c.server_capabilities
        if caps.tools:
            await step("tools/list", c.list_tools())
            for x in CALLS:
                await step("tools/call " + x["name"], c.call_tool(x["name"], x.get("arguments", {}), raise_on_error=False))
            await step("tools/call missing", c.call_tool("no_such_tool_mcptap", {}, raise_on_error=False))
        if caps.resources:
            rs = await step("resources/list", c.list_resources())
            if rs:
                await step("resources/read", c.read_resource(rs[0].uri))
            await step("resources/templates/list", c.list_resource_templates())
        if caps.prompts:
            ps = await step("prompts/list", c.list_prompts())
            p = next((p for p in ps if not any(a.required for a in (p.arguments or []))), None) if ps else None
            if p:
                await step("prompts/get", c.get_prompt(p.name, {}))


anyio.run(fastmcp_client if KIND == "fastmcp" else sdk)
