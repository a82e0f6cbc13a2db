"""Credentials in HTTP heads before they reach a capture (pure).

Design principle 8: credentials never reach a capture in clear unless the user
asks (``--record-secrets``). A credential header's value is replaced by the
stable ``«redacted:sha256:XXXXXXXX»`` placeholder of ``mcptap/redact.py``, so two
captures of the same token still compare equal; what helps debugging stays
visible: the auth scheme (``Bearer «…»``), cookie names (``sid=«…»``) and
``Set-Cookie`` attributes.

A header is a credential when its lower-cased name is in ``SECRET_HEADERS`` or
is secret-like by ``redact.is_secret_name`` (``X-Api-Token``, …). Request
targets get ``redact.scrub_url`` (user info, secret-like query parameters).

Shapes: heads come in as ``[(name, value), …]`` of raw ``bytes`` and go out as
``[[name, value], …]`` of latin-1 decoded ``str`` (the capture's ``headers``
field). Nothing here raises.
"""

from __future__ import annotations

from mcptap.redact import is_secret_name, placeholder, scrub_url

SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"})


def headers_json(headers: list[tuple[bytes, bytes]], record_secrets: bool = False) -> list[list[str]]:
    """Headers for a record: str pairs, credentials redacted unless ``record_secrets``."""
    out = []
    for n, v in headers:
        name, value = n.decode("latin-1"), v.decode("latin-1")
        if not record_secrets and (name.lower() in SECRET_HEADERS or is_secret_name(name)):
            value = redact_header(name.lower(), value)
        out.append([name, value])
    return out


def record_target(target: str, record_secrets: bool = False) -> str:
    """A request target for a record: scrubbed unless ``record_secrets``."""
    return target if record_secrets else scrub_url(target)


def redact_header(name: str, value: str) -> str:
    """Stable placeholder for a credential header value; keeps the auth scheme
    and cookie names visible. ``name``: lower-cased header name."""
    if name in ("cookie",):
        return "; ".join(_redact_pair(p.strip()) for p in value.split(";") if p.strip())
    if name == "set-cookie":
        first, sep, attrs = value.partition(";")
        return _redact_pair(first.strip()) + (sep + attrs if sep else "")
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in ("bearer", "basic", "token", "digest", "negotiate"):
        return f"{scheme} {placeholder(rest)}"
    return placeholder(value)


def _redact_pair(pair: str) -> str:
    k, eq, v = pair.partition("=")
    return f"{k}={placeholder(v)}" if eq else placeholder(pair)
