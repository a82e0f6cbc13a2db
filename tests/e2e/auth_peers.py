"""Authorization peers for the OAuth end-to-end tests, built from the official SDK.

``python auth_peers.py as PORT``: a local OAuth 2.1 authorization server
(``mcp.server.auth.routes.create_auth_routes``: RFC 8414 metadata, dynamic
client registration, authorize, token, revoke) with an in-memory provider that
approves every authorization request at once, binds codes and tokens to the
RFC 8707 ``resource`` the client asked for, and answers RFC 7662 introspection
at ``/introspect``.

``python auth_peers.py rs PORT AS_URL``: an MCP server (``MCPServer``,
Streamable HTTP at ``/mcp``) that is an OAuth resource server: it serves RFC 9728
protected resource metadata, answers 401 with ``WWW-Authenticate`` and accepts
only tokens the authorization server issued *for its own URL*
(``validate_token_resource``) — so a token bound to the tap's URL is rejected.

``python auth_peers.py client TAP_URL``: the SDK's ``OAuthClientProvider`` through
``TAP_URL`` (authorization code + PKCE, dynamic registration, a headless redirect
handler), then ``tools/call whoami``; prints the tool's text on stdout.

All three listen on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio


def run_as(port: int, scopes: tuple[str, ...] = ("mcp",)) -> None:
    """The authorization server; a client may hold ``scopes`` (registered with all of them
    when there are more than ``mcp``: authorisation grants what the client asks for)."""
    import uvicorn
    from mcp.server.auth.provider import AccessToken, AuthorizationCode, AuthorizationParams, RefreshToken, construct_redirect_uri
    from mcp.server.auth.routes import create_auth_routes
    from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
    from pydantic import AnyHttpUrl
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    class Provider:
        def __init__(self) -> None:
            self.clients: dict[str, OAuthClientInformationFull] = {}
            self.codes: dict[str, AuthorizationCode] = {}
            self.tokens: dict[str, AccessToken] = {}
            self.refresh: dict[str, RefreshToken] = {}

        async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
            return self.clients.get(client_id)

        async def register_client(self, client_info: OAuthClientInformationFull) -> None:
            assert client_info.client_id is not None
            if len(scopes) > 1:
                client_info.scope = " ".join(scopes)
            self.clients[client_info.client_id] = client_info

        async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
            code = secrets.token_urlsafe(24)
            self.codes[code] = AuthorizationCode(
                code=code, scopes=params.scopes or ["mcp"], expires_at=time.time() + 300, client_id=client.client_id or "",
                code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
            return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

        async def load_authorization_code(self, client: Any, authorization_code: str) -> AuthorizationCode | None:
            return self.codes.get(authorization_code)

        def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
            access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
            self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                              expires_at=int(time.time()) + 3600, resource=resource)
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
            return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600, scope=" ".join(scopes),
                              refresh_token=refresh)

        async def exchange_authorization_code(self, client: Any, authorization_code: AuthorizationCode) -> OAuthToken:
            self.codes.pop(authorization_code.code, None)
            return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

        async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
            return self.refresh.get(refresh_token)

        async def exchange_refresh_token(self, client: Any, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
            self.refresh.pop(refresh_token.token, None)
            return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

        async def load_access_token(self, token: str) -> AccessToken | None:
            return self.tokens.get(token)

        async def revoke_token(self, token: Any) -> None:
            self.tokens.pop(getattr(token, "token", ""), None)

    provider = Provider()
    issuer = f"http://127.0.0.1:{port}"

    async def introspect(request: Request) -> JSONResponse:
        form = await request.form()
        tok = provider.tokens.get(str(form.get("token", "")))
        if tok is None:
            return JSONResponse({"active": False})
        return JSONResponse({"active": True, "client_id": tok.client_id, "scope": " ".join(tok.scopes),
                             "exp": tok.expires_at, "aud": tok.resource})

    routes = create_auth_routes(provider, AnyHttpUrl(issuer),  # type: ignore[arg-type]
                                client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(scopes),
                                                                                      default_scopes=["mcp"]),
                                revocation_options=RevocationOptions(enabled=True))
    routes.append(Route("/introspect", introspect, methods=["POST"]))
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


def mcp_server(port: int, as_url: str) -> Any:
    """The resource server's ``MCPServer`` (token introspection at ``AS_URL``, tool ``whoami``)."""
    import httpx2
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from pydantic import AnyHttpUrl

    class Introspection:
        async def verify_token(self, token: str) -> AccessToken | None:
            async with httpx2.AsyncClient() as client:
                r = await client.post(f"{as_url}/introspect", data={"token": token})
            d = r.json()
            if not d.get("active"):
                return None
            return AccessToken(token=token, client_id=d["client_id"], scopes=d["scope"].split(), expires_at=d.get("exp"),
                               resource=d.get("aud"))

    server = MCPServer("auth-demo", token_verifier=Introspection(),
                       auth=AuthSettings(issuer_url=AnyHttpUrl(as_url),
                                         resource_server_url=AnyHttpUrl(f"http://127.0.0.1:{port}/mcp"),
                                         validate_token_resource=True, required_scopes=["mcp"]))

    @server.tool()
    def whoami() -> str:
        """Who the token says you are."""
        return "authorized"

    return server


