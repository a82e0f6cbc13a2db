"""OAuth exchanges through the HTTP tap as capture records (pure; the recorder is passed in).

Discovery and token exchanges (``relay/http/auth.py`` route kinds "prm",
"as_meta", "as") are HTTP, not MCP: they become ``http`` records tagged with
``auth`` — ``request``, ``request_body``, ``response``, ``response_body``,
``auth_rewrite`` (what the tap changed on the way) and ``end`` — and are never
framed as JSON-RPC. Every credential in them is a placeholder (the same stable
placeholders as other credentials, ``mcptap/redact``): authorization codes,
PKCE verifiers, client secrets, access/refresh/ID tokens, client assertions,
registration access tokens, in query strings, form bodies, JSON bodies and
``Location`` redirects, unless the user asked for ``--record-secrets``.

Findings (protocol/codes.py ``auth.*``): what the tap's rewriting noticed
(unparseable metadata, a resource that does not match its URL, a refused
metadata host) and, for any response, a 401 without ``WWW-Authenticate`` or a
403 ``insufficient_scope`` challenge without ``scope`` (``response_findings``).
"""

from __future__ import annotations

from typing import Any

import orjson

from mcptap.capture.format import encode_bytes
from mcptap.model import Finding
from mcptap.protocol import urls
from mcptap.protocol.codes import finding
from mcptap.recorder import Recorder
from mcptap.redact import placeholder
from mcptap.redact.default import default_redactor
from mcptap.redact.headers import redact_header
from mcptap.relay.http import events as r
from mcptap.relay.http.credentials import SECRET_PARAMS, URL_HEADERS, is_secret_param, scrub_location, scrub_query, scrub_url_params

__all__ = ["SECRET_PARAMS", "AuthObserver", "is_secret_param", "redirect_findings", "response_findings", "scrub_body", "scrub_json",
           "scrub_query", "scrub_url_params"]

_BODY_KEEP = 64 * 1024


