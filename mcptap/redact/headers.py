"""Credential header values (pure): keyed placeholders that keep what helps
debugging visible — the auth scheme (``Bearer «…»``), cookie names
(``sid=«…»``) and ``Set-Cookie`` attributes.

A header is a credential when its lower-cased name is in ``SECRET_HEADERS``,
secret-like by :func:`mcptap.redact.argv_rules.is_secret_name` (the one name rule, ``keys``: ``X-Api-Token``,
``X-Foo-Key``, ``X-Foo-Creds``, ``Authentication``…), or credential-shaped as a header name
(last word ``Key``, ``Assertion``, ``Credential``, ``Authorization``, ``Jwt``, or the word ``Jwt``:
``Ocp-Apim-Subscription-Key``, ``Cf-Access-Jwt-Assertion``). ``ph`` is the
placeholder function (the user's keyed one by default). Values already made
of placeholders are returned unchanged (redacting twice changes nothing).
"""

from __future__ import annotations

from collections.abc import Callable

from mcptap.redact.argv import placeholder
from mcptap.redact.argv_rules import is_secret_name
from mcptap.redact.keyed import PLACEHOLDER

SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "authentication", "cookie", "set-cookie",
                            "x-api-key", "api-key", "dpop", "x-amzn-oidc-data", "cf-access-token"})
#: a header name whose last word is one of these carries a credential whatever comes before it
#: (``Ocp-Apim-Subscription-Key``, ``Cf-Access-Jwt-Assertion``, ``X-Upstream-Credential``,
#: ``X-Serverless-Authorization``); so does one with the word ``jwt`` (``X-Jwt``)
_SECRET_LAST = frozenset({"key", "assertion", "credential", "authorization", "jwt"})
#: ... except a WebSocket handshake nonce and a retry's idempotency key (RFC 6455, IETF draft)
_NOT_SECRET = frozenset({"sec-websocket-key", "idempotency-key"})
_SCHEMES = ("bearer", "basic", "token", "digest", "negotiate")


def is_secret_header(name: str) -> bool:
    """True when header ``name`` carries a credential (see module doc)."""
    low = name.lower()
    if low in SECRET_HEADERS or is_secret_name(name):
        return True
    words = low.split("-")
    return len(words) > 1 and (words[-1] in _SECRET_LAST or "jwt" in words) and low not in _NOT_SECRET


def redact_header(name: str, value: str, ph: Callable[[str], str] = placeholder) -> str:
    """The recorded form of credential header ``name`` (lower-cased) = ``value``."""
    if name in ("cookie",):
        return "; ".join(_pair(p.strip(), ph) for p in value.split(";") if p.strip())
    if name == "set-cookie":
        first, sep, attrs = value.partition(";")
        return _pair(first.strip(), ph) + (sep + attrs if sep else "")
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in _SCHEMES:
        return f"{scheme} {_one(rest, ph)}"
    return _one(value, ph)


def _one(v: str, ph: Callable[[str], str]) -> str:
    return v if not v or PLACEHOLDER.fullmatch(v) else ph(v)


def _pair(pair: str, ph: Callable[[str], str]) -> str:
    k, eq, v = pair.partition("=")
    return f"{k}={_one(v, ph)}" if eq else _one(pair, ph)
