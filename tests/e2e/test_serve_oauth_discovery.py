"""`serve` of a capture recorded through the tap with OAuth fronting: an OAuth client of the mock
discovers on the mock's own origin, never on the upstream's (or the recording tap's).

Recorded from the SDK's authorization-protected MCP server and its authorization server
(tests/e2e/auth_peers.py, separate loopback origins) with the SDK's OAuth client through
``mcptap record --upstream``. Then, against the mock, the discovery steps an OAuth client takes
(the SDK's ``OAuthClientProvider`` takes these): the 401's ``resource_metadata``, the protected
resource metadata there (its ``resource`` must be the URL connected to, RFC 9728 §3.3), the
authorization server metadata (RFC 8414 §3.1). The mock used to send the upstream's challenge
as it came: the client went to the real server's origin for the metadata. What the mock cannot
replay (registration, authorization, token) is answered 501 and said on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx2 as httpx  # the HTTP client the official SDK uses (a dependency of mcp)
import pytest
import trio

from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from peers import free_port, listening

pytestmark = pytest.mark.e2e
PEERS = Path(__file__).parent / "auth_peers.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def _record(cap: Path) -> list[str]:
    """The OAuth session through the tap; returns the upstream origins (authorization server, MCP server, tap)."""
    as_port, rs_port, tap_port = free_port(), free_port(), free_port()
    async with listening([sys.executable, str(PEERS), "as", str(as_port)], as_port):
        async with listening([sys.executable, str(PEERS), "rs", str(rs_port), f"http://127.0.0.1:{as_port}"], rs_port):
            async with listening([*MCPTAP, "record", "-q", "--upstream", f"http://127.0.0.1:{rs_port}/mcp",
                                  "--listen", f"127.0.0.1:{tap_port}", "-o", str(cap)], tap_port):
                with trio.fail_after(90):
                    p = await trio.run_process([sys.executable, str(PEERS), "client", f"http://127.0.0.1:{tap_port}/mcp"],
                                               capture_stdout=True, capture_stderr=True, check=False)
    assert p.returncode == 0 and p.stdout.decode().strip() == "authorized", p.stderr[-2000:]
    return [f"127.0.0.1:{port}" for port in (as_port, rs_port, tap_port)]


async def test_an_oauth_client_of_the_mock_discovers_on_the_mocks_origin(tmp_path: Path) -> None:
    cap = tmp_path / "auth.jsonl"
    recorded = await _record(cap)
    said: list[str] = []
    mock = HttpMock(ServeCore(script_from_path(str(cap))), say=said.append)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(mock.serve)
        origin = f"http://{urlsplit(url).netloc}"
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.post(url, json=INIT, headers=ACCEPT)
            assert r.status_code == 401
            challenge = r.headers["www-authenticate"]
            metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
            assert metadata_url.startswith(origin + "/"), challenge       # the mock's, not the upstream's or the tap's
            prm = await http.get(metadata_url)
            assert prm.status_code == 200 and prm.json()["resource"] == url, prm.text
            issuer = prm.json()["authorization_servers"][0]
            assert issuer.startswith(origin + "/"), issuer
            u = urlsplit(issuer)
            meta = await http.get(f"{origin}/.well-known/oauth-authorization-server{u.path.rstrip('/')}")
            assert meta.status_code == 200 and meta.json()["issuer"] == issuer, meta.text
            endpoints = [meta.json()[k] for k in ("authorization_endpoint", "token_endpoint", "registration_endpoint")]
            assert all(e.startswith(origin + "/") for e in endpoints), endpoints
            token = await http.post(meta.json()["token_endpoint"], data={"grant_type": "client_credentials"})
            assert token.status_code == 501 and b"not replayed" in token.content
            missing = await http.get(f"{origin}/.well-known/openid-configuration/nothing")
            assert missing.status_code == 404
            texts = [challenge, prm.text, meta.text]
        nursery.cancel_scope.cancel()
    assert not [o for o in recorded for t in texts if o in t], texts       # no recorded origin is named any more
    assert any("not replayed" in line for line in said), said
