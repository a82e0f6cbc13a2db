"""HTTP answers that are not JSON-RPC traffic (pure).

Sources: spec basic/transports, Streamable HTTP "Sending Messages to the
Server" (2025-03-26 … 2026-07-28): a server that cannot accept a POST MUST
answer with an HTTP error status, whose body MAY be a JSON-RPC error response
*without an id*; basic/authorization (2025-03-26+): 401 with
``WWW-Authenticate`` before a token, 403 for insufficient scope; RFC 6750 §3
and RFC 6749 §5.2: OAuth error bodies (``{"error": "invalid_token", …}``).

So, on an error status:

* an id-less JSON-RPC error answers the single request of that POST;
* a JSON object that is an OAuth/HTTP error body (401/403/407, or a
  registered OAuth ``error`` code) is not a JSON-RPC message at all, and is
  never judged by ``jsonrpc.*`` rules (``http.error_body``, info);
* the requests of a POST whose complete error response carried no JSON-RPC
  payload were refused at HTTP level (``http.request_refused``, info): not
  ``jsonrpc.unanswered_request``. A body that *tries* to be a JSON-RPC answer
  and fails (cases/B27: 400 with ``{"error": "…"}``) is judged as one and
  leaves its request unanswered.
"""

from __future__ import annotations

from typing import Any

from mcptap.model import Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.pairing import BoundedMap

#: RFC 6749 §4.1.2.1 / §5.2, RFC 6750 §3.1, RFC 7591 §3.2.2 error codes
OAUTH_ERRORS = frozenset({
    "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
    "invalid_scope", "access_denied", "unsupported_response_type", "server_error", "temporarily_unavailable",
    "invalid_token", "insufficient_scope", "invalid_redirect_uri", "invalid_client_metadata",
    "invalid_software_statement", "unapproved_software_statement",
})
AUTH_STATUSES = frozenset({401, 403, 407})


def status_of(transport: dict[str, Any] | None) -> int:
    st = transport.get("status") if transport else None
    return st if isinstance(st, int) else 0


def is_http_error_body(value: Any, status: int) -> bool:
    """A JSON body on an error status that is an HTTP/OAuth error object, not
    an attempt at a JSON-RPC message."""
    if status < 400 or not isinstance(value, dict) or "jsonrpc" in value or "id" in value or "method" in value or "result" in value:
        return False
    if status in AUTH_STATUSES:
        return True
    err = value.get("error")
    return isinstance(err, str) and err in OAUTH_ERRORS


class HttpAnswers:
    """Which HTTP exchanges carried a JSON-RPC payload back (bounded)."""

    def __init__(self) -> None:
        self._bodies = BoundedMap(4096)      # exchange -> True: a JSON-RPC(-ish) s2c payload was judged

    def body(self, exchange: Any) -> None:
        """An s2c payload of ``exchange`` was judged as JSON-RPC."""
        if exchange is not None:
            self._bodies.add(exchange, True)

    def answered_by_body(self, exchange: Any) -> bool:
        return bool(self._bodies.get(exchange))


def error_body_finding(status: int, value: dict[str, Any]) -> Finding:
    err = value.get("error")
    what = f" ({str(err)[:40]!r})" if isinstance(err, str) else ""
    return finding("http.error_body", f"{status} body is an HTTP/OAuth error object{what}, not a JSON-RPC message")


def rejected_finding(status: int, requests: list[Any]) -> Finding:
    ids = ", ".join(f"{p.method} id={p.id!r}" for p in requests[:5])
    why = " (authorization)" if status in AUTH_STATUSES else ""
    return finding("http.request_refused", f"POST answered {status}{why} without a JSON-RPC response: request(s) {ids} refused at HTTP level",
                   {"status": status, "requests": [p.seq for p in requests]})
