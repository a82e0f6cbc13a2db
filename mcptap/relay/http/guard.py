"""Requests an intermediary must not forward (pure, no I/O, no h11 state).

The tap re-frames every request it forwards, so a request whose framing or
target host two HTTP implementations could read differently would let the
upstream see a request the capture never recorded (request smuggling). Such a
request is answered 400 by the tap, recorded (``http.request_rejected``) and
never forwarded; the connection is closed after the answer:

* both ``Content-Length`` and ``Transfer-Encoding`` (RFC 9112 §6.1: "a server
  MAY reject … Regardless, the server MUST close the connection"; §6.3 item 3:
  an intermediary forwarding it would otherwise have to drop Content-Length);
* more than one ``Transfer-Encoding`` field line, or ``Content-Length`` field
  lines that disagree (RFC 9112 §6.3 item 5; h11 already refuses most of these);
* no ``Host``, more than one ``Host`` field line, or a Host value that is not
  ``uri-host [":" port]``, e.g. one carrying userinfo
  (``127.0.0.1:1@evil.example``; RFC 9112 §3.2 "MUST respond with a 400",
  RFC 9110 §4.2.4 userinfo is an error);
* an absolute-form target (``POST http://h/mcp``) with userinfo or whose
  authority is not the Host (RFC 9112 §3.2.2: the server then ignores Host, so
  the upstream would route by a name the tap's Host check never saw); one that
  passes is forwarded in origin-form (``origin_form``: path and query), so the
  upstream sees one authority, the Host the tap sets;
* ``CONNECT`` (RFC 9110 §9.3.6: a request to a *proxy* to open a tunnel): a
  reverse proxy has no tunnel to open. Forwarded, an upstream's 2xx would
  switch both h11 connections to tunnel mode (nothing parsed, answered or
  recorded after it, and no timeout applies); so the tap answers it itself;
* a target in none of the forms a server accepts (RFC 9112 §3.2): not
  origin-form (``/…``), absolute-form with an http(s) scheme, or ``*``
  (authority-form ``host:port`` belongs to CONNECT).

Shapes: ``raw`` is ``[(name, value), …]`` of raw ``bytes`` as h11 parsed them.
Returns one line of text (for the 400 body and the capture), or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcptap.redact import scrub_url
from mcptap.redact.header_scan import scan_value

#: RFC 3986 host [":" port]: IP-literal, or reg-name / IPv4 (unreserved, pct-encoded, sub-delims)
_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\]|"
                   rb"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(:[0-9]*)?")


#: Host values ``_HOST`` accepted: every request of a client names the same one (bounded: a peer
#: inventing names only costs a re-match)
_VALID_HOSTS: set[bytes] = set()
_VALID_HOSTS_MAX = 256

_ABSOLUTE = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


def shown_target(target: bytes, clear: bool = False) -> str:
    """A refused request target as its reason quotes it: as the request record
    holds it, credentials (user info, secret query values, token shapes) as
    placeholders, or in clear (``clear``: ``record --record-secrets``, where the
    record's target is kept clear too)."""
    return target.decode("latin-1") if clear else scrub_url(target.decode("latin-1"))


def shown_host(host: str, clear: bool = False) -> str:
    """A Host value as a refusal quotes it: as the request record's Host field
    holds it, token shapes as placeholders unless ``clear`` (``--record-secrets``)."""
    return host if clear else scan_value(host)


def request_problem(raw: Iterable[tuple[bytes, bytes]], http_version: bytes = b"1.1", target: bytes = b"/",
                    method: bytes = b"GET", clear: bool = False) -> str | None:
    """Why a request with these header fields, request target and method must
    not be forwarded, or None. The reason quotes the peer's target and Host as
    the request record holds them: scrubbed, or in clear with ``clear``
    (``--record-secrets``)."""
    if method == b"CONNECT":
        return (f"CONNECT {shown_target(target, clear)!r}: the tap is a reverse proxy for one MCP server, "
                "not a tunnelling proxy (RFC 9110 §9.3.6); not forwarded")
    hosts: list[bytes] = []
    lengths: list[bytes] = []
    te = 0
    for name, value in raw:
        n = name.lower()
        if n == b"host":
            hosts.append(value)
        elif n == b"content-length":
            lengths.append(value)
        elif n == b"transfer-encoding":
            te += 1
    if te and lengths:
        return "request has both Content-Length and Transfer-Encoding (ambiguous framing, RFC 9112 §6.1); not forwarded"
    if te > 1:
        return "request has more than one Transfer-Encoding field (RFC 9112 §6.3); not forwarded"
    if len({v.strip() for v in lengths}) > 1:
        return "request has conflicting Content-Length fields (RFC 9112 §6.3); not forwarded"
    if len(hosts) > 1:
        return "request has more than one Host field (RFC 9112 §3.2); not forwarded"
    if not hosts:
        return None if http_version == b"1.0" else "request has no Host field (RFC 9112 §3.2); not forwarded"
    host = hosts[0]
    if b"@" in host:
        return f"Host {shown_host(host.decode('latin-1'), clear)!r} carries userinfo (RFC 9110 §4.2.4); not forwarded"
    if host not in _VALID_HOSTS:
        if _HOST.fullmatch(host) is None:
            return f"Host {shown_host(host.decode('latin-1'), clear)!r} is not a valid host[:port] (RFC 9112 §3.2); not forwarded"
        if len(_VALID_HOSTS) >= _VALID_HOSTS_MAX:
            _VALID_HOSTS.clear()
        _VALID_HOSTS.add(host)
    m = None if target[:1] == b"/" else _ABSOLUTE.match(target)     # origin-form (the common case) is never absolute
    if m is None and not target.startswith(b"/") and target != b"*":
        return (f"request target {shown_target(target, clear)!r} is not origin-form, absolute-form or '*' "
                "(RFC 9112 §3.2); not forwarded")
    if m is not None:
        if target.split(b":", 1)[0].lower() not in (b"http", b"https"):
            return f"request target {shown_target(target, clear)!r} is not an http(s) URL (RFC 9112 §3.2.2); not forwarded"
        authority = m.group(1)
        if b"@" in authority:
            return f"request target {shown_target(target, clear)!r} carries userinfo (RFC 9110 §4.2.4); not forwarded"
        if authority.lower() != host.lower():
            return (f"request target authority {shown_target(authority, clear)!r} is not the Host {shown_host(host.decode('latin-1'), clear)!r} "
                    "(RFC 9112 §3.2.2); not forwarded")
    return None


def origin_form(target: bytes) -> bytes:
    """The target to send upstream: an absolute-form target (already checked by
    ``request_problem``) as origin-form, its path (``/`` when empty) and query;
    any other target unchanged."""
    m = None if target[:1] == b"/" else _ABSOLUTE.match(target)
    if m is None:
        return target
    rest = target[m.end():].partition(b"#")[0]
    return rest if rest.startswith(b"/") else b"/" + rest


def host_name(host: str | None) -> str:
    """The name part of a Host header value, lower-case, brackets kept for IPv6."""
    if not host:
        return ""
    h = host.strip().lower()
    if h.startswith("["):
        return h[: h.find("]") + 1] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h
