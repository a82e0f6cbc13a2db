"""An official-SDK server whose answers and requests carry secrets, and a client for it,
for replaying a scrubbed capture (tests/e2e/test_replay_scrubbed.py).

``python sdk_secrets.py server`` serves over stdio: ``whoami`` answers with a bearer
credential and an API key in its text, ``ask`` asks the client's model (sampling) with a
credential in the prompt. ``python sdk_secrets.py client OUT -- SERVER ARGS…`` runs a
legacy-era session through ``mcptap record -o OUT``: calls both (with an ``api_key``
argument), answering sampling.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

from mcp.server.mcpserver import MCPServer, Resolve, Sample
from mcp.types import SamplingMessage, TextContent, ToolAnnotations

TOKEN = "abcdef1234567890XYZ"
API_KEY = "sk-live-" + "Q7f9Lm2Xp4Rt8Vw1Zy3B"


def ask_model():
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=f"Authorization: Bearer {TOKEN}"))],
                  max_tokens=16)


def build() -> MCPServer:
    app = MCPServer(name="secrets-demo", version="1.0")

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def whoami(api_key: str) -> str:
        """Who the key belongs to (answers with credentials)."""
        return json.dumps({"user": "ann", "apiKey": API_KEY, "header": f"Authorization: Bearer {TOKEN}"})

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def ask(word: Annotated[object, Resolve(ask_model)]) -> str:
        """Ask the client's model with a credential in the prompt."""
        return getattr(getattr(word, "content", None), "text", "?")

    return app


async def client(out: str, server: list[str]) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import CreateMessageResult

    async def sampling(ctx, params):
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="banana"), model="fake")

    params = StdioServerParameters(command=sys.executable, args=["-m", "mcptap.cli.main", "record", "-q", "-o", out, "--", *server])
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], sampling_callback=sampling) as s:
            await s.initialize()
            await s.list_tools()
            await s.call_tool("whoami", {"api_key": API_KEY})
            await s.call_tool("ask", {})


if __name__ == "__main__":
    if sys.argv[1] == "server":
        build().run("stdio")
    else:
        import anyio

        sep = sys.argv.index("--")
        anyio.run(client, sys.argv[2], sys.argv[sep + 1:])
