"""h11 events for the heads the relay forwards, without validating again what
h11's own parser validated (pure, no I/O).

Building an ``h11.Request``/``h11.Response`` from a header list runs every
name and value through h11's field regexes; on a keep-alive round trip those
checks of fields the same h11 parsed a moment earlier were ~15% of the relay's
CPU. These helpers pass ``_parsed=True`` (the flag h11's readers use for their
own events), so only the framing fields are normalised (Content-Length,
Transfer-Encoding: checked as always) and the method and request target are
still validated. They are for header lists whose names and values all came
out of an h11 parser, plus values checked here once (``valid_value``: the
upstream authority the relay writes into ``Host``). Anything the relay
rewrote itself (OAuth fronting, a form's Content-Length) goes through the
validating constructors as before.

Shapes: ``headers`` are ``[(name, value), …]`` of ``bytes``; ``method``,
``target`` and ``reason`` are ``bytes``. h11's own errors
(``LocalProtocolError``) are raised as by the public constructors.
"""

from __future__ import annotations

from functools import lru_cache

import h11
from h11._events import method_re, request_target_re  # h11 is pinned to 0.16 (pyproject.toml)
from h11._headers import normalize_and_validate
from h11._util import validate

Headers = list[tuple[bytes, bytes]]

_set = object.__setattr__       # h11's events are frozen dataclasses: set as their constructors do

#: EndOfMessage without trailers (immutable: h11 events are frozen)
END = h11.EndOfMessage()


def request(method: bytes, target: bytes, headers: Headers) -> h11.Request:
    """A request head whose fields came from h11's parser (see module doc):
    the event ``h11.Request(method=…, target=…, headers=…, _parsed=True)``
    builds, with the same checks in the same order and the same errors, without
    its constructor's generic work (an ABC ``isinstance``, the Host count read
    through ``Sequence.__iter__``, four frozen-dataclass sets through a keyword
    call): 4-5 µs instead of ~11 on the round trip's one request head."""
    fields = normalize_and_validate(headers, _parsed=True)      # framing fields checked as always
    hosts = 0
    for _, name, _ in fields._full_items:
        if name == b"host":
            hosts += 1
    if hosts == 0:
        raise h11.LocalProtocolError("Missing mandatory Host: header")
    if hosts > 1:
        raise h11.LocalProtocolError("Found multiple Host: headers")
    validate(method_re, method, "Illegal method characters")
    validate(request_target_re, target, "Illegal target characters")
    ev = object.__new__(h11.Request)
    _set(ev, "headers", fields)
    _set(ev, "method", method)
    _set(ev, "target", target)
    _set(ev, "http_version", b"1.1")
    return ev


def response(status: int, reason: bytes, headers: Headers) -> h11.Response:
    """A final response head whose fields came from h11's parser; ``status`` as h11 parsed it."""
    return h11.Response(status_code=status, headers=headers, reason=reason, _parsed=True)


def passed(ev: h11.Response, headers: Headers) -> h11.Response:
    """``response(ev.status_code, ev.reason, headers)`` for a final response ``ev`` parsed by h11:
    ``ev`` itself when that is the same head (``headers`` are its fields unchanged, and it is
    HTTP/1.1, the only version h11 sends), so the round trip's head is not built twice."""
    if ev.http_version == b"1.1" and headers == ev.headers.raw_items():
        return ev
    return response(ev.status_code, ev.reason, headers)


def informational(status: int, reason: bytes, headers: Headers) -> h11.InformationalResponse:
    """A 1xx response head whose fields came from h11's parser."""
    return h11.InformationalResponse(status_code=status, headers=headers, reason=reason, _parsed=True)


def end(trailers: Headers) -> h11.EndOfMessage:
    """The end of a forwarded message with the trailer fields h11 parsed."""
    return h11.EndOfMessage(headers=trailers, _parsed=True) if trailers else END


@lru_cache(maxsize=64)
def valid_value(value: bytes) -> bool:
    """True when h11 accepts ``value`` as a field value (checked once per value)."""
    try:
        h11.Request(method=b"GET", target=b"/", headers=[(b"Host", value)])
    except h11.LocalProtocolError:
        return False
    return True
