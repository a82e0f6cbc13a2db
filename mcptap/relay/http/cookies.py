"""A fronted authorization server's cookies, kept to its prefix (pure, no I/O).

The tap fronts an authorization server at ``/.mcptap/o/<n>/`` on its own
origin (``relay/http/auth.py``), whose other paths are the MCP upstream's. A
browser scopes a cookie by host and path (RFC 6265 §5.1.4, §5.4; ports do not
count), so a ``Set-Cookie: s=…; Path=/`` from that server, passed on as is,
would go with every request to the MCP upstream. ``scoped`` rewrites its
``Path`` under the prefix and drops ``Domain`` (a host-only cookie of the
tap's host). Cookie name prefixes that pin the path (``__Host-`` needs
``Path=/``) cannot survive that: the browser refuses such a cookie (a known
limit, docs/http-tap.md).

Shapes: ``value`` is one ``Set-Cookie`` field value (bytes, as received);
nothing here raises on peer input.
"""

from __future__ import annotations


def scoped(value: bytes, prefix: str, path: str) -> bytes:
    """``value`` with ``Path=P`` as ``Path={prefix}P`` (``/``: the prefix
    itself, which path-matches ``prefix`` and ``prefix/…`` only), a missing or
    invalid Path (§5.2.4) as the prefix plus ``path``'s default path (§5.1.4;
    ``path``: the request's path at the server), and no ``Domain``."""
    parts = value.decode("latin-1").split(";")
    out, cookie_path = [parts[0]], None
    for attr in parts[1:]:
        name, _, v = attr.strip().partition("=")
        low = name.strip().lower()
        if low == "domain":
            continue
        if low == "path":
            cookie_path = v.strip() if v.strip().startswith("/") else default_path(path)
            continue
        out.append(attr)
    p = cookie_path if cookie_path is not None else default_path(path)
    out.append(f" Path={prefix}{p if p != '/' else ''}")
    return ";".join(out).encode("latin-1", "replace")


def default_path(path: str) -> str:
    """RFC 6265 §5.1.4: the default cookie path of a request path."""
    if not path.startswith("/") or path.count("/") == 1:
        return "/"
    return path[: path.rfind("/")]
