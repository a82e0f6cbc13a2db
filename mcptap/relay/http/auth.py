"""OAuth through the HTTP tap: one coherent resource for the client (pure, sans-IO).

The MCP authorization spec (2025-06-18 and later, "Authorization") has the client
discover a server's authorization servers from OAuth 2.0 Protected Resource
Metadata (RFC 9728), check that the metadata's ``resource`` is the URL it
connected to (RFC 9728 §3.3), and ask for tokens bound to that resource (RFC 8707
resource indicators). Through a reverse-proxy tap the client connected to the
*tap's* URL while the server's metadata names the *upstream's*: without help the
client fetches the metadata from the upstream directly (the capture never sees
it) and stops with a resource mismatch.

``AuthFront`` presents the tap as the resource while the upstream keeps seeing the
real one:

* URLs the upstream's own metadata names are *fronted*: the upstream origin maps
  to the tap's origin (same path), any other origin named there (an authorization
  server, a metadata host) to a tap-local prefix ``/.mcptap/o/<n>``. Only origins
  learned from the upstream's ``WWW-Authenticate`` challenges and metadata
  documents are fronted, so the tap never becomes an open proxy. A non-loopback
  origin named by a loopback upstream is not fronted (``auth.metadata_host_refused``).
* outward (responses): ``resource_metadata`` in ``WWW-Authenticate`` (401 and
  403), the protected resource metadata document (``resource``,
  ``authorization_servers``), authorization server metadata (RFC 8414) and OpenID
  discovery documents (``issuer`` and every endpoint URL), and the RFC 9207 ``iss``
  parameter of an authorization response redirect are mapped to tap URLs;
* inward (requests): a ``resource`` parameter naming the tap's resource, in a
  query (authorization request) or a form body (token, refresh, client
  credentials), is mapped back to the upstream's resource. Nothing else of a
  request changes: PKCE, client authentication (``client_secret_basic``,
  ``private_key_jwt``), dynamic client registration (RFC 7591) and client ID
  metadata documents pass through.

Routing: ``route(target)`` decides which origin a request goes to and what kind
of exchange it is (``mcp`` for everything not auth-related). A fronted server's
own URLs are kept under its prefix: its ``Location`` values (absolute, or
root-relative ``/login``) and ``Set-Cookie`` paths and names (``location``,
``set_cookie``), and the ``Cookie`` it is sent keeps only its own cookies
(``cookie``; ``relay/http/cookies.py``). A root-relative URL inside a fronted server's page (a link, a
form, a script's fetch) cannot be: the browser asks the tap for ``/login``,
which is the MCP upstream's path. When its ``Referer`` names a fronted page
(``referred_from``) the tap refuses it (404, ``auth.root_relative_refused``)
rather than send that server's form data to the MCP upstream; without a
``Referer`` (``Referrer-Policy: no-referrer``) the tap cannot tell (a known limit). RFC 8414 §3.1 puts
the well-known segment between the authority and the issuer's path, so a fronted
issuer ``http://tap/.mcptap/o/1/tenant`` is discovered at
``http://tap/.well-known/oauth-authorization-server/.mcptap/o/1/tenant``; both
that form and the OpenID path-appended form are routed back to origin 1.

Nothing here does I/O or raises on peer input; malformed documents are passed on
unchanged with a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import orjson

from mcptap.protocol import urls
from mcptap.relay.http.auth_docs import DEFAULT_AS_PATHS, WK_PRM, is_loopback, json_object, resource_candidates
from mcptap.relay.http.cookies import inward, scoped
from mcptap.relay.http.cookies import tag as cookie_tag
from mcptap.relay.http.events import Upstream

PREFIX = "/.mcptap/o/"
WK_AS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
#: largest body the tap holds to rewrite (metadata documents, token requests)
MAX_REWRITE_BODY = 256 * 1024
#: RFC 8414 §2 / OpenID Discovery fields whose values are URLs on the server
AS_URL_FIELDS = (
    "issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint",
    "introspection_endpoint", "jwks_uri", "userinfo_endpoint", "pushed_authorization_request_endpoint",
    "device_authorization_endpoint", "end_session_endpoint",
)
_RESOURCE_METADATA = re.compile(r'(resource_metadata\s*=\s*")([^"]*)(")', re.IGNORECASE)

# route kinds
MCP = "mcp"              # not auth-related: forwarded as before
PRM = "prm"              # protected resource metadata document (RFC 9728)
AS_META = "as_meta"      # authorization server metadata (RFC 8414) or OpenID discovery
AS = "as"                # any other request to a fronted authorization-server origin
UNKNOWN_FRONT = "unknown_front"   # /.mcptap/o/<n> for an n the upstream never named: 404


@dataclass(frozen=True, slots=True)
class Route:
    """Where one request goes. ``origin``: index into ``AuthFront.origins`` (0 =
    the upstream); ``target``: the request target to send there (bytes, the
    ``/.mcptap/o/<n>`` prefix removed); ``kind``: MCP, PRM, AS_META, AS or
    UNKNOWN_FRONT."""

    origin: int
    target: bytes
    kind: str


@dataclass(slots=True)
class AuthFront:
    """The fronting state of one tap (see module doc).

    ``upstream``: the MCP server; ``tap_origin``: ``http://host:port`` of the
    tap as clients reach it. ``origins[0]`` is the upstream; others are added by
    ``front()`` as the upstream's metadata names them. ``notes``: findings to
    report (code, message) collected since the last ``take_notes()``.
    """

    upstream: Upstream
    tap_origin: str
    origins: list[Upstream] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    #: (origin index, path) of metadata documents a challenge named at a path other
    #: than the well-known one (RFC 9728 §5.1 lets ``resource_metadata`` be any URL)
    prm_paths: set[tuple[int, str]] = field(default_factory=set)
    #: paths on the upstream's own origin that authorization server metadata names as
    #: endpoints (a co-hosted authorization server: /register, /authorize, /token, …)
    as_paths: set[str] = field(default_factory=lambda: set(DEFAULT_AS_PATHS))

    def __post_init__(self) -> None:
        if not self.origins:
            self.origins.append(Upstream(self.upstream.scheme, self.upstream.host, self.upstream.port, "/"))

    # -- the resource URLs ------------------------------------------------------------
    @property
    def tap_resource(self) -> str:
        """The MCP endpoint URL as the client knows it (tap origin + upstream path)."""
        return self.tap_origin + self.upstream.path

    @property
    def upstream_resource(self) -> str:
        return self.upstream.origin + self.upstream.path

    def at(self, authority: str | None) -> AuthFront:
        """This front as seen by a client that reached the tap as ``authority``
        (its ``Host``; None: the listen address). Shares the fronted origins."""
        if not authority:
            return self
        return AuthFront(self.upstream, f"http://{authority}", self.origins, self.notes, self.prm_paths, self.as_paths)

    def take_notes(self) -> list[tuple[str, str]]:
        # emptied in place: the per-Host views of ``at()`` share this list
        notes = self.notes[:]
        self.notes.clear()
        return notes

    # -- origins ------------------------------------------------------------------------
    def _index(self, scheme: str, host: str, port: int) -> int | None:
        for i, o in enumerate(self.origins):
            if o.scheme == scheme and o.host.lower() == host.lower() and o.port == port:
                return i
        return None

    def front(self, url: str, *, learn: bool) -> str:
        """``url`` as the client should see it: a URL on a fronted origin becomes
        a tap URL; with ``learn`` an absolute http(s) URL on a new origin is
        fronted first (unless refused: then it is returned unchanged, with a
        note). Anything else (relative, other schemes, unparseable) is kept."""
        u = urls.split(url)
        if u is None or u.scheme not in ("http", "https") or not u.hostname:
            return url
        port = urls.port_of(u) or 80
        i = self._index(u.scheme, u.hostname, port)
        if i is None:
            if not learn:
                return url
            if is_loopback(self.upstream.host) and not is_loopback(u.hostname):
                self.notes.append(("auth.metadata_host_refused",
                                   f"the loopback upstream names {u.scheme}://{u.netloc} in its authorization metadata; "
                                   "not fronted (a loopback tap only fronts loopback hosts): the client goes there directly"))
                return url
            self.origins.append(Upstream(u.scheme, u.hostname, port, "/"))
            i = len(self.origins) - 1
        tap = urls.split(self.tap_origin)
        if tap is None:
            return url
        path = u.path if i == 0 else f"{PREFIX}{i}{u.path or ''}"
        userinfo, at, _ = u.netloc.rpartition("@")      # kept: the client sends it on (it is never recorded)
        return urlunsplit((tap.scheme, userinfo + at + tap.netloc, path or "/", u.query, u.fragment))

    def unfront(self, url: str) -> str:
        """The inverse of ``front`` for a tap URL (else ``url`` unchanged)."""
        try:
            u = urlsplit(url)
            tap = urlsplit(self.tap_origin)
        except ValueError:
            return url
        if u.scheme != tap.scheme or u.netloc.lower() != tap.netloc.lower():
            return url
        r = self.route(u.path.encode("latin-1", "replace"))
        if r.kind == UNKNOWN_FRONT:
            return url
        o = self.origins[r.origin]
        return urlunsplit((o.scheme, o.authority, r.target.decode("latin-1"), u.query, u.fragment))

    # -- routing --------------------------------------------------------------------------
    def route(self, target: bytes) -> Route:
        """Route one request target (origin-form, bytes) — see module doc."""
        t = target.decode("latin-1")
        path, sep, query = t.partition("?")
        origin = 0
        if path.startswith(PREFIX):
            origin, path = self._strip_prefix(path[len(PREFIX):])
        else:
            for wk in (WK_PRM, *WK_AS):
                if path.startswith(wk + PREFIX):
                    n, rest = self._strip_prefix(path[len(wk + PREFIX):])
                    origin, path = n, wk + (rest if rest != "/" else "")
                    break
        if origin < 0:
            return Route(0, target, UNKNOWN_FRONT)
        new = (path + sep + query).encode("latin-1") if origin else target
        if path.startswith(WK_PRM) or (origin, path) in self.prm_paths:
            kind = PRM
        elif path.startswith(WK_AS) or path.endswith(WK_AS[1]):
            kind = AS_META
        elif origin:
            kind = AS
        else:
            kind = MCP
        return Route(origin, new, kind)

    def referred_from(self, referer: bytes | None) -> int:
        """The fronted origin (> 0) whose page a request's ``Referer`` names on
        this tap (``http://tap/.mcptap/o/<n>/…``), else 0."""
        if not referer:
            return 0
        try:
            u, tap = urlsplit(referer.decode("latin-1").strip()), urlsplit(self.tap_origin)
        except ValueError:
            return 0
        if u.netloc.lower() != tap.netloc.lower() or not u.path.startswith(PREFIX):
            return 0
        return max(self._strip_prefix(u.path[len(PREFIX):])[0], 0)

    def _strip_prefix(self, rest: str) -> tuple[int, str]:
        num, slash, tail = rest.partition("/")
        if not num.isdigit() or not 0 < int(num) < len(self.origins):
            return -1, ""
        return int(num), "/" + tail if slash else "/"

    # -- outward ------------------------------------------------------------------------
    def www_authenticate(self, value: bytes) -> bytes:
        """A ``WWW-Authenticate`` value with ``resource_metadata="…"`` fronted."""
        s = value.decode("latin-1")
        def one(m: re.Match[str]) -> str:
            url = self.front(m.group(2), learn=True)
            r = self.route(urlsplit(url).path.encode("latin-1", "replace")) if url != m.group(2) else None
            if r is not None and r.kind != UNKNOWN_FRONT:
                self.prm_paths.add((r.origin, r.target.decode("latin-1")))
            return m.group(1) + url + m.group(3)

        new = _RESOURCE_METADATA.sub(one, s)
        return new.encode("latin-1", "replace") if new != s else value

    def location(self, value: bytes, origin: int = 0) -> bytes:
        """A ``Location`` of a response from ``origin`` (index into ``origins``):
        a URL on a fronted authorization-server origin (absolute, or
        ``//host:port/…``) becomes its tap URL; a root-relative one (``/login``)
        from such an origin moves under its prefix (``/.mcptap/o/<n>/login``),
        else the browser would take it, with the server's form data, to the MCP
        upstream. The upstream's own origin is ``rewrite.location``'s. Then an
        authorization response redirect's RFC 9207 ``iss`` parameter is fronted
        (the client compares it with the fronted issuer); a redirect to the
        client (its ``redirect_uri``) stays otherwise."""
        s = value.decode("latin-1")
        t = s.strip()
        moved = self._moved(t, origin)
        if moved is not None:
            s = moved
            value = s.encode("latin-1", "replace")
        u = urls.split(s)
        if u is None or "iss=" not in u.query:
            return value
        pairs = parse_qsl(u.query, keep_blank_values=True)
        out = [(k, self.front(v, learn=False) if k == "iss" else v) for k, v in pairs]
        if out == pairs:
            return value
        return urlunsplit((u.scheme, u.netloc, u.path, urlencode(out, quote_via=quote), u.fragment)).encode("latin-1", "replace")

    def _moved(self, t: str, origin: int) -> str | None:
        if t.startswith("/") and not t.startswith("//"):
            return f"{PREFIX}{origin}{t}" if origin > 0 else None
        absolute = f"{self.origins[origin].scheme}:{t}" if t.startswith("//") else t
        u = urls.split(absolute)
        if u is None:
            return None
        i = self._index(u.scheme, u.hostname or "", urls.port_of(u) or 80) if u.scheme in ("http", "https") else None
        return self.front(absolute, learn=False) if i else None

    def set_cookie(self, value: bytes, origin: int, path: str) -> bytes:
        """A ``Set-Cookie`` from fronted origin ``origin`` > 0 (``path``: the
        request's path there) scoped to its prefix and tagged (``cookies.scoped``)."""
        return scoped(value, f"{PREFIX}{origin}", path, cookie_tag(origin))

    @staticmethod
    def cookie(value: bytes, origin: int) -> bytes | None:
        """A ``Cookie`` value sent to fronted origin ``origin`` > 0: its own
        cookies only, named as it set them (``cookies.inward``); None: none."""
        return inward(value, cookie_tag(origin))

    def prm_document(self, body: bytes, served_url: str) -> tuple[bytes, list[tuple[str, str]]]:
        """Rewrite a protected resource metadata document (RFC 9728 §2):
        ``resource`` and ``authorization_servers`` fronted. Returns (body, notes);
        a body that is not a JSON object is returned unchanged with a note."""
        doc, notes = json_object(body, "protected resource metadata")
        if doc is None:
            return body, notes
        res = doc.get("resource")
        if isinstance(res, str):
            if res.rstrip("/") not in resource_candidates(served_url, self.upstream_resource):
                notes.append(("auth.resource_mismatch",
                              f"protected resource metadata served at {served_url} names resource {res!r} "
                              "(RFC 9728 §3.3: it must be the URL the metadata is for)"))
            doc["resource"] = self.front(res, learn=False)
        else:
            notes.append(("auth.metadata_invalid", "protected resource metadata has no string 'resource' (RFC 9728 §2: REQUIRED)"))
        servers = doc.get("authorization_servers")
        if isinstance(servers, list):
            doc["authorization_servers"] = [self.front(s, learn=True) if isinstance(s, str) else s for s in servers]
        return orjson.dumps(doc), notes

    def as_document(self, body: bytes) -> tuple[bytes, list[tuple[str, str]]]:
        """Rewrite authorization server metadata (RFC 8414 §2) or an OpenID
        discovery document: ``issuer`` and every endpoint URL fronted (origins
        they name are learned: a token endpoint may live on another host than
        its issuer)."""
        doc, notes = json_object(body, "authorization server metadata")
        if doc is None:
            return body, notes
        for key in AS_URL_FIELDS:
            v = doc.get(key)
            if isinstance(v, str):
                u = urls.split(v)
                if key != "issuer" and u is not None and u.hostname and self._index(u.scheme, u.hostname, urls.port_of(u) or 80) == 0:
                    self.as_paths.add(u.path or "/")
                doc[key] = self.front(v, learn=True)
        aliases = doc.get("mtls_endpoint_aliases")
        if isinstance(aliases, dict):
            doc["mtls_endpoint_aliases"] = {k: self.front(v, learn=True) if isinstance(v, str) else v for k, v in aliases.items()}
        return orjson.dumps(doc), notes

    # -- inward ---------------------------------------------------------------------------
    def request_target(self, target: bytes) -> bytes:
        """A query's ``resource`` naming the tap's resource, mapped back (RFC 8707 §2)."""
        t = target.decode("latin-1")
        path, sep, query = t.partition("?")
        if not sep or "resource=" not in query:
            return target
        new = self._form(query)
        return (path + "?" + new).encode("latin-1") if new is not None else target

    def request_form(self, body: bytes) -> bytes:
        """An ``application/x-www-form-urlencoded`` body's ``resource`` mapped back."""
        if b"resource=" not in body:
            return body
        try:
            new = self._form(body.decode("ascii"))
        except UnicodeDecodeError:
            return body
        return new.encode("ascii") if new is not None else body

    def _form(self, query: str) -> str | None:
        pairs = parse_qsl(query, keep_blank_values=True)
        changed = False
        out = []
        for k, v in pairs:
            if k == "resource":
                nv = self.unfront(v)
                changed |= nv != v
                v = nv
            out.append((k, v))
        return urlencode(out, quote_via=quote, safe="") if changed else None
