"""The URL a HAR entry shows: the one the tap requested upstream (pure).

A capture records each request target as the client sent it to the tap. For
MCP traffic that is the upstream's path too (the tap relays it unchanged), so
the URL is the upstream origin + target. OAuth traffic the tap fronts
(``relay/http/auth.py``) is not: a request for ``/.mcptap/o/<n>/register`` went
to fronted origin ``n`` (an authorization server) as ``/register``, and the
well-known discovery form ``/.well-known/oauth-authorization-server/.mcptap/o/<n>``
as ``/.well-known/oauth-authorization-server``. The capture names no fronted
origin outright; :class:`Fronts` learns them from the ``auth_rewrite`` records
of the metadata the tap fronted (``prm``, ``as_meta``, ``www-authenticate``:
each rewritten URL ``http://tap/.mcptap/o/<n>/path`` beside its original
``https://as.example/path`` gives origin ``n``), as the tap itself learned them.

A request target that is neither origin-form (``/path``) nor absolute
(``PRI * HTTP/2.0``, ``OPTIONS *``, a CONNECT authority) has no path: its URL is
the origin with an empty path (RFC 9110 §7.1), the raw target kept by the caller.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from mcptap.protocol import urls
from mcptap.relay.http.auth import AS_URL_FIELDS, PREFIX, WK_AS
from mcptap.relay.http.auth_docs import WK_PRM

_RESOURCE_METADATA = re.compile(r'resource_metadata\s*=\s*"([^"]*)"', re.IGNORECASE)


def _doc(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        v = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return v if isinstance(v, dict) else None


def _url_pairs(what: str, original: Any, rewritten: Any) -> list[tuple[str, str]]:
    """(original URL, fronted URL) pairs of one ``auth_rewrite`` record."""
    if what == "www-authenticate" and isinstance(original, str) and isinstance(rewritten, str):
        return list(zip(_RESOURCE_METADATA.findall(original), _RESOURCE_METADATA.findall(rewritten), strict=False))
    a, b = _doc(original), _doc(rewritten)
    if a is None or b is None:
        return []
    pairs: list[tuple[Any, Any]] = [(a.get(k), b.get(k)) for k in ("resource", *AS_URL_FIELDS)]
    if isinstance(a.get("authorization_servers"), list) and isinstance(b.get("authorization_servers"), list):
        pairs += zip(a["authorization_servers"], b["authorization_servers"], strict=False)
    ma, mb = a.get("mtls_endpoint_aliases"), b.get("mtls_endpoint_aliases")
    if isinstance(ma, dict) and isinstance(mb, dict):
        pairs += [(ma.get(k), mb.get(k)) for k in ma]
    return [(x, y) for x, y in pairs if isinstance(x, str) and isinstance(y, str)]


def _prefixed(path: str) -> tuple[int, str] | None:
    """(n, path on origin n) of a tap path under ``/.mcptap/o/<n>``, well-known forms included."""
    for wk in ("", WK_PRM, *WK_AS):
        if path.startswith(wk + PREFIX):
            num, slash, tail = path[len(wk + PREFIX):].partition("/")
            if not num.isdigit():
                return None
            rest = "/" + tail if slash else "/"
            return int(num), (wk + (rest if rest != "/" else "") if wk else rest)
    return None


class Fronts:
    """The origins the tap fronted, learned from ``auth_rewrite`` records
    (``learn``), and the real URL of a request (``url``)."""

    def __init__(self, upstream_origin: str) -> None:
        self.upstream = upstream_origin          # scheme://authority of the MCP upstream, "" unknown
        self.origins: dict[int, str] = {}        # n -> scheme://authority

    def learn(self, rec: dict[str, Any]) -> None:
        """Take the fronted origins an ``auth_rewrite`` record shows."""
        for orig, new in _url_pairs(str(rec.get("what") or ""), rec.get("original"), rec.get("rewritten")):
            o, n = urls.split(orig), urls.split(new)
            if o is None or n is None or not o.scheme or not o.netloc:
                continue
            got = _prefixed(n.path)
            if got is not None and got[0] > 0:
                self.origins.setdefault(got[0], f"{o.scheme}://{o.netloc.rpartition('@')[2]}")

    def url(self, target: str, sent: str | None, fallback_origin: str) -> tuple[str, bool]:
        """(URL, known) of a request with ``target`` as the client sent it to the
        tap; ``sent``: the target the tap sent instead (an ``auth_rewrite``
        ``target`` record: prefix removed, ``resource`` mapped back), if any;
        ``fallback_origin``: the origin to use when the upstream is unknown.
        ``known`` is False when the target names a fronted origin the capture
        never showed (the URL is then the tap's own)."""
        if "://" in target:
            return target, True
        upstream = self.upstream or fallback_origin
        if not target.startswith("/"):
            return upstream, True          # asterisk- or authority-form: no path (RFC 9110 §7.1)
        path, sep, query = target.partition("?")
        got = _prefixed(path)
        if got is None:
            return upstream + (sent if sent and sent.startswith("/") else target), True
        origin = self.origins.get(got[0])
        if origin is None:
            return fallback_origin + target, False
        return origin + (sent if sent and sent.startswith("/") else got[1] + sep + query), True
