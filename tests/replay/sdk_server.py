"""An MCP server built on the official SDK, in two builds, for replay/diff tests.

``python sdk_server.py v1`` / ``v2`` serves over stdio; ``--http PORT`` serves
Streamable HTTP on 127.0.0.1 instead, ``--sse PORT`` the legacy HTTP+SSE transport. v2 differs from v1 in exactly three ways:
``greet`` answers differently, ``echo`` is removed, and the ``completions``
capability is dropped (no completion handler).
"""

from __future__ import annotations

import sys
from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve, Sample
from mcp.types import SamplingMessage, TextContent, ToolAnnotations
from pydantic import BaseModel


class Colour(BaseModel):
    colour: str


def ask_colour() -> Elicit[Colour]:
    return Elicit("Favourite colour?", Colour)


def ask_model():
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Say a word"))], max_tokens=16)


def build(version: str) -> MCPServer:
    app = MCPServer(name="replay-demo", version="1.0")

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}!" if version == "v1" else f"Hi {name}."

    if version == "v1":
        @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
        def echo(text: str) -> str:
            """Echo the text."""
            return text

    @app.tool(annotations=ToolAnnotations(destructiveHint=True))
    def wipe(path: str) -> str:
        """Pretend to delete a file (a side effect replay must not repeat by default)."""
        return f"wiped {path}"

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def interview(colour: Annotated[Colour, Resolve(ask_colour)], word: Annotated[object, Resolve(ask_model)]) -> str:
        """Ask the user (elicitation) and the client's model (sampling)."""
        text = getattr(getattr(word, "content", None), "text", "?")
        return f"{colour.colour}/{text}"

    @app.resource("demo://readme")
    def readme() -> str:
        """A static resource."""
        return "read me"

    @app.prompt()
    def hello(name: str) -> str:
        """A prompt."""
        return f"Say hello to {name}"

    if version == "v1":
        @app.completion()
        async def complete(ref, argument, context):
            return None

    return app


if __name__ == "__main__":
    ver = sys.argv[1] if len(sys.argv) > 1 else "v1"
    server = build(ver)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    elif "--sse" in sys.argv:           # the legacy HTTP+SSE transport (2024-11-05): GET /sse, POST /messages/
        server.run("sse", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--sse") + 1]))
    else:
        server.run("stdio")
