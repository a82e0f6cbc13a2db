"""The request a HAR entry shows: what the server received (pure).

Decision (docs/export.md): a HAR entry's request is the one the tap sent upstream, its URL,
headers and body alike, as the HAR of any proxy shows it (mitmproxy's is its flow's request
as forwarded: URL, headers and body after every change on the way). The capture records
each request as the client sent it to the tap, and what the tap changes on the way
(``relay/http/rewrite.py``, ``Upstream.target``/``authorize``) is done again here from
what it recorded:

* URL: the upstream origin (or the origin an OAuth exchange was fronted for,
  ``export/har_urls.py``) + the target the tap sent (an ``auth_rewrite`` ``target``), the
  upstream URL's query merged in first on the MCP upstream's requests, as the tap does;
* headers: hop-by-hop fields dropped (``Connection`` and those it names, ``Keep-Alive``,
  ``Proxy-Connection``, ``TE``, ``Upgrade``), one ``Host``: the authority of the URL when
  the tap rewrote it (``host_rewritten``, or none sent), and an ``Authorization`` the tap
  added from the upstream URL's user info (never recorded: its value is a placeholder);
* body: as sent (an OAuth form the tap changed, ``auth_rewrite`` ``form``).

The client's own headers go in ``_mcp.clientHeaders`` when they differ, its URL in
``_mcp.clientUrl``. A request the tap refused itself (``records.events.TAP_REFUSALS``)
reached no server: its entry shows it as the client sent it to the tap.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mcptap.relay.http.rewrite import HOP_BY_HOP

_HOP = frozenset(h.decode("ascii") for h in HOP_BY_HOP)
#: an Authorization the tap added from the upstream URL's user info: mcptap never records it
BASIC_NOT_RECORDED = "Basic «the upstream URL's user info: not recorded»"


def upstream_parts(url: str) -> tuple[str, bool]:
    """(query, has user info) of the capture header's upstream URL (its secrets as placeholders)."""
    try:
        u = urlsplit(url)
    except ValueError:
        return "", False
    return u.query, "@" in u.netloc


def merged_target(target: str, query: str) -> str:
    """Origin-form ``target`` with the upstream URL's ``query`` merged in as the tap
    does (``Upstream.target``): unchanged when the client's query starts with it,
    else the upstream's parameters first."""
    if not query or not target.startswith("/"):
        return target
    path, _, mine = target.partition("?")
    if mine == query or mine.startswith(query + "&"):
        return target
    return path + "?" + query + ("&" + mine if mine else "")


def sent_headers(headers: list[Any], url: str, host_rewritten: bool, basic: bool) -> list[list[str]]:
    """The request ``headers`` (``[[name, value]…]`` as recorded, the client's) as the
    server received them at ``url``: hop-by-hop fields dropped, one Host (the URL's
    authority when ``host_rewritten`` or none was sent), and ``basic``: the tap's
    Authorization from the upstream URL's user info unless the client sent its own."""
    pairs = [[str(h[0]), str(h[1])] for h in headers if isinstance(h, (list, tuple)) and len(h) == 2]
    named = {t.strip().lower() for n, v in pairs if n.lower() == "connection" for t in v.split(",")}
    try:
        authority = urlsplit(url).netloc.rpartition("@")[2]
    except ValueError:
        authority = ""
    out: list[list[str]] = []
    have_host = False
    for n, v in pairs:
        low = n.lower()
        if low in _HOP or low in named:
            continue
        if low == "host":
            if have_host:
                continue
            have_host = True
            if host_rewritten and authority:
                v = authority
        out.append([n, v])
    if not have_host and authority:
        out.insert(0, ["Host", authority])
    if basic and not any(n.lower() == "authorization" for n, _ in out):
        out.append(["authorization", BASIC_NOT_RECORDED])
    return out
