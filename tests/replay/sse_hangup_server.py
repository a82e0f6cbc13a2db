"""The official SDK's legacy HTTP+SSE server (``mcp.server.sse`` via ``MCPServer.sse_app``:
GET /sse, POST /messages/?session_id=…; no tools) whose first event stream ends when the
first ``tools/list`` arrives, unanswered, as a proxy or load balancer cutting a long-lived
response would end it. That POST gets its ``202 Accepted`` from this wrapper; everything
else is the SDK's own, so a GET that opens the stream again gets a new session, which
refuses requests until it is initialised. Usage: ``sse_hangup_server.py PORT``."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

sdk = MCPServer(name="hangup-server", version="1.0.0").sse_app()
hangup = anyio.Event()
streams = 0


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global streams
    if scope["type"] != "http":
        await sdk(scope, receive, send)
        return
    if scope["method"] == "GET" and streams == 0:
        streams += 1
        async with anyio.create_task_group() as tg:
            tg.start_soon(sdk, scope, receive, send)
            await hangup.wait()
            tg.cancel_scope.cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})       # the stream ends here
        return
    if scope["method"] != "POST":
        await sdk(scope, receive, send)
        return
    body, more = b"", True
    while more:
        part = await receive()
        body, more = body + part.get("body", b""), part.get("more_body", False)
    if not hangup.is_set() and json.loads(body).get("method") == "tools/list":
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"8")]})
        await send({"type": "http.response.body", "body": b"Accepted"})
        hangup.set()
        return
    sent = False

    async def again() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    await sdk(scope, again, send)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