def run_rs(port: int, as_url: str) -> None:
    mcp_server(port, as_url).run("streamable-http", host="127.0.0.1", port=port)


async def run_client(url: str, calls: tuple[tuple[str, dict[str, Any]], ...] = (("whoami", {}),), trace: bool = False) -> None:
    """The SDK client through ``url``: ``calls`` (tool, arguments), each tool's text on stdout;
    ``trace``: also every token set (``ALLTOK [[access, refresh, scope], …]``) and every
    authorization code (``ALLCODES``) on stderr."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider, TokenStorage
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
    from pydantic import AnyUrl

    class Memory(TokenStorage):
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.info: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens
            alltok.append([tokens.access_token, tokens.refresh_token, tokens.scope])

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.info

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.info = client_info

    got: dict[str, str | None] = {}
    alltok: list[list[str | None]] = []
    allcodes: list[str] = []

    async def redirect(auth_url: str) -> None:
        # the "browser": the authorization server approves at once and redirects with a code
        async with httpx2.AsyncClient() as c:
            r = await c.get(auth_url, follow_redirects=False)
        q = parse_qs(urlparse(r.headers["location"]).query)
        allcodes.append(q["code"][0])
        got["code"], got["state"], got["iss"] = q["code"][0], q.get("state", [None])[0], q.get("iss", [None])[0]

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=got["code"] or "", state=got["state"], iss=got["iss"])

    storage = Memory()
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(client_name="mcptap-e2e", redirect_uris=[AnyUrl("http://localhost:3030/callback")],
                                            grant_types=["authorization_code", "refresh_token"], response_types=["code"]),
        storage=storage, redirect_handler=redirect, callback_handler=callback)
    async with httpx2.AsyncClient(auth=auth, follow_redirects=True, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for tool, arguments in calls:
                    result = await session.call_tool(tool, arguments)
                    print(result.content[0].text)  # type: ignore[union-attr]
    # the test checks that none of these reached the capture in clear
    if trace:
        print("ALLTOK", json.dumps(alltok), file=sys.stderr)
        print("ALLCODES", json.dumps(allcodes), file=sys.stderr)
    secrets_seen = {"code": got.get("code"), "access_token": storage.tokens.access_token if storage.tokens else None,
                    "refresh_token": storage.tokens.refresh_token if storage.tokens else None,
                    "client_secret": storage.info.client_secret if storage.info else None}
    print(json.dumps(secrets_seen), file=sys.stderr)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "as":
        run_as(int(sys.argv[2]))
    elif mode == "rs":
        run_rs(int(sys.argv[2]), sys.argv[3])
    else:
        anyio.run(run_client, sys.argv[2])
