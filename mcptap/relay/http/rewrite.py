"""What the HTTP relay changes on the way through (pure, no I/O, no h11 state).

RFC 9110 §7.6.1 (hop-by-hop fields) and §7.2 (Host):

* ``strip_hop`` drops ``Connection``, the fields it names, ``Keep-Alive``,
  ``Proxy-Connection``, ``TE`` and ``Upgrade``; ``Content-Length`` and
  ``Transfer-Encoding`` stay, so the body framing is unchanged;
* ``upstream_headers`` also sets ``Host`` to the upstream's authority (unless
  ``keep_host``), keeps only the first Host field and adds one when missing;
* ``wants_endpoint_rewrite`` / ``endpoint_rewrite_fn`` decide whether and how a
  legacy HTTP+SSE ``endpoint`` event naming the upstream's own origin is pointed
  back at the tap (the bytes are rewritten by ``relay/http/endpoint.py``);
* ``location`` points a ``Location`` naming the upstream's own origin (a 3xx to
  ``http://upstream/mcp``, a 201) back at the tap by the same rule, so a client
  that follows it stays on the tap's origin (SDK clients refuse a cross-origin
  redirect; others would bypass the tap), and the URLs ``Content-Location``,
  ``Refresh`` (a browser's timed redirect) and ``Link`` (RFC 8288) name on that
  origin likewise. Relative values resolve against the tap already and pass
  unchanged.

Everything else (names, case, order, values) is passed on unchanged.

Shapes: header lists are ``[(name, value), …]`` of raw ``bytes`` in wire order
and case (``http_events.Headers``); any iterable of pairs is accepted as input.
Nothing here raises on peer input. ``upstream_headers`` raises
UnicodeEncodeError for a non-ASCII upstream authority (``Upstream.parse`` does
not IDNA-encode host names, so ``http://exämple.org`` gets that far).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit, urlunsplit

from mcptap.relay.http.events import Headers, Upstream, same_origin
from mcptap.relay.http.heads import valid_value

HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"te", b"upgrade"})


def strip_hop(raw: Iterable[tuple[bytes, bytes]]) -> Headers:
    """Drop hop-by-hop fields and those named by Connection (RFC 9110 §7.6.1)."""
    items = list(raw)
    low = [n.lower() for n, _ in items]
    if HOP_BY_HOP.isdisjoint(low):
        return items            # the common case: nothing to drop (no Connection field either)
    named: set[bytes] = set()
    for n, (_, v) in zip(low, items, strict=True):
        if n == b"connection":
            named.update(t.strip().lower() for t in v.split(b","))
    return [item for n, item in zip(low, items, strict=True) if n not in HOP_BY_HOP and n not in named]


def request_host(raw: Headers) -> str | None:
    """The first ``Host`` value the client sent (latin-1 decoded), or None."""
    return next((v.decode("latin-1") for n, v in raw if n.lower() == b"host"), None)


def upstream_headers(raw: Headers, authority: str, keep_host: bool) -> tuple[Headers, bool]:
    """Request headers as sent upstream: hop-by-hop fields dropped, one Host
    (``authority``, or the client's own when ``keep_host``; inserted first when
    the client sent none). Returns (headers, Host value differs from the
    client's)."""
    out: Headers = []
    auth = authority.encode("ascii")
    rewritten = False
    have_host = False
    for name, value in strip_hop(raw):
        if name.lower() == b"host":
            if have_host:
                continue
            have_host = True
            if not keep_host and value != auth:
                value = auth
                rewritten = True
        out.append((name, value))
    if not have_host:
        out.insert(0, (b"Host", auth))
        rewritten = True
    return out, rewritten


def wants_endpoint_rewrite(method: bytes, status: int, raw: Headers) -> bool:
    """True for a response that may carry the legacy ``endpoint`` event: a 200
    to a GET whose media type is ``text/event-stream`` and that has no
    Content-Length (rewriting would change a declared length)."""
    if method != b"GET" or status != 200:
        return False
    ctype = next((v for n, v in raw if n.lower() == b"content-type"), b"")
    has_length = any(n.lower() == b"content-length" for n, _ in raw)
    return ctype.split(b";")[0].strip().lower() == b"text/event-stream" and not has_length


#: response fields naming URLs the tap points back at itself: Location (201 and 3xx only, RFC 9110
#: §10.2.2), Content-Location (§8.7), Refresh (HTML "shared declarative refresh steps"), Link (RFC 8288)
URL_FIELDS = (b"location", b"content-location", b"refresh", b"link")
URL_SET = frozenset(URL_FIELDS)
_REFRESH = re.compile(r"""(\s*\d[\d.]*(?:\s*[;,]\s*|\s+)(?:url\s*=\s*)?)(['"]?)(.*?)\s*$""", re.IGNORECASE | re.DOTALL)


def location(status: int, headers: Headers, up: Upstream, authority: str) -> tuple[Headers, list[tuple[str, str, str]]]:
    """``headers`` of a response with the URLs on the upstream's origin
    (absolute, or scheme-relative ``//host:port/…``) that ``Location`` (201
    and 3xx only), ``Content-Location``, ``Refresh`` and ``Link`` name pointed
    at ``http://{authority}``; every other value, and every other part of a
    ``Refresh`` or ``Link`` value, unchanged. Returns (headers, [(field name
    lower case, original value, rewritten value), …])."""
    if URL_SET.isdisjoint([n.lower() for n, _ in headers]):
        return list(headers), []        # no URL field (the common case): nothing to point back
    return _location(status, headers, up, authority)


def _location(status: int, headers: Headers, up: Upstream, authority: str) -> tuple[Headers, list[tuple[str, str, str]]]:
    """``location`` field by field (every response that names a URL in one of ``URL_FIELDS``)."""
    redirect = 300 <= status < 400 or status == 201
    rewrite = endpoint_rewrite_fn(up, authority)

    def url(text: str) -> str | None:
        t = text.strip()
        return rewrite(f"{up.scheme}:{t}" if t.startswith("//") else t)

    out: Headers = []
    changes: list[tuple[str, str, str]] = []
    for name, value in headers:
        low = name.lower()
        if low in URL_FIELDS and (redirect or low != b"location"):
            text = value.decode("latin-1")
            new = _refresh(text, url) if low == b"refresh" else _link(text, url) if low == b"link" else url(text)
            raw = new.encode("latin-1", "replace") if new is not None else value
            if new is not None and raw != value and valid_value(raw):
                changes.append((low.decode("latin-1"), text, new))
                value = raw
        out.append((name, value))
    return out, changes


def _refresh(text: str, url: Callable[[str], str | None]) -> str | None:
    """A ``Refresh`` value (``5; url=http://…``, ``0;URL='…'``, ``3 http://…``)
    with its URL rewritten, or None (no URL, or not on the upstream's origin)."""
    m = _REFRESH.match(text)
    if m is None or not m.group(3):
        return None
    quote, target = m.group(2), m.group(3)
    if quote and target.endswith(quote):
        target = target[:-1]
    new = url(target)
    if new is None:
        return None
    return text[:m.start(3)] + new + text[m.start(3) + len(target):]


def _link(text: str, url: Callable[[str], str | None]) -> str | None:
    """A ``Link`` value with each ``<URI-Reference>`` on the upstream's origin
    rewritten (``<…>`` inside a quoted parameter value is a string, not a
    link), or None when none is."""
    out: list[str] = []
    i, n, changed, quoted = 0, len(text), False, False
    while i < n:
        c = text[i]
        if quoted:
            if c == "\\" and i + 1 < n:
                out.append(text[i:i + 2])
                i += 2
                continue
            quoted = c != '"'
        elif c == '"':
            quoted = True
        elif c == "<":
            end = text.find(">", i + 1)
            if end < 0:
                break
            new = url(text[i + 1:end])
            if new is not None:
                out.append(f"<{new}>")
                changed = True
                i = end + 1
                continue
            out.append(text[i:end + 1])
            i = end + 1
            continue
        out.append(c)
        i += 1
    return "".join(out) + text[i:] if changed else None


def endpoint_rewrite_fn(up: Upstream, authority: str) -> Callable[[str], str | None]:
    """The ``rewrite`` callback for ``EndpointRewriter``: an endpoint URL with
    the upstream's origin gets ``http://{authority}`` instead (path, query and
    fragment kept); any other value is kept (None)."""

    def rewrite(data: str) -> str | None:
        if not same_origin(data, up):
            return None
        u = urlsplit(data)      # parses: same_origin did
        userinfo, at, _ = u.netloc.rpartition("@")      # kept for the client (never recorded: credentials.py)
        return urlunsplit(("http", userinfo + at + authority, u.path, u.query, u.fragment))

    return rewrite
