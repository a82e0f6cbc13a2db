"""A well-behaved MCP server on the official SDK (mcp 2.x MCPServer).

    python sdk_server.py                                      # stdio
    python sdk_server.py PORT streamable-http [--json] [--stateless] [--poll]
    python sdk_server.py PORT sse                             # legacy HTTP+SSE

Tools: echo, add, slow (progress notifications), boom (isError result), and
with ``--poll`` poll (ends its response stream before answering: 2025-11-25
polling, with an in-memory event store and a 100 ms retry), poll_logged (logs on the
stream before it ends it), close_get (a resources list_changed on the GET stream, then
ends that stream) and close_get_quiet (ends the GET stream, nothing sent on it); a resource and a
prompt. HTTP listens on 127.0.0.1 only. Used by the stdio and
HTTP end-to-end tests through `mcptap record`.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

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


async def poll(ctx: Context) -> str:
    """End the response stream (the client resumes with Last-Event-ID), then answer."""
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    return "polled"


async def poll_logged(ctx: Context) -> str:
    """Log on the response stream, end it (the client resumes with Last-Event-ID), then answer."""
    await ctx.info("working on it")
    await anyio.sleep(0.2)              # (the log goes out on the response stream before it ends)
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    return "polled after a log"


async def close_get(ctx: Context) -> str:
    """Tell the client the resources changed (on the GET stream), then end that stream (2025-11-25 polling)."""
    await ctx.session.send_resource_list_changed()
    await anyio.sleep(0.2)              # (the notification goes out on the GET stream before it ends)
    await ctx.close_standalone_sse_stream()
    return "closed"


async def close_get_quiet(ctx: Context) -> str:
    """End the GET stream with nothing sent on it since it opened, then answer."""
    await ctx.close_standalone_sse_stream()
    return "closed quietly"


class MemoryEvents(EventStore):
    """Events kept in memory, so a client can resume a stream the server ended."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self.n = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: Any) -> EventId:
        eid = f"{stream_id}-{next(self.n)}"
        self.events.append((eid, stream_id, message))
        return eid

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        at = next((i for i, (e, _, _) in enumerate(self.events) if e == last_event_id), None)
        if at is None:
            return None
        sid = self.events[at][1]
        for e, s, m in self.events[at + 1:]:
            if s == sid and m is not None:
                await send_callback(EventMessage(m, e))
        return sid


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
        polling: dict[str, Any] = {}
        if "--poll" in flags:           # the tool only here: the other sessions' tool list stays EXPECTED's
            app.tool()(poll)
            app.tool()(poll_logged)
            app.tool()(close_get)
            app.tool()(close_get_quiet)
            polling = {"event_store": MemoryEvents(), "retry_interval": 100}
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response="--json" in flags,
                stateless_http="--stateless" in flags, **polling)
