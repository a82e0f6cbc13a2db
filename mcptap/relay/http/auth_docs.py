"""Helpers of ``relay/http/auth.py`` (pure): metadata documents as JSON objects,
the resources a protected resource metadata document may name, loopback hosts,
and the endpoints on the upstream's own origin that belong to an authorization
server co-hosted with the MCP server. Nothing here raises on peer input."""

from __future__ import annotations

import ipaddress
from typing import Any

import orjson

from mcptap.protocol import urls

WK_PRM = "/.well-known/oauth-protected-resource"
#: the MCP 2025-03-26 default endpoints ("Fallbacks for Servers without Metadata
#: Discovery"): an authorization server on the MCP server's own origin
DEFAULT_AS_PATHS = frozenset({"/authorize", "/token", "/register"})


def json_object(body: bytes, what: str) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None, [("auth.metadata_invalid", f"{what} is not JSON ({len(body)} bytes); passed on unchanged")]
    if not isinstance(doc, dict):
        return None, [("auth.metadata_invalid", f"{what} is not a JSON object; passed on unchanged")]
    return doc, []


def resource_candidates(served_url: str, upstream_resource: str) -> set[str]:
    """Resources a PRM document served at ``served_url`` may name (RFC 9728
    §3.1: the well-known segment inserted before the resource's path)."""
    u = urls.split(served_url)
    if u is None:
        return {upstream_resource.rstrip("/")}
    origin = f"{u.scheme}://{u.netloc}"
    rest = u.path[len(WK_PRM):] if u.path.startswith(WK_PRM) else ""
    return {(origin + rest).rstrip("/"), origin, upstream_resource.rstrip("/")}


def is_loopback(host: str) -> bool:
    h = host.strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False
