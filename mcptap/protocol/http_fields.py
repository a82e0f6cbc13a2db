"""HTTP header fields as the HTTP rules read them (pure, level 1): a field's
value, a media type, an Accept list, and the end-to-end fields a Connection
header would have a proxy remove, and a value as a finding may quote it.

Shapes: ``headers`` are ``[(name, value), …]`` of ``bytes`` as h11 gives
them (names in any case); values are returned as ``str`` (latin-1).
"""

from __future__ import annotations

from mcptap.redact.header_scan import scan_value

Headers = list[tuple[bytes, bytes]]

#: end-to-end fields MCP relies on: a proxy removes them when Connection names them
MCP_FIELDS = ("mcp-session-id", "mcp-protocol-version", "authorization", "last-event-id", "content-type", "accept",
              "origin", "cookie", "www-authenticate")


def header(headers: Headers | None, name: str) -> str | None:
    """First value of ``name`` (case-insensitive) as str, or None."""
    if not headers:
        return None
    key = name.lower().encode("latin-1")
    for n, v in headers:
        if n.lower() == key:
            return v.decode("latin-1")
    return None


def shown(value: str | None, clear: bool = False) -> str | None:
    """A header value as a finding quotes it: with the token shapes the capture's
    header fields have as placeholders (``redact.header_scan``), so a message never
    shows a secret the field it quotes hides; as it is when ``clear`` (``record
    --record-secrets``: the fields hold it in clear too); None stays None."""
    return scan_value(value) if value and not clear else value


def media_type(value: str | None) -> tuple[str, bool]:
    """``(type/subtype lowercased, unusual)``; ``unusual`` is True when the
    value has parameters other than ``charset=utf-8`` or is not lower case."""
    if not value:
        return "", False
    base, _, params = value.partition(";")
    t = base.strip()
    extra = [p.strip() for p in params.split(";") if p.strip() and p.strip().lower().replace(" ", "") != "charset=utf-8"]
    return t.lower(), bool(extra) or t != t.lower()


def accepts(value: str | None, wanted: str) -> bool:
    """Whether an Accept header names ``wanted`` (exactly, any case, any params)."""
    if not value:
        return False
    return any(part.split(";")[0].strip().lower() == wanted for part in value.split(","))


def dropped_by_connection(headers: Headers | None) -> list[str]:
    """The fields of ``MCP_FIELDS`` that a Connection header of ``headers``
    names (lower case, in the order named; RFC 9110 §7.6.1)."""
    if not headers:
        return []
    named: list[str] = []
    for n, v in headers:
        if n.lower() == b"connection":
            for token in v.decode("latin-1").split(","):
                t = token.strip().lower()
                if t in MCP_FIELDS and t not in named:
                    named.append(t)
    return named
