"""Which MCP session an observed HTTP exchange belongs to (pure).

The session key of an exchange is:

* Streamable HTTP: the ``Mcp-Session-Id`` request header (spec 2025-03-26 …
  2025-11-25 basic/transports, sessions); the response to ``initialize``
  assigns it, so an ``initialize`` POST sent without one takes the id from its
  response head (``assigned``);
* legacy HTTP+SSE (spec 2024-11-05): the ``session_id``/``sessionId`` query
  parameter of the endpoint URI the server announced on its GET stream, else
  the endpoint's ``path?query`` (scrubbed); POSTs to that exact target belong to it.
  That id is the only thing that authorises the POSTs (anyone who has it can
  speak in the session): a credential, so the key is its keyed placeholder
  (``redact.placeholder``, the same as in the scrubbed target) unless
  ``record_secrets``. A Streamable HTTP ``Mcp-Session-Id`` is not (servers MUST
  NOT use it for authentication: 2025-06-18 security best practices) and stays;
* None otherwise (stateless traffic: one logical client).

``SessionKeys`` remembers the legacy endpoints of one tap. Shapes: request
targets and endpoint keys are ``str`` (``path`` or ``path?query``); headers are
``[(name, value), …]`` raw ``bytes``. Nothing here raises on peer input.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from mcptap.protocol import urls
from mcptap.protocol.http_fields import Headers, header
from mcptap.redact import placeholder, scrub_url

#: query names of a legacy endpoint's session id (the Python SDK's ``session_id``, others' ``sessionId``)
LEGACY_SESSION_PARAMS = ("session_id", "sessionId")


class SessionKeys:
    """Session keys of one tap's exchanges (see module doc). ``record_secrets``: legacy
    session ids as they are, not placeholders."""

    def __init__(self, record_secrets: bool = False) -> None:
        self.record_secrets = record_secrets
        self._legacy: dict[str, str] = {}      # endpoint "path?query" -> session key
        self._paths: set[str] = set()           # the paths of those endpoints

    def of_request(self, method: str, target: str, headers: Headers) -> tuple[Any, bool]:
        """(session key or None, is a POST to a legacy HTTP+SSE endpoint)."""
        sid = header(headers, "mcp-session-id")
        legacy_key = self._legacy.get(target) if method == "POST" else None
        if legacy_key is None and method == "POST" and target.partition("?")[0] in self._paths:
            # the endpoint's path with a session the server never announced (a stale or made-up session_id,
            # none): a legacy POST all the same, whose answer is the server's refusal, never a message
            legacy_key = self._key(target)
        return (legacy_key if legacy_key is not None else sid), legacy_key is not None

    def _key(self, key_target: str) -> str:
        """The session key of legacy endpoint ``key_target`` (``path?query``): see module doc."""
        q = parse_qs(key_target.partition("?")[2])
        ids = next((q[n] for n in LEGACY_SESSION_PARAMS if q.get(n)), None)
        sid = ids[0] if ids else None
        if self.record_secrets:
            return sid or key_target
        # without a session id the target is the key: recorded as the session, so no token in clear
        return placeholder(sid) if sid else scrub_url(key_target)

    @staticmethod
    def assigned(resp_headers: Headers, current: Any) -> Any:
        """The session of an exchange once its response head arrived: the
        response's ``Mcp-Session-Id`` if any, else ``current``."""
        sid = header(resp_headers, "mcp-session-id")
        return sid if sid is not None else current

    def bind_endpoint(self, resolved: str, tap_origin: str) -> str | None:
        """A legacy ``endpoint`` event announced absolute URI ``resolved``: when
        it points at the tap (``tap_origin`` = ``scheme://host:port``, the same
        origin by ``urls.origin``: case and a spelled-out default port aside),
        remember it and return its session key; else None (the client would
        POST elsewhere, so nothing to correlate)."""
        u = urls.split(resolved)
        if u is None or urls.origin(resolved) is None or urls.origin(resolved) != urls.origin(tap_origin):
            return None
        key_target = u.path + (f"?{u.query}" if u.query else "")
        key = self._key(key_target)
        self._legacy[key_target] = key
        self._paths.add(u.path)
        return key
