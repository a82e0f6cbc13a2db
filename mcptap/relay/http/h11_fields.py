"""The fields of an h11 head that its state machine reads, scanned once (pure).

For each head h11 handles it scans the whole field list again per question:
``_keep_alive`` (``Connection``), ``has_expect_100_continue`` (``Expect``), the
``Upgrade`` check and ``_body_framing`` (``Transfer-Encoding``, then
``Content-Length``), each through ``get_comma_header``; a keep-alive round trip
took 18 such scans in the relay (a head is scanned when it is received and
again when it is sent, the response head passed on unchanged a third time).
``fields(headers)`` collects those five fields' comma-separated values in one
pass, as ``get_comma_header`` splits them (lower-cased, stripped, empty ones
left out), and remembers the last field list it read (a head read on one
connection is often the one sent on the other). The answers below are h11's
own functions' (h11 0.16, ``h11._connection``/``h11._headers``), read from it.
"""

from __future__ import annotations

from typing import Any

import h11

_NAMES = frozenset({b"connection", b"transfer-encoding", b"content-length", b"expect", b"upgrade"})
#: the field list ``fields`` read last and what it found (a reference is kept: never a reused id)
_last: list[Any] = [None, None]
_SEND_BODY = h11.SEND_BODY
_RESPONSE = h11.Response
_NONE: list[bytes] = []


def fields(headers: Any) -> dict[bytes, list[bytes]]:
    """``{name: get_comma_header(headers, name)}`` for the fields h11's state machine
    reads (a name absent: no key)."""
    if _last[0] is headers:
        return _last[1]     # type: ignore[no-any-return]
    out: dict[bytes, list[bytes]] = {}
    for _, name, raw in headers._full_items:
        if name in _NAMES:
            vals = out.setdefault(name, [])
            for v in raw.lower().split(b","):
                v = v.strip()
                if v:
                    vals.append(v)
    _last[0], _last[1] = headers, out
    return out


def keep_alive(ev: Any, f: dict[bytes, list[bytes]]) -> bool:
    """``h11._connection._keep_alive(ev)``."""
    return b"close" not in f.get(b"connection", _NONE) and ev.http_version >= b"1.1"


def expects_continue(ev: Any, f: dict[bytes, list[bytes]]) -> bool:
    """``h11._headers.has_expect_100_continue(ev)`` (a request)."""
    return ev.http_version >= b"1.1" and b"100-continue" in f.get(b"expect", _NONE)


def body_io(method: Any, ev: Any, f: dict[bytes, list[bytes]], table: Any) -> Any:
    """The body reader or writer ``Connection._get_io_object`` makes from ``table``
    (``READERS``/``WRITERS``) for a role entering ``SEND_BODY`` with head ``ev``
    (``_body_framing(method, ev)``); None where h11 would assert (a
    ``Transfer-Encoding`` other than chunked alone): then ask h11."""
    if type(ev) is _RESPONSE:
        status = ev.status_code
        if status == 204 or status == 304 or method == b"HEAD" or (method == b"CONNECT" and 200 <= status < 300):
            return table[_SEND_BODY]["content-length"](0)
    te = f.get(b"transfer-encoding")
    if te:
        return table[_SEND_BODY]["chunked"]() if te == [b"chunked"] else None
    cl = f.get(b"content-length")
    if cl:
        return table[_SEND_BODY]["content-length"](int(cl[0]))
    if type(ev) is _RESPONSE:
        return table[_SEND_BODY]["http/1.0"]()
    return table[_SEND_BODY]["content-length"](0)


def framing(method: Any, ev: Any, f: dict[bytes, list[bytes]]) -> str | None:
    """``_body_framing(method, ev)[0]`` for a final response (None: ask h11)."""
    status = ev.status_code
    if status == 204 or status == 304 or method == b"HEAD" or (method == b"CONNECT" and 200 <= status < 300):
        return "content-length"
    te = f.get(b"transfer-encoding")
    if te:
        return "chunked" if te == [b"chunked"] else None
    return "content-length" if f.get(b"content-length") else "http/1.0"
