"""``--upstream https://user:pass@host/mcp``: whose requests carry the URL's credentials.

They are the credentials of the URL given (RFC 3986 §3.2.1, RFC 9110 §11): the MCP
endpoint's requests get them as ``Authorization: Basic``; the OAuth discovery
documents under ``/.well-known/`` (RFC 8615: about the origin, public, fetched
before any credentials exist) and the exchanges with an authorization server on
the same origin (its token endpoint takes client credentials of its own: a second
method in one request is refused, RFC 6749 §2.3.1) do not. They used to get them too.
"""

from __future__ import annotations

import h11
import trio

from transport.test_http_tap import read_response, tap, upstream_server
from transport.test_http_upstream_query import BASIC, PASSWORD, _seen_by_upstream


async def _request(url: str, method: str, path: str, body: bytes = b"", ctype: str = "application/json") -> int:
    host = url.split("//")[1].split("/", 1)[0]
    h, p = host.split(":")
    s = await trio.open_tcp_stream(h, int(p))
    c = h11.Connection(h11.CLIENT)
    hdrs = [("Host", host), ("Accept", "application/json, text/event-stream")]
    if method == "POST":
        hdrs += [("Content-Type", ctype), ("Content-Length", str(len(body)))]
    data = c.send(h11.Request(method=method, target=path, headers=hdrs))
    if body:
        data += c.send(h11.Data(data=body))
    await s.send_all(data + c.send(h11.EndOfMessage()))
    status, _ = await read_response(c, s)
    await s.aclose()
    return status


REQUESTS = [
    ("GET", "/.well-known/oauth-protected-resource/mcp", b"", "application/json"),
    ("GET", "/.well-known/oauth-authorization-server", b"", "application/json"),
    ("POST", "/token", b"grant_type=client_credentials&client_id=c&client_secret=x", "application/x-www-form-urlencoded"),
    ("POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "application/json"),
]


async def test_the_url_credentials_go_to_the_mcp_endpoint_only(tmp_path) -> None:
    seen: list[tuple[str, str]] = []
    async with upstream_server(_seen_by_upstream(seen)) as port, \
            tap(tmp_path, upstream=f"http://alice:{PASSWORD}@127.0.0.1:{port}/mcp") as (url, _):
        for method, path, body, ctype in REQUESTS:
            assert await _request(url, method, path, body, ctype) == 200
    assert seen == [("/.well-known/oauth-protected-resource/mcp", ""), ("/.well-known/oauth-authorization-server", ""),
                    ("/token", ""), ("/mcp", BASIC)], seen


async def test_without_auth_rewrite_the_well_known_documents_still_get_none(tmp_path) -> None:
    """``--no-auth-rewrite``: the tap does not tell authorization-server requests apart
    (documented); the discovery documents, by their path, still go without credentials."""
    seen: list[tuple[str, str]] = []
    async with upstream_server(_seen_by_upstream(seen)) as port, \
            tap(tmp_path, upstream=f"http://alice:{PASSWORD}@127.0.0.1:{port}/mcp", auth_rewrite=False) as (url, _):
        for method, path, body, ctype in REQUESTS[:2] + REQUESTS[3:]:
            assert await _request(url, method, path, body, ctype) == 200
    assert seen == [("/.well-known/oauth-protected-resource/mcp", ""), ("/.well-known/oauth-authorization-server", ""),
                    ("/mcp", BASIC)], seen
