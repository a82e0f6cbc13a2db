"""Requests the HTTP mock refuses before it looks at a message (pure, level 3).

The mock stands in for a real Streamable HTTP server, so it must not accept
what a careful one refuses (spec 2025-06-18 and later, basic/transports,
Security Warning: servers MUST validate the ``Origin`` header, to stop DNS
rebinding; the official SDK servers also refuse a POST that is not JSON).
Without these checks a test passing against the mock could fail against the
server, and a web page could drive a mock on the developer's machine with a
cross-site form POST (``Content-Type: text/plain`` needs no CORS preflight).

``refusal(method, origin, content_type, hosts)`` -> ``(status, body)`` or None:

* an ``Origin`` whose host is not one the mock answers (``hosts``: loopback
  names and its own listening host; ``null`` included) -> 403;
* a POST whose ``Content-Type`` is missing or not ``application/json``
  (parameters such as ``charset`` allowed, case-insensitive) -> 415 with a
  JSON-RPC error (-32600, id null), as the official SDK's Streamable HTTP server
  answers.

Over ``--allow-remote`` the Origin check is the caller's to skip (a remote
mock answers every name); the media type is checked in every case.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson


def _origin_host(origin: str) -> str | None:
    try:
        parts = urlsplit(origin.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    named = f"[{host}]" if ":" in host else host
    return named if port is None else f"{named}:{port}"


def origin_allowed(origin: str | None, hosts: frozenset[str] | set[str]) -> bool:
    """True when a request with this ``Origin`` value (None: absent, as from a
    non-browser client) may be served. ``hosts``: lower-case names, IPv6 in
    brackets, as the mock's Host check uses them."""
    if origin is None:
        return True
    named = _origin_host(origin)
    if named is None:
        return False
    return named in hosts or named.rpartition(":")[0] in hosts


def json_media_type(content_type: str | None) -> bool:
    """True for ``application/json`` with any parameters (RFC 9110 §8.3.1:
    type and subtype are case-insensitive)."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def refusal(method: str, origin: str | None, content_type: str | None, hosts: frozenset[str] | set[str],
            check_origin: bool = True) -> tuple[int, bytes, str | None] | None:
    """``(status, body, content type)`` of the mock's refusal, or None to
    serve the request."""
    if check_origin and not origin_allowed(origin, hosts):
        return 403, b"mcptap serve: Origin not allowed (DNS rebinding protection; --allow-remote lifts it)", None
    if method == "POST" and not json_media_type(content_type):
        err = {"jsonrpc": "2.0", "id": None,
               "error": {"code": -32600, "message": "Unsupported Media Type: Content-Type must be application/json"}}
        return 415, orjson.dumps(err), "application/json"
    return None
