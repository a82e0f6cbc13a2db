"""A fronted authorization server's cookies, kept apart from the MCP upstream's (pure, no I/O).

The tap fronts an authorization server at ``/.mcptap/o/<n>/`` on its own
origin (``relay/http/auth.py``), whose other paths are the MCP upstream's. A
browser scopes a cookie by host and path (RFC 6265 §5.1.4, §5.4; ports do not
count), so the two servers share one cookie jar:

* outward, ``scoped``: a ``Set-Cookie: s=…; Path=/`` from the fronted server,
  passed on as is, would go with every request to the MCP upstream. Its
  ``Path`` moves under the prefix, ``Domain`` goes (a host-only cookie of the
  tap's host), and its name gets the tap's tag ``mcptap.o<n>.`` (``tag``);
* inward, ``inward``: the MCP upstream's own cookies (``Path=/``) path-match
  the prefix too, so the browser sends them with the fronted server's
  requests. Cookie headers carry no path, so the tag tells them apart: a
  request to the fronted server keeps only the pairs with its tag, tag
  removed, so it gets back exactly the names it set and nothing else.

The tag also keeps name prefixes working: ``__Host-`` requires ``Path=/``
(and ``__Secure-`` the Secure attribute), so a ``__Host-`` cookie scoped under
the prefix was refused by the browser. Tagged, the name no longer starts with
``__Host-``, the browser stores it under the prefix, and the server gets its
``__Host-sid`` back. Keeping ``Path=/`` instead would have sent the
authorization server's session to the MCP upstream, and renaming it to
``__Secure-`` would still need the name mapped back; the tag does both jobs.
What is lost is the browser's enforcement of those prefixes for the tap's
origin (the tap is one host-only, loopback origin; Secure is kept as sent).

Shapes: ``value`` is one ``Set-Cookie`` or ``Cookie`` field value (bytes, as
received); nothing here raises on peer input.
"""

from __future__ import annotations


def tag(origin: int) -> str:
    """The name prefix of fronted origin ``origin``'s cookies in the browser."""
    return f"mcptap.o{origin}."


def scoped(value: bytes, prefix: str, path: str, name_tag: str = "") -> bytes:
    """``value`` with its name as ``{name_tag}name``, ``Path=P`` as
    ``Path={prefix}P`` (``/``: the prefix itself, which path-matches ``prefix``
    and ``prefix/…`` only), a missing or invalid Path (§5.2.4) as the prefix
    plus ``path``'s default path (§5.1.4; ``path``: the request's path at the
    server), and no ``Domain``."""
    parts = value.decode("latin-1").split(";")
    first = parts[0]
    if name_tag:
        name, eq, rest = first.partition("=")
        # a pair without "=" is a nameless cookie (RFC 6265bis §5.6): the whole of it is the value
        first = f"{name_tag}{name.strip()}={rest}" if eq else f"{name_tag}={first.strip()}"
    out, cookie_path = [first], None
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


def inward(value: bytes, name_tag: str) -> bytes | None:
    """A ``Cookie`` value sent to a fronted server: only the pairs named
    ``{name_tag}…``, the tag removed, in the order sent; None when none is."""
    kept = []
    for pair in value.decode("latin-1").split(";"):
        name, eq, v = pair.strip().partition("=")
        if name.startswith(name_tag):
            own = name[len(name_tag):]
            kept.append(f"{own}={v}" if own else v)
    return "; ".join(kept).encode("latin-1") if kept else None


def default_path(path: str) -> str:
    """RFC 6265 §5.1.4: the default cookie path of a request path."""
    if not path.startswith("/") or path.count("/") == 1:
        return "/"
    return path[: path.rfind("/")]
