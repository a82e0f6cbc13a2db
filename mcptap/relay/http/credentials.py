"""Credentials in HTTP heads before they reach a capture (pure).

Design principle 8: credentials never reach a capture in clear unless the user
asks (``--record-secrets``). A credential header's value is replaced by the
user's keyed ``«redacted:hmac:…»`` placeholder (:mod:`mcptap.redact.headers`),
so two captures of the same token still compare equal; the auth scheme, cookie
names and ``Set-Cookie`` attributes stay visible. Request targets get
``redact.scrub_url`` (user info, secret-like query parameters). URLs a response
names (``Location``, ``Content-Location``, ``Refresh``, ``Link``: an authorization
redirect's ``?code=``, ``http://user:password@host/``) and a request's ``Referer`` get ``scrub_location``,
in every exchange, OAuth or not; OAuth query strings and form bodies get
``scrub_query`` (the parameters of ``SECRET_PARAMS``).

Shapes: heads come in as ``[(name, value), …]`` of raw ``bytes`` and go out as
``[[name, value], …]`` of latin-1 decoded ``str`` (the capture's ``headers``
field). Nothing here raises.
"""

from __future__ import annotations

import re

from mcptap.redact import is_secret_name, placeholder, scrub_url
from mcptap.redact.header_scan import scan_value
from mcptap.redact.headers import SECRET_HEADERS, is_secret_header, redact_header
from mcptap.redact.urlview import form_decode

__all__ = ["SECRET_HEADERS", "SECRET_PARAMS", "headers_json", "is_secret_param", "record_target", "redact_header",
           "scrub_location", "scrub_query", "scrub_url_params"]

#: OAuth parameter and member names that carry credentials (RFC 6749 §4.1, §5.1,
#: RFC 7636 §4.5, RFC 7591 §3.2.1, RFC 7523 §2.2, RFC 8693 §2.1, OpenID Core §3.1.3.3)
SECRET_PARAMS = frozenset({
    "code", "code_verifier", "client_secret", "access_token", "refresh_token", "id_token", "client_assertion",
    "assertion", "registration_access_token", "device_code", "subject_token", "actor_token", "password",
})
#: metadata members named like secrets that hold URLs, methods or flags, never credentials
_NOT_SECRET_SUFFIXES = ("_endpoint", "_method", "_methods", "_supported", "_uri", "_uris", "_at", "_type", "_types", "_in")
#: fields whose value is (or, for Refresh and Link, holds) a URL: a response's, and a request's
#: ``Referer`` (a browser client's page: a legacy endpoint's ``?session_id=``, an OAuth callback's ``?code=``)
URL_HEADERS = frozenset({b"location", b"content-location", b"refresh", b"link", b"referer"})
#: user info of an absolute or scheme-relative URL (``http://user:pass@``, ``//user:pass@``)
_USERINFO = re.compile(r"^(\s*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)([^/?#@]*)@")
_PLACEHOLDER = re.compile(r"«redacted:[^»]*»")
#: a Refresh value's delay and separator (``5; url=``, ``0;URL='``, ``3 ``), then its URL
_REFRESH_URL = re.compile(r"""(\s*\d[\d.]*(?:\s*[;,]\s*|\s+)(?:url\s*=\s*)?['"]?)(.*)""", re.IGNORECASE | re.DOTALL)
_LINK_URL = re.compile(r"<([^>]*)>")


#: is_secret_header by raw header name: the same few names come in every exchange
#: (bounded: a peer inventing names only costs a re-computation after a reset)
_SECRET: dict[bytes, bool] = {}
_SECRET_MAX = 4096


def headers_json(headers: list[tuple[bytes, bytes]], record_secrets: bool = False) -> list[list[str]]:
    """Headers for a record: str pairs, credentials redacted unless ``record_secrets``:
    a credential header's value, a URL field's credentials, and token shapes in any
    other value (``header_scan``)."""
    out = []
    known = _SECRET
    for n, v in headers:
        name, value = n.decode("latin-1"), v.decode("latin-1")
        if not record_secrets:
            secret = known.get(n)
            if secret is None:
                if len(known) >= _SECRET_MAX:
                    known.clear()
                secret = known[n] = is_secret_header(name)
            if secret:
                value = redact_header(name.lower(), value)
            elif n.lower() in URL_HEADERS:
                value = scrub_location(n, value)
            else:
                value = scan_value(value)
        out.append([name, value])
    return out


#: request targets ``scrub_url`` leaves unchanged (no secret in them): the same few come in every
#: exchange, and whether one holds a secret depends on its text alone (the built-in rules), never
#: on the key that names a secret (bounded: a peer inventing targets only costs a re-computation)
_CLEAN_TARGETS: set[str] = set()
_CLEAN_MAX = 1024


def record_target(target: str, record_secrets: bool = False) -> str:
    """A request target for a record: scrubbed unless ``record_secrets``."""
    if record_secrets or target in _CLEAN_TARGETS:
        return target
    out = scrub_url(target)
    if out == target:
        if len(_CLEAN_TARGETS) >= _CLEAN_MAX:
            _CLEAN_TARGETS.clear()
        _CLEAN_TARGETS.add(target)
    return out


def is_secret_param(name: str) -> bool:
    low = name.lower()
    if low in SECRET_PARAMS:
        return True
    return not low.endswith(_NOT_SECRET_SUFFIXES) and is_secret_name(name)


def scrub_query(query: str) -> str:
    """A query string or form body with credential values as placeholders;
    every other byte (order, percent-encoding) kept."""
    out = []
    for seg in query.split("&"):
        k, eq, v = seg.partition("=")
        if eq and v and is_secret_param(form_decode(k)) and not _PLACEHOLDER.fullmatch(v):
            seg = k + "=" + placeholder(form_decode(v))
        out.append(seg)
    return "&".join(out)


def scrub_url_params(url: str) -> str:
    """A URL (absolute, scheme-relative, origin-form or relative) with its user
    info, credential query values and token shapes (``scrub_url``) as placeholders. Never parses the URL as a
    whole, so a malformed one (``http://[::1/x?code=…``) is scrubbed too."""
    m = _USERINFO.match(url)
    if m and m.group(2) and not _PLACEHOLDER.fullmatch(m.group(2)):
        url = m.group(1) + placeholder(m.group(2)) + "@" + url[m.end():]
    head, hashmark, frag = url.partition("#")
    path, q, query = head.partition("?")
    # token shapes anywhere (a path segment ``/mcp/sk-live-…``) are scrub_url's
    return scrub_url(path + q + scrub_query(query) + hashmark + frag if q else url)


def scrub_location(name: bytes, value: str) -> str:
    """A ``Location``/``Content-Location`` value, the URL of a ``Refresh``
    (``5; url=…``) or each ``<URI>`` of a ``Link``, scrubbed (``scrub_url_params``)."""
    low = name.lower()
    if low == b"link":
        return _LINK_URL.sub(lambda m: "<" + scrub_url_params(m.group(1)) + ">", value)
    if low != b"refresh":
        return scrub_url_params(value)
    m = _REFRESH_URL.match(value)
    return value[:m.end(1)] + scrub_url_params(m.group(2)) if m else value