def scrub_json(value: Any) -> Any:
    """A JSON value with credential members (at any depth) as placeholders."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, str) and x and is_secret_param(k):
                    v[k] = placeholder(x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, (dict, list)))
    return value


def scrub_body(body: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    """A request/response body with its credentials as placeholders: form
    bodies by parameter, JSON bodies by member; any other UTF-8 text (a text
    refusal, an acknowledgement's first bytes cutting JSON short) by the text
    rules ``mcptap scrub`` applies to strings (token shapes, ``"password": "…"``);
    bytes that are no UTF-8 unchanged."""
    ctype = next((v for n, v in headers if n.lower() == b"content-type"), b"").split(b";")[0].strip().lower()
    if ctype == b"application/x-www-form-urlencoded":
        try:
            return scrub_query(body.decode("ascii")).encode("utf-8")
        except UnicodeDecodeError:
            return body
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _scrub_text(body)
    return orjson.dumps(scrub_json(value)) if isinstance(value, (dict, list)) else body


def _scrub_text(body: bytes) -> bytes:
    tail = b""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            return body
        # a kept head cut inside a character: the text before it, the cut bytes after
        text, tail = body[:exc.start].decode("utf-8"), body[exc.start:]
    out, hits = default_redactor().string(text)
    return out.encode("utf-8") + tail if hits else body


def scrub_error_body(body: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    """``scrub_body`` for an error status's body the capture frames as a message (an OAuth error
    object on a request's POST): the same credential scrubbing as the ``response_body`` record of
    the same body on a notification's POST gets; the bytes unchanged when it holds no credential."""
    scrubbed = scrub_body(body, headers)
    try:
        return body if orjson.loads(scrubbed) == orjson.loads(body) else scrubbed
    except orjson.JSONDecodeError:
        return scrubbed


def response_findings(status: int, headers: list[tuple[bytes, bytes]]) -> list[Finding]:
    """Challenge findings for any response (MCP authorization spec, RFC 6750 §3)."""
    if status not in (401, 403):
        return []
    challenges = [v.decode("latin-1") for n, v in headers if n.lower() == b"www-authenticate"]
    if status == 401 and not challenges:
        return [finding("auth.challenge_missing", "401 without a WWW-Authenticate challenge: clients cannot discover "
                        "the authorization server")]
    fs = []
    for c in challenges:
        low = c.lower()
        if status == 403 and "insufficient_scope" in low and "scope=" not in low.replace("scope=\"", "scope="):
            fs.append(finding("auth.scope_missing", "403 insufficient_scope challenge without a scope parameter: "
                              "the client cannot tell which scope to ask for"))
    return fs


def redirect_findings(target: str, status: int, headers: list[tuple[bytes, bytes]], shown: str | None = None) -> list[Finding]:
    """A redirect of an OAuth request to itself (``auth.redirect_loop``): the
    client would follow it forever; the tap never follows redirects itself.
    ``shown``: the target as the request record holds it (credentials as placeholders)."""
    if status not in (301, 302, 303, 307, 308):
        return []
    loc = next((v.decode("latin-1") for n, v in headers if n.lower() == b"location"), None)
    if loc is None:
        return []
    joined = urls.join("http://x" + target, loc)
    u, here = urls.split(joined) if joined is not None else None, urls.split("http://x" + target)
    if u is None or here is None:
        return []
    # an absolute Location names the server's own origin (the tap does not know it here): path and query decide
    if (u.path, u.query) == (here.path, here.query):
        return [finding("auth.redirect_loop", f"{status} redirects {shown if shown is not None else target!r} to itself: a client following redirects loops")]
    return []


class AuthObserver:
    """Records the OAuth exchanges of one tap (see module doc). ``rec``: the
    Recorder API (``clock()``, ``record(type, findings=, **fields)``);
    ``headers_json``: the observer's credential-redacting header encoder."""

    def __init__(self, rec: Recorder, headers_json: Any, record_secrets: bool) -> None:
        self.rec = rec
        self.headers_json = headers_json
        self.record_secrets = record_secrets
        #: exchange id -> [kind, t0, request headers, request body, response headers, response body, sizes]
        self._ex: dict[int, dict[str, Any]] = {}

    def owns(self, exchange: int) -> bool:
        return exchange in self._ex

    def _heads(self, headers: list[tuple[bytes, bytes]]) -> list[list[str]]:
        # Location, Content-Location, Refresh, Link: scrubbed by the encoder (credentials.scrub_location)
        out: list[list[str]] = self.headers_json(headers)
        return out

    def _body(self, e: dict[str, Any], event: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        if not body:
            return
        kept = body if self.record_secrets else scrub_body(body, headers)
        fields: dict[str, Any] = {"event": event, "exchange": e["id"], "conn": e["conn"], "auth": e["kind"]}
        if len(kept) > _BODY_KEEP:
            fields["truncated_from"] = len(kept)
            kept = kept[:_BODY_KEEP]
        encode_bytes(kept, "body", fields)
        self.rec.http(**fields)

    def started(self, it: r.RequestStarted) -> None:
        e = {"id": it.exchange, "conn": it.conn, "kind": it.auth, "t0": self.rec.clock(), "req_headers": it.headers,
             "target": it.target,
             "req": bytearray(), "resp_headers": [], "resp": bytearray(), "req_bytes": 0, "resp_bytes": 0}
        self._ex[it.exchange] = e
        target = e["shown"] = it.target if self.record_secrets else scrub_url_params(it.target)
        self.rec.http(event="request", exchange=it.exchange, conn=it.conn, auth=it.auth, method=it.method,
                        target=target, version=it.http_version, headers=self._heads(it.headers))

    def handle(self, it: Any) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        t = type(it)
        if t is r.RequestBody:
            e["req_bytes"] += len(it.data)
            if len(e["req"]) < _BODY_KEEP * 2:
                e["req"] += it.data
        elif t is r.RequestEnded:
            e["req_ended"] = True
            self._body(e, "request_body", bytes(e["req"]), e["req_headers"])
            if "held" in e:
                self._end(e, e["held"])
        elif t is r.ResponseStarted:
            fs = response_findings(it.status, it.headers) + redirect_findings(e["target"], it.status, it.headers, e["shown"])
            if not it.informational:
                e["resp_headers"] = it.headers
            self.rec.http(findings=fs, event="response", exchange=it.exchange, conn=it.conn, auth=e["kind"],
                            status=it.status, reason=it.reason, headers=self._heads(it.headers),
                            latency_us=self.rec.clock() - e["t0"], **({"informational": True} if it.informational else {}),
                            **({"tap": True} if it.tap else {}))
        elif t is r.ResponseBody:
            e["resp_bytes"] += len(it.data)
            if len(e["resp"]) < _BODY_KEEP * 2:
                e["resp"] += it.data
        elif t is r.AuthRewritten:
            self.rewritten(it, e["kind"])
        elif t is r.ResponseEnded:
            if it.how == "complete" and not e.get("req_ended"):
                e["held"] = it          # answered before the request body came: ends with the request or the connection
                return
            self._end(e, it)

    def conn_closed(self, conn: int) -> None:
        """Connection ``conn`` closed: exchanges answered early whose request never ended end now."""
        for e in [e for e in self._ex.values() if e["conn"] == conn and "held" in e]:
            if e["req"]:
                self._body(e, "request_body", bytes(e["req"]), e["req_headers"])
            self._end(e, e["held"], cut=True)

    def _end(self, e: dict[str, Any], it: r.ResponseEnded, cut: bool = False) -> None:
        self._ex.pop(it.exchange, None)
        self._body(e, "response_body", bytes(e["resp"]), e["resp_headers"])
        fields: dict[str, Any] = {"event": "end", "exchange": it.exchange, "conn": it.conn, "auth": e["kind"],
                                  "how": it.how, "request_bytes": e["req_bytes"], "response_bytes": e["resp_bytes"],
                                  "duration_us": self.rec.clock() - e["t0"]}
        if it.detail:
            fields["detail"] = it.detail
        if cut and e["req_bytes"]:
            fields["request_cut"] = True
        self.rec.http(**fields)

    def rewritten(self, it: r.AuthRewritten, kind: str) -> None:
        """An ``auth_rewrite`` record: what the tap changed (credentials scrubbed)."""
        fs = [finding(code, msg) for code, msg in it.notes]
        if it.what == "upstream":
            self.rec.http(findings=fs, event="auth_note", exchange=it.exchange, conn=it.conn, auth=kind)
            return
        orig, new = it.original, it.rewritten
        if not self.record_secrets:
            if it.what == "target":
                orig, new = scrub_url_params(orig), scrub_url_params(new)
            elif it.what.encode() in URL_HEADERS:      # location, content-location, refresh, link
                name = it.what.encode()
                orig, new = scrub_location(name, orig), scrub_location(name, new)
            elif it.what == "form":
                orig, new = scrub_query(orig), scrub_query(new)
            elif it.what in ("set-cookie", "cookie"):
                orig, new = redact_header(it.what, orig), redact_header(it.what, new)
        self.rec.http(findings=fs, event="auth_rewrite", exchange=it.exchange, conn=it.conn, auth=kind,
                        what=it.what, original=orig, rewritten=new)
