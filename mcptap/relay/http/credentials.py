"""Credentials in HTTP heads before they reach a capture (pure).

Design principle 8: credentials never reach a capture in clear unless the user
asks (``--record-secrets``). A credential header's value is replaced by the
user's keyed ``«redacted:hmac:…»`` placeholder (:mod:`mcptap.redact.headers`),
so two captures of the same token still compare equal; the auth scheme, cookie
names and ``Set-Cookie`` attributes stay visible. Request targets get
``redact.scrub_url`` (user info, secret-like query parameters).

Shapes: heads come in as ``[(name, value), …]`` of raw ``bytes`` and go out as
``[[name, value], …]`` of latin-1 decoded ``str`` (the capture's ``headers``
field). Nothing here raises.
"""

from __future__ import annotations

from mcptap.redact import scrub_url
from mcptap.redact.headers import SECRET_HEADERS, is_secret_header, redact_header

__all__ = ["SECRET_HEADERS", "headers_json", "record_target", "redact_header"]


#: is_secret_header by raw header name: the same few names come in every exchange
#: (bounded: a peer inventing names only costs a re-computation after a reset)
_SECRET: dict[bytes, bool] = {}
_SECRET_MAX = 4096


def headers_json(headers: list[tuple[bytes, bytes]], record_secrets: bool = False) -> list[list[str]]:
    """Headers for a record: str pairs, credentials redacted unless ``record_secrets``."""
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
        out.append([name, value])
    return out


def record_target(target: str, record_secrets: bool = False) -> str:
    """A request target for a record: scrubbed unless ``record_secrets``."""
    return target if record_secrets else scrub_url(target)
