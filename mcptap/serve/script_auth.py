"""OAuth discovery as the mock serves it (pure, level 3; serve/script.py's helper).

A capture recorded through the tap with OAuth fronting (relay/http/auth.py) holds the
upstream's headers and documents as the upstream sent them, and beside them (``auth_rewrite``
records) what the tap made of them for the client: every URL on the upstream's origin, and on
each authorization server it fronted (``/.mcptap/o/<n>``), pointed at the tap's origin. A mock
that replayed the upstream's values would send an OAuth client of the mock to the real upstream
(or, with the tap's, to a tap long gone). The mock stands where the tap stood:

* in a replayed header that carries URLs (``WWW-Authenticate``'s ``resource_metadata``,
  ``Location``, ``Content-Location``, ``Refresh``, ``Link``) the value the client saw (the tap's
  rewrite, else the upstream's), with the recording tap's origin and the upstream's replaced
  by the mock's own (``MOCK_ORIGIN``, filled in per request from the ``Host`` it was reached at);
* the discovery documents the capture holds (protected resource metadata, authorization
  server metadata, OpenID discovery: ``auth`` ``prm`` / ``as_meta`` exchanges answered 200)
  are served at the paths the client fetched them from, as the client got them, their URLs
  on the mock's origin likewise (``resource`` is then the mock's MCP URL, as RFC 9728 §3.3
  has the client check);
* what it cannot do is said (``Script.auth_notes``, told on stderr when serving starts): the
  authorization server's exchanges (registration, authorization, token) are not replayed —
  their state and PKCE values are the live client's own and the capture holds tokens only as
  placeholders — so requests there get ``501`` naming why; a discovery document the capture
  does not hold (a client that never fetched it through the tap) gets ``404``, and a
  ``resource_metadata`` naming one is said to lead nowhere.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from mcptap.capture.format import decode_bytes
from mcptap.serve.script_fields import key_field, status_field
from mcptap.serve.script_http import replayed_headers

#: stands for the mock's own origin (``http://host:port`` as the client reached it) in replayed values
MOCK_ORIGIN = "\x00mcptap-serve-origin\x00"
#: response headers whose URLs the tap points at itself (relay/http/rewrite.py, relay/http/auth.py)
URL_HEADERS = frozenset({"www-authenticate", "location", "content-location", "refresh", "link"})
#: the answer to an authorization-server request the mock does not replay
NOT_REPLAYED = (b"mcptap serve: OAuth registration, authorization and token exchanges are not replayed (their state and "
                b"PKCE values are the client's own, and the capture holds tokens only as placeholders)\n")
_ORIGIN = re.compile(r"https?://[^/\s\"'<>;,?#]+", re.IGNORECASE)
_RESOURCE_METADATA = re.compile(r'resource_metadata\s*=\s*"([^"]*)"', re.IGNORECASE)


def _origin(url: Any) -> str | None:
    m = _ORIGIN.match(url) if isinstance(url, str) else None
    return m.group(0).lower() if m else None


class AuthFacts:
    """The OAuth side of a capture as the script builder reads it: ``record(rec)`` for each
    ``http`` record (True: an OAuth exchange's, no MCP exchange's fact), ``headers(ex, hs)`` for
    replayed headers, ``finish()`` for the documents and notes."""

    def __init__(self, upstream_url: Any) -> None:
        up = _origin(upstream_url)
        self.origins: set[str] = {up} if up else set()       # the upstream's and the recording tap's origins
        self.rewrites: dict[Any, dict[tuple[str, str], str]] = {}   # MCP exchange -> (header, original) -> rewritten
        self.exchanges: dict[Any, dict[str, Any]] = {}        # OAuth exchange -> its facts
        self.metadata_urls: list[str] = []                    # resource_metadata values the client saw

    def record(self, rec: dict[str, Any]) -> bool:
        ex, kind, ev = key_field(rec.get("exchange")), rec.get("auth"), rec.get("event")
        if ev == "auth_rewrite":
            orig, new = rec.get("original"), rec.get("rewritten")
            if isinstance(orig, str) and isinstance(new, str):
                # the tap's origin: one its rewrite names that the upstream's value did not
                self.origins |= {o.lower() for o in _ORIGIN.findall(new)} - {o.lower() for o in _ORIGIN.findall(orig)}
                what = str(rec.get("what") or "")
                if kind == "mcp" and what in URL_HEADERS:
                    self.rewrites.setdefault(ex, {})[(what, orig)] = new
                elif kind in ("prm", "as_meta") and what == kind and ex in self.exchanges:
                    self.exchanges[ex]["doc"] = new.encode("utf-8")
            return kind not in (None, "mcp")
        if kind is None or kind == "mcp" or ex is None:
            return False
        facts = self.exchanges.setdefault(ex, {"kind": kind})
        if ev == "request":
            facts["method"], facts["target"] = rec.get("method"), rec.get("target")
        elif ev == "response" and not rec.get("informational"):
            facts["status"], facts["headers"] = status_field(rec.get("status")), rec.get("headers")
        elif ev == "response_body" and rec.get("undecoded") is None:
            try:
                facts["body"] = facts.get("body", b"") + (decode_bytes(rec, "body") or b"")
            except ValueError:
                pass
        return True

    def mocked(self, value: str) -> str:
        """``value`` with every URL on the upstream's or the recording tap's origin on ``MOCK_ORIGIN``."""
        def one(m: re.Match[str]) -> str:
            return MOCK_ORIGIN if m.group(0).lower() in self.origins else m.group(0)
        return _ORIGIN.sub(one, value)

    def headers(self, ex: Any, headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """Replayed ``headers`` of MCP exchange ``ex``: a URL-bearing value as the client saw it (the
        tap's rewrite of it), its URLs on the upstream's or the tap's origin on the mock's."""
        seen = self.rewrites.get(ex, {})
        out = []
        for n, v in headers:
            low = n.lower()
            if low in URL_HEADERS:
                v = self.mocked(seen.get((low, v), v))
                if low == "www-authenticate":
                    self.metadata_urls += _RESOURCE_METADATA.findall(v)
            out.append((n, v))
        return tuple(out)

    def finish(self) -> tuple[dict[str, tuple[int, tuple[tuple[str, str], ...], bytes]], set[str], list[str]]:
        """(the discovery documents by path: status, headers, body with ``MOCK_ORIGIN``; the paths of
        the authorization-server exchanges not replayed; what the mock cannot do, a line each)."""
        docs: dict[str, tuple[int, tuple[tuple[str, str], ...], bytes]] = {}
        others: set[str] = set()
        for facts in self.exchanges.values():
            target = facts.get("target")
            path = urlsplit(target).path if isinstance(target, str) else None
            if not path:
                continue
            body = facts.get("doc", facts.get("body"))
            if facts["kind"] in ("prm", "as_meta") and facts.get("method") == "GET" and facts.get("status") == 200 and body:
                text = self.mocked(body.decode("utf-8", "replace")).encode("utf-8")
                docs.setdefault(path, (200, replayed_headers(facts.get("headers")), text))
            elif facts["kind"] == "as":
                others.add(path)
        notes = []
        for url in dict.fromkeys(self.metadata_urls):
            if url.startswith(MOCK_ORIGIN) and urlsplit(url[len(MOCK_ORIGIN):] or "/").path not in docs:
                notes.append(f"a recorded 401/403 names protected resource metadata at {url[len(MOCK_ORIGIN):]} on the mock, which "
                             "the capture does not hold (the recorded client never fetched it through the tap): the mock answers "
                             "404 there, so an OAuth client of the mock cannot discover the authorization server")
        if others or docs:
            notes.append("the capture's OAuth discovery documents are served on the mock's origin; registration, authorization "
                         "and token exchanges are not replayed (501): an OAuth client of the mock stops there")
        return docs, others, notes
