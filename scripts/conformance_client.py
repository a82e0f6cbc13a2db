"""A client for @modelcontextprotocol/conformance client scenarios, built on the official SDK.

Contract of the suite (``conformance client --command CMD --scenario NAME``): the
scenario name is in ``MCP_CONFORMANCE_SCENARIO``, optional JSON context (client
credentials, keys) in ``MCP_CONFORMANCE_CONTEXT``, the server URL is the last
argument; exit 0 when done.

``--through-tap`` runs the same client through ``mcptap record --upstream URL``
(a loopback tap on a free port, capture written to ``--capture FILE`` or a
temporary file), so ``scripts/conformance.sh`` can compare every scenario's
result directly and through the tap.

Scenarios: ``initialize``, ``tools_call``, ``sse-retry``,
``elicitation-sep1034-client-defaults``, ``auth/client-credentials-basic``,
``auth/client-credentials-jwt``, and every other ``auth/*`` scenario as the
authorization code flow (PKCE; dynamic registration, a client ID metadata
document URL, or pre-registered credentials from the context), with a headless
"browser" that follows the authorization server's redirect to read the code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp import ClientSession, types
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

REDIRECT = "http://localhost:3000/callback"


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.info = client_info


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


async def elicit_with_defaults(ctx: Any, params: Any) -> types.ElicitResult:
    """SEP-1034: accept, filling every field from its schema default."""
    schema = getattr(params, "requested_schema", None) or {}
    content = {k: v["default"] for k, v in schema.get("properties", {}).items() if isinstance(v, dict) and "default" in v}
    return types.ElicitResult(action="accept", content=content)


async def session(url: str, auth: httpx2.Auth | None = None, tool: str | None = None, args: dict[str, Any] | None = None,
                  elicit: bool = False) -> None:
    http = httpx2.AsyncClient(auth=auth, follow_redirects=True, timeout=httpx2.Timeout(30, read=60)) if auth else None
    try:
        async with streamable_http_client(url, http_client=http) as (read, write):
            kw: dict[str, Any] = {"elicitation_callback": elicit_with_defaults} if elicit else {}
            async with ClientSession(read, write, **kw) as s:
                await s.initialize()
                await s.list_tools()
                if tool:
                    await s.call_tool(tool, args or {})
    finally:
        if http is not None:
            await http.aclose()


def auth_code_provider(url: str) -> OAuthClientProvider:
    got: dict[str, str | None] = {}

    async def browser(auth_url: str) -> None:
        async with httpx2.AsyncClient() as c:
            r = await c.get(auth_url, follow_redirects=False)
        if r.status_code not in (301, 302, 303, 307, 308):
            raise RuntimeError(f"authorization request answered {r.status_code}, not a redirect")
        q = parse_qs(urlparse(r.headers["location"]).query)
        got.update(code=q["code"][0], state=(q.get("state") or [None])[0], iss=(q.get("iss") or [None])[0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=got["code"] or "", state=got.get("state"), iss=got.get("iss"))

    storage = Memory()
    ctx = context()
    if ctx.get("client_id"):
        storage.info = OAuthClientInformationFull(
            client_id=ctx["client_id"], client_secret=ctx.get("client_secret"), redirect_uris=[AnyUrl(REDIRECT)],
            token_endpoint_auth_method="client_secret_basic" if ctx.get("client_secret") else "none")
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(client_name="mcptap-conformance", redirect_uris=[AnyUrl(REDIRECT)],
                                            grant_types=["authorization_code", "refresh_token"], response_types=["code"]),
        storage=storage, redirect_handler=browser, callback_handler=callback,
        client_metadata_url="https://conformance-test.local/client-metadata.json")


def client_credentials_provider(url: str, scenario: str) -> OAuthClientProvider:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    ctx = context()
    if scenario.endswith("jwt"):
        params = SignedJWTParameters(issuer=ctx["client_id"], subject=ctx["client_id"],
                                     signing_algorithm=ctx.get("signing_algorithm", "ES256"), signing_key=ctx["private_key_pem"])
        return PrivateKeyJWTOAuthProvider(server_url=url, storage=Memory(), client_id=ctx["client_id"],
                                          assertion_provider=params.create_assertion_provider())
    return ClientCredentialsOAuthProvider(server_url=url, storage=Memory(), client_id=ctx["client_id"],
                                          client_secret=ctx["client_secret"], token_endpoint_auth_method="client_secret_basic")


async def run(url: str, scenario: str) -> None:
    if scenario == "tools_call":
        await session(url, tool="add_numbers", args={"a": 5, "b": 3})
    elif scenario == "sse-retry":
        await session(url, tool="test_reconnection")
    elif scenario == "elicitation-sep1034-client-defaults":
        await session(url, tool="test_client_elicitation_defaults", elicit=True)
    elif scenario.startswith("auth/client-credentials"):
        await session(url, auth=client_credentials_provider(url, scenario))
    elif scenario.startswith("auth/"):
        await session(url, auth=auth_code_provider(url))
    else:
        await session(url)


def through_tap(url: str, capture: str | None) -> int:
    """Run this client (same scenario) through a loopback ``mcptap record`` tap."""
    cap = capture or os.path.join(tempfile.mkdtemp(prefix="mcptap-conformance-"), "capture.jsonl")
    tap = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "--upstream", url, "--listen", "127.0.0.1:0",
                            "-o", cap], stderr=subprocess.PIPE, text=True)
    assert tap.stderr is not None
    tap_url = None
    for line in tap.stderr:
        m = re.match(r"mcptap: listening on (\S+) ", line)
        if m:
            # the printed path hides the upstream path's secrets: the tap's origin, the upstream's path
            tap_url = "/".join(m.group(1).split("/", 3)[:3]) + (urllib.parse.urlsplit(url).path or "/")
            break
    if tap_url is None:
        print("mcptap tap did not start", file=sys.stderr)
        return 2
    try:
        return subprocess.run([sys.executable, __file__, tap_url]).returncode
    finally:
        tap.send_signal(2)
        tap.wait(timeout=15)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--through-tap", action="store_true")
    ap.add_argument("--capture", default=None)
    ap.add_argument("url")
    a = ap.parse_args()
    if a.through_tap:
        return through_tap(a.url, a.capture)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    anyio.run(run, a.url, scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
