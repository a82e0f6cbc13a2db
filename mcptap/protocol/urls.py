"""URL parsing that never raises on peer input (pure).

``urllib.parse`` raises ``ValueError`` on some values a peer can send in a
header or a document: an unbalanced IPv6 bracket (``http://[::1/x``), a port
out of range or not a number (read through ``.port``), a netloc that changes
under NFKC normalisation. Every URL the HTTP tap reads from a peer
(``Location``, ``Referer``, ``WWW-Authenticate`` parameters, metadata members,
legacy ``endpoint`` data) goes through these instead: an unparseable URL is
None, and the caller passes the value on unchanged.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urljoin, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def split(url: str) -> SplitResult | None:
    """``urlsplit(url)``, or None when it raises; its ``port`` is checked too
    (None also for an invalid port), so ``port_of`` of a result never raises."""
    try:
        u = urlsplit(url)
        u.port       # noqa: B018 - raises ValueError for an invalid port
    except ValueError:
        return None
    return u


def port_of(u: SplitResult) -> int | None:
    """The port of a ``split`` result, or the scheme's default (None: neither)."""
    return u.port or DEFAULT_PORTS.get(u.scheme.lower())


def origin(url: str) -> tuple[str, str, int | None] | None:
    """The origin of an absolute URL as (scheme, host, port), lower-cased,
    the scheme's default port filled in (``https://H/`` and ``https://H:443/``
    are one origin); None when it does not parse or names no host."""
    u = split(url)
    if u is None or not u.scheme or not u.hostname:
        return None
    return u.scheme.lower(), u.hostname.lower(), port_of(u)


def join(base: str, ref: str) -> str | None:
    """``urljoin(base, ref)``, or None when ``ref`` does not parse."""
    try:
        return urljoin(base, ref)
    except ValueError:
        return None


_USERINFO = re.compile(r"^(\s*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)[^/?#@]*@")


def public(url: str) -> str:
    """``url`` as a finding may quote it: no user info, query or fragment
    (any of them may carry a credential). Never parses the URL as a whole."""
    return _USERINFO.sub(r"\1", url.partition("#")[0].partition("?")[0], count=1)
