"""OAuth step-up peers for the replay end-to-end test (tests/e2e/auth_peers.py's, with a scope step-up).

``python stepup_peers.py as PORT``: the authorization server of auth_peers.py (``run_as``), whose clients
may hold the ``admin`` scope too (registered with ``mcp admin``; authorisation grants what
the client asks for).

``python stepup_peers.py rs PORT AS_URL``: the resource server of auth_peers.py with a second
tool, ``admin_op``, whose call answers 403 ``insufficient_scope`` (``WWW-Authenticate:
Bearer error="insufficient_scope", scope="mcp admin"``) while the token lacks ``admin``.

``python stepup_peers.py client URL``: the SDK's ``OAuthClientProvider`` (authorization code +
PKCE): ``initialize`` (401, authorise, sent again), ``whoami``, ``admin_op`` (403, authorise
again with ``admin``, sent again with the same id), ``whoami``; prints each tool's text, and
on stderr ``ALLTOK [[access, refresh, scope], …]`` (the last token is the one with ``admin``).

All three listen on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import sys

import anyio

from auth_peers import mcp_server, run_client
from auth_peers import run_as as run_auth_server


def run_as(port: int) -> None:
    run_auth_server(port, scopes=("mcp", "admin"))


def run_rs(port: int, as_url: str) -> None:
    import httpx2

    server = mcp_server(port, as_url)

    @server.tool()
    def admin_op(x: int) -> str:
        """Needs admin scope."""
        return f"admin done {x}"

    import uvicorn
    inner = server.streamable_http_app()

    async def app(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            return await inner(scope, receive, send)
        chunks = []
        more = True
        while more:
            m = await receive()
            chunks.append(m.get("body", b""))
            more = m.get("more_body", False)
        body = b"".join(chunks)
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        hdrs = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if isinstance(msg, dict) and msg.get("method") == "tools/call" and msg.get("params", {}).get("name") == "admin_op":
            tok = hdrs.get("authorization", "").removeprefix("Bearer ")
            async with httpx2.AsyncClient() as client:
                r = await client.post(f"{as_url}/introspect", data={"token": tok})
            d = r.json()
            if d.get("active") and "admin" not in d.get("scope", "").split():
                rm = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
                www = f'Bearer error="insufficient_scope", scope="mcp admin", resource_metadata="{rm}", error_description="admin scope required"'
                out = json.dumps({"error": "insufficient_scope", "error_description": "admin scope required"}).encode()
                heads = [(b"content-type", b"application/json"), (b"www-authenticate", www.encode()),
                         (b"content-length", str(len(out)).encode())]
                await send({"type": "http.response.start", "status": 403, "headers": heads})
                await send({"type": "http.response.body", "body": out})
                return
        sent = False
        async def rcv():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()
        return await inner(scope, rcv, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


async def run_stepup_client(url: str) -> None:
    await run_client(url, calls=(("whoami", {}), ("admin_op", {"x": 7}), ("whoami", {})), trace=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "as":
        run_as(int(sys.argv[2]))
    elif mode == "rs":
        run_rs(int(sys.argv[2]), sys.argv[3])
    else:
        anyio.run(run_stepup_client, sys.argv[2])
