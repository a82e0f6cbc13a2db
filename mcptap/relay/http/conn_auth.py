"""One exchange's OAuth fronting inside a client connection (pure, sans-IO, h11 events).

``relay/http/auth.py`` decides what to rewrite; this module applies it to one
exchange of ``ConnRelay``: where the request goes, a request held until its form
body's ``resource`` is mapped back, response headers fronted, and a metadata
response held until its document is rewritten. Held bodies are bounded
(``auth.MAX_REWRITE_BODY``): past the bound they are passed on unchanged.

Each method returns the h11 events to send on (upstream or client) and appends
``AuthRewritten`` facts to ``out``; nothing here raises on peer input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import h11

from mcptap.protocol.excerpt import cut
from mcptap.relay.http import auth as oauth
from mcptap.relay.http import heads
from mcptap.relay.http.events import AuthRewritten, Upstream
from mcptap.relay.http.guard import shown_target

Headers = list[tuple[bytes, bytes]]
#: response fields ``AuthExchange.response_head`` may front (lower case)
_FRONTED = frozenset({b"www-authenticate", b"location", b"set-cookie"})


@dataclass(slots=True)
class AuthExchange:
    """OAuth state of one exchange (see module doc). ``kind``: the route kind
    (``auth.MCP`` … ``auth.AS``); ``origin``/``upstream``/``target``: where the
    request goes; ``served_url``: its URL there (for the RFC 9728 §3.3 check)."""

    front: oauth.AuthFront
    exchange: int
    conn: int
    kind: str
    origin: int
    upstream: Upstream
    target: bytes
    req_head: h11.Request | None = None
    req_hold: bytearray | None = None
    resp_head: h11.Response | None = None
    resp_hold: bytearray | None = None
    #: a refusal's detail and findings (``refused``): a root-relative request from a fronted page
    refusal: str = ""
    notes: tuple[tuple[str, str], ...] = ()

    @classmethod
    def plan(cls, front: oauth.AuthFront, exchange: int, conn: int, target: bytes, raw: Headers,
             mcp_path: str, clear: bool = False) -> AuthExchange:
        """Route one request (``front`` is the view for the client's Host); a refusal quotes
        its target as the request record holds it (``clear``: ``--record-secrets``)."""
        route = front.route(target)
        kind = route.kind
        path = target.partition(b"?")[0].decode("latin-1")
        if kind == oauth.MCP and path.rstrip("/") != mcp_path.rstrip("/") and (
                path in front.as_paths or _is_form(raw) or b"resource=" in target.partition(b"?")[2]):
            # an authorization server on the upstream's own origin: an endpoint its metadata names, a
            # 2025-03-26 default one (/authorize, /token, /register), a form or a resource indicator;
            # never the MCP endpoint itself (a JSON-RPC POST sent as a form is still JSON-RPC)
            kind = oauth.AS
        up = front.origins[route.origin] if route.kind != oauth.UNKNOWN_FRONT else front.origins[0]
        x = cls(front, exchange, conn, kind, route.origin, up, route.target)
        page = front.referred_from(next((v for n, v in raw if n.lower() == b"referer"), None)) if route.origin == 0 else 0
        if page:
            x.kind = oauth.UNKNOWN_FRONT
            x.refusal = (f"{cut(shown_target(target, clear), 200)!r} requested by a page of the authorization server fronted at "
                         f"{oauth.PREFIX}{page}/ (a root-relative URL): not sent to the MCP upstream")
            x.notes = (("auth.root_relative_refused", x.refusal + "; the tap can only front that server's URLs under its prefix"),)
        return x

    @property
    def refused(self) -> str | None:
        """Why the tap answers this request itself (404), or None."""
        if self.kind != oauth.UNKNOWN_FRONT:
            return None
        return self.refusal or "no authorization server is fronted at this path"

    @property
    def served_url(self) -> str:
        """The request's URL at its origin, without the query (for the RFC 9728 §3.3 check)."""
        return self.upstream.origin + self.target.decode("latin-1").partition("?")[0]

    @property
    def recorded_kind(self) -> str:
        """The ``auth`` tag of the exchange's records ("" for MCP traffic)."""
        return "" if self.kind == oauth.MCP else self.kind

    # -- request ------------------------------------------------------------------------
    def request_head(self, method: bytes, headers: Headers, raw: Headers, out: list[Any], parsed: bool = False) -> list[Any]:
        """The request head to send upstream now ([] while it is held for its body).
        ``parsed``: ``headers`` need no validation (``relay/http/heads.py``)."""
        target = self.target
        if self.kind != oauth.MCP:
            new = self.front.request_target(target)
            if new != target:
                out.append(AuthRewritten(self.exchange, self.conn, "target", target.decode("latin-1"), new.decode("latin-1")))
                target = new
        if self.origin > 0 and any(n.lower() == b"cookie" for n, _ in headers):
            headers = self._own_cookies(headers, out)
            parsed = False
        head = heads.request(method, target, headers) if parsed else h11.Request(method=method, target=target, headers=headers)
        if self.kind == oauth.AS and _is_form(raw):
            self.req_head, self.req_hold = head, bytearray()
            return []
        return [head]

    def _own_cookies(self, headers: Headers, out: list[Any]) -> Headers:
        """``Cookie`` fields for a fronted server: the MCP upstream's (and other
        fronted servers') cookies removed, its own named as it set them
        (``relay/http/cookies.py``)."""
        kept: Headers = []
        for name, value in headers:
            if name.lower() == b"cookie":
                new = self.front.cookie(value, self.origin)
                if new != value:
                    out.append(AuthRewritten(self.exchange, self.conn, "cookie", value.decode("latin-1"),
                                             new.decode("latin-1") if new is not None else ""))
                if new is None:
                    continue
                value = new
            kept.append((name, value))
        return kept

    @property
    def holding_request(self) -> bool:
        return self.req_hold is not None

    def request_data(self, data: bytes, out: list[Any]) -> list[Any]:
        assert self.req_hold is not None
        self.req_hold += data
        return self.release_request(out, rewrite=False) if len(self.req_hold) > oauth.MAX_REWRITE_BODY else []

    def release_request(self, out: list[Any], rewrite: bool) -> list[Any]:
        """The held head and body: the form's ``resource`` mapped back when the
        body is complete (``rewrite``), else unchanged."""
        head, body = self.req_head, bytes(self.req_hold or b"")
        self.req_head = self.req_hold = None
        if head is None:
            return []
        # Expect: 100-continue was answered by the tap when it held the head (conn.py); the body is here now
        headers = [(n, v) for n, v in head.headers.raw_items() if n.lower() != b"expect"]
        if rewrite:
            new = self.front.request_form(body)
            if new != body:
                out.append(AuthRewritten(self.exchange, self.conn, "form", body.decode("latin-1"), new.decode("latin-1")))
                body = new
                headers = _with_length(headers, len(body))
        events: list[Any] = [h11.Request(method=head.method, target=head.target, headers=headers)]
        return events + [h11.Data(data=body)] if body else events

    # -- response -----------------------------------------------------------------------
    def response_head(self, ev: h11.Response, headers: Headers, out: list[Any]) -> list[Any]:
        """The response head to send to the client now ([] while held):
        ``WWW-Authenticate``, ``Location`` (``AuthFront.location``) fronted, and
        a fronted origin's ``Set-Cookie`` scoped to its prefix."""
        front = self.front
        if _FRONTED.isdisjoint([n.lower() for n, _ in headers]):
            new_headers, changed = headers, False      # nothing to front (the common case): the loop below keeps every value
        else:
            new_headers, changed = self._fronted(headers, out)
        notes = front.take_notes()
        if notes:
            out.append(AuthRewritten(self.exchange, self.conn, "upstream", "", "", tuple(notes)))
        # unchanged fields are h11's parser's own: no re-validation (relay/http/heads.py)
        head = (h11.Response(status_code=ev.status_code, headers=new_headers, reason=ev.reason) if changed
                else heads.passed(ev, new_headers))
        if self.kind in (oauth.PRM, oauth.AS_META) and ev.status_code == 200 and not _encoded(new_headers):
            self.resp_head, self.resp_hold = head, bytearray()
            return []
        return [head]

    def _fronted(self, headers: Headers, out: list[Any]) -> tuple[Headers, bool]:
        """``response_head``'s fields with the fronted ones rewritten, and whether any changed."""
        front = self.front
        new_headers = []
        changed = False
        for name, value in headers:
            low = name.lower()
            new = value
            if low == b"www-authenticate":
                new = front.www_authenticate(value)
            elif low == b"location":
                new = front.location(value, self.origin)
            elif low == b"set-cookie" and self.origin > 0:
                new = front.set_cookie(value, self.origin, self.target.decode("latin-1").partition("?")[0])
            if new != value and not heads.valid_value(new):
                new = value         # a rewrite h11 would refuse to send: the upstream's value passes unchanged
            if new != value:
                changed = True
                out.append(AuthRewritten(self.exchange, self.conn, low.decode("latin-1"), value.decode("latin-1"),
                                         new.decode("latin-1"), tuple(front.take_notes())))
            new_headers.append((name, new))
        return new_headers, changed

    @property
    def holding_response(self) -> bool:
        return self.resp_hold is not None

    def response_data(self, data: bytes, out: list[Any]) -> list[Any]:
        assert self.resp_hold is not None
        self.resp_hold += data
        return self.release_response(out, rewrite=False) if len(self.resp_hold) > oauth.MAX_REWRITE_BODY else []

    def release_response(self, out: list[Any], rewrite: bool) -> list[Any]:
        """The held head and document: rewritten (``auth.py``) when complete,
        else unchanged."""
        head, body = self.resp_head, bytes(self.resp_hold or b"")
        self.resp_head = self.resp_hold = None
        if head is None:
            return []
        headers = list(head.headers.raw_items())
        if rewrite:
            front = self.front
            new, notes = front.prm_document(body, self.served_url) if self.kind == oauth.PRM else front.as_document(body)
            notes += front.take_notes()
            out.append(AuthRewritten(self.exchange, self.conn, self.kind, body.decode("utf-8", "replace"),
                                     new.decode("utf-8", "replace"), tuple(notes)))
            if new != body:
                body = new
                headers = _with_length(headers, len(body))
        events: list[Any] = [h11.Response(status_code=head.status_code, headers=headers, reason=head.reason)]
        return events + [h11.Data(data=body)] if body else events


def _is_form(raw: Headers) -> bool:
    ctype = next((v for n, v in raw if n.lower() == b"content-type"), b"")
    return ctype.split(b";")[0].strip().lower() == b"application/x-www-form-urlencoded"


def _encoded(headers: Headers) -> bool:
    """A body with a content coding (gzip, …) is passed on as is, never rewritten."""
    return any(n.lower() == b"content-encoding" and v.strip().lower() not in (b"", b"identity") for n, v in headers)


def _with_length(headers: Headers, length: int) -> Headers:
    """Headers for a rewritten whole body: one Content-Length, no Transfer-Encoding."""
    out = [(n, v) for n, v in headers if n.lower() not in (b"content-length", b"transfer-encoding")]
    out.append((b"Content-Length", str(length).encode()))
    return out
