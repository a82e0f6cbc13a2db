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

A POST answered by a redirect (3xx but 304, RFC 9110 §15.4) without a JSON-RPC
payload was answered at HTTP level too: its requests are not unanswered but
``http.redirected`` (info), naming the ``Location``; a client that follows it
sends them again there with the same ids (a new exchange; not ``jsonrpc.id_reused``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mcptap.model import Direction, Finding, Kind, Message
from mcptap.protocol import urls
from mcptap.protocol.capabilities import declared_but_unsupported
from mcptap.protocol.codes import finding
from mcptap.protocol.excerpt import cut
from mcptap.protocol.http_fields import shown
from mcptap.protocol.jsonrpc import show_id
from mcptap.protocol.lifecycle import SessionState, request_meta
from mcptap.protocol.pairing import BoundedMap, Pairing, Pending

#: RFC 6749 §4.1.2.1 / §5.2, RFC 6750 §3.1, RFC 7591 §3.2.2 error codes
OAUTH_ERRORS = frozenset({
    "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
    "invalid_scope", "access_denied", "unsupported_response_type", "server_error", "temporarily_unavailable",
    "invalid_token", "insufficient_scope", "invalid_redirect_uri", "invalid_client_metadata",
    "invalid_software_statement", "unapproved_software_statement",
})
AUTH_STATUSES = frozenset({401, 403, 407})
#: refusals before the request reached the JSON-RPC layer that a client answers by sending it
#: again, same id (re-authorized, or later): as a redirect, the request is withdrawn, its id free
RETRY_STATUSES = AUTH_STATUSES | {408, 429}
#: an error message saying the session is not (or no longer) known
_SESSION_GONE = re.compile(r"session.{0,40}\b(not found|unknown|invalid|expired|terminated|closed|missing|does not exist)"
                           r"|(no|invalid|unknown|missing) (valid )?session", re.I)


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
    """HTTP error answers of one capture: which exchanges carried a
    JSON-RPC(-ish) payload back (bounded), and the requests they answer or
    leave refused. ``pairing``: the annotator's ``Pairing``; ``clear``: quotes of the
    peer's words in clear (``record --record-secrets``, set by ``HttpJudge``)."""

    def __init__(self, pairing: Pairing) -> None:
        self.pairing = pairing
        self.clear = False
        self._bodies = BoundedMap(4096)      # exchange -> True: a JSON-RPC(-ish) s2c payload was judged
        self._session_errors = BoundedMap(1024)   # exchange -> error message naming the session
        self._hops = BoundedMap(1024)     # (session, id, method) of a redirected request -> targets it was redirected from

    def _loop(self, status: int, target: str | None, mine: list[Pending]) -> list[Finding]:
        """``http.redirect_loop`` once per request that comes back to a target it was redirected from."""
        if target is None:
            return []
        out = []
        for p in mine:
            scope = None if isinstance(p.session, tuple) and p.session[:1] == ("exchange",) else p.session   # stateless: per exchange
            key = (repr(scope), repr(p.id), p.method)
            seen = self._hops.get(key)
            if seen is None:
                seen = {"hops": 0, "from": set(), "flagged": False}
                self._hops.add(key, seen)
            seen["hops"] += 1
            if target in seen["from"] and not seen["flagged"]:
                seen["flagged"] = True
                out.append(loop_finding(status, target, p, seen["hops"]))
            seen["from"].add(target)
        return out

    def _requests_of(self, exchange: Any, requester: Direction) -> list[Pending]:
        return [p for p in self.pairing.pending() if p.exchange == exchange and p.direction is requester]

    def error_payload(self, msg: Message, value: Any, exchange: Any, st: SessionState) -> bool:
        """An s2c payload on an HTTP error status. True when it is an HTTP
        error body (annotated as such, nothing more to judge); else it counts
        as the exchange's answer, and a body that is not JSON-RPC while the
        request's capability was declared is ``capability.declared_but_unsupported``."""
        status = status_of(msg.transport)
        if is_http_error_body(value, status):
            msg.kind, msg.id, msg.has_id = Kind.INVALID, None, False
            msg.findings.append(error_body_finding(status, value, self.clear))
            return True
        if exchange is not None:
            self._bodies.add(exchange, True)
        if isinstance(value, dict):
            self.error(exchange, value.get("error"))
        if isinstance(value, dict) and value.get("jsonrpc") != "2.0" and status not in AUTH_STATUSES:
            mine = self._requests_of(exchange, Direction.C2S)
            if len(mine) == 1 and mine[0].method:
                client_caps = request_meta(mine[0].params)[1] if st.era == "modern" else st.client_caps
                msg.findings.extend(declared_but_unsupported(mine[0].method, Direction.C2S, st.revision, client_caps, st.server_caps,
                                                             f"HTTP {status} with a non-JSON-RPC body"))
        return False

    def error(self, exchange: Any, error: Any) -> None:
        """An s2c JSON-RPC error on ``exchange``: remember it when its message
        names the session (``Session not found``, ``No valid session ID``)."""
        msg = error.get("message") if isinstance(error, dict) else error
        if exchange is not None and isinstance(msg, str) and _SESSION_GONE.search(msg):
            self._session_errors.add(exchange, msg)

    def session_error(self, exchange: Any) -> str | None:
        v = self._session_errors.get(exchange)
        return v if isinstance(v, str) else None

    def idless_error(self, msg: Message, value: Any, code: Any) -> Pending | None:
        """A JSON-RPC error without id on an HTTP error status answers the
        single request of its POST (completed here), else None."""
        if msg.kind is not Kind.ERROR or not isinstance(code, int) or value.get("jsonrpc") != "2.0" or status_of(msg.transport) < 400:
            return None
        mine = self._requests_of(msg.transport.get("exchange") if msg.transport else None, msg.direction.peer)
        if len(mine) != 1:
            return None
        self.pairing.complete(mine[0])
        return mine[0]

    def rejected(self, exchange: Any, status: int, session_of: Callable[[Any], SessionState],
                 location: str | None = None, target: str | None = None, sent: str | None = None) -> list[Finding]:
        """The POST of ``exchange`` got a complete ``status`` response. On an
        error status without a JSON-RPC payload its requests were refused at
        HTTP level: they are answered, with ``http.request_refused`` (info),
        and, outside authorization, ``capability.declared_but_unsupported``
        for a method whose capability the server declared. On a redirect
        (3xx but 304) they are answered with ``http.redirected`` (info;
        ``location``: the response's Location field, ``sent``: the one the tap
        gave the client when it rewrote it); a request redirected again from a
        ``target`` it was already redirected from is ``http.redirect_loop``.
        A request redirected, or refused with a status a client answers by
        sending it again (``RETRY_STATUSES``: 401/403/407 before it
        re-authorizes, 408, 429), is withdrawn: its id and progress token are
        free for that re-send.
        ``session_of``: a request's session key -> its state."""
        redirect = 300 <= status < 400 and status != 304
        if (status < 400 and not redirect) or self._bodies.get(exchange):
            return []
        mine = [p for p in self._requests_of(exchange, Direction.C2S) if not p.cancelled]
        if not mine:
            return []
        if redirect:
            for p in mine:
                self.pairing.withdraw(p)    # the client sends it again, same id, where Location points
            return [redirected_finding(status, location, mine, sent)] + self._loop(status, target, mine)
        out = [rejected_finding(status, mine)]
        for p in mine:
            if status in RETRY_STATUSES:
                self.pairing.withdraw(p)    # the SDK re-authorizes and sends it again with its id
            else:
                self.pairing.complete(p)
            if status not in AUTH_STATUSES and p.method:
                st = session_of(p.session)
                client_caps = request_meta(p.params)[1] if st.era == "modern" else st.client_caps
                out += declared_but_unsupported(p.method, Direction.C2S, p.revision or st.revision, client_caps, st.server_caps,
                                                f"HTTP {status} without a JSON-RPC response")
        return out


def method_not_found(p: Pending, st: SessionState, revision: str | None) -> list[Finding]:
    """Request ``p`` answered -32601: ``capability.declared_but_unsupported``
    when the receiver declared the capability that promises its method."""
    if not p.method:
        return []
    client_caps = request_meta(p.params)[1] if st.era == "modern" else st.client_caps
    return declared_but_unsupported(p.method, p.direction, revision, client_caps, st.server_caps, "-32601 (method not found)")


def error_body_finding(status: int, value: dict[str, Any], clear: bool = False) -> Finding:
    """``http.error_body`` quoting the body's ``error`` string (the peer's) as other findings quote
    peer values (``http_fields.shown``): token shapes as placeholders (in clear when ``clear``,
    ``record --record-secrets``), found in the whole string before the quote is cut to 40
    characters (a cut token is no longer one), controls escaped."""
    err = value.get("error")
    what = f" ({cut(shown(err, clear) or '', 40)!r})" if isinstance(err, str) else ""
    return finding("http.error_body", f"{status} body is an HTTP/OAuth error object{what}, not a JSON-RPC message")


def redirected_finding(status: int, location: str | None, requests: list[Pending], sent: str | None = None) -> Finding:
    ids = ", ".join(f"{p.method} id={show_id(p.id)}" for p in requests[:5])
    # scheme, authority and path only: a query may carry a credential
    where = repr(urls.public(location)) if location else "no Location"
    if location and sent:
        where += f", given to the client as {urls.public(sent)!r}"
    return finding("http.redirected", f"POST answered {status} (redirect to {where}) without a JSON-RPC response: request(s) {ids} "
                   "answered at HTTP level; a client that follows it sends them again there",
                   {"status": status, "location": urls.public(location) if location else None,
                    "requests": [p.seq for p in requests]})


def loop_finding(status: int, target: str, p: Pending, hops: int) -> Finding:
    return finding("http.redirect_loop", f"POST {urls.public(target)!r} answered {status} again for {p.method} id={show_id(p.id)}, "
                   f"which was already redirected from there ({hops} redirects so far): a redirect loop; the request is never answered",
                   {"status": status, "target": urls.public(target), "request": p.seq})


def rejected_finding(status: int, requests: list[Pending]) -> Finding:
    ids = ", ".join(f"{p.method} id={show_id(p.id)}" for p in requests[:5])
    why = " (authorization)" if status in AUTH_STATUSES else ""
    return finding("http.request_refused", f"POST answered {status}{why} without a JSON-RPC response: request(s) {ids} refused at HTTP level",
                   {"status": status, "requests": [p.seq for p in requests]})
