"""Which fields of a capture record ``scrub.Scrubber`` keeps as they are (pure):
the record's structure and mcptap's own vocabulary, never peer text. A field is
kept by its place in the record, not by its name, because the same name means
different things at different places: a message's ``id`` is the JSON-RPC id
(pairing needs it), an SSE event's ``id`` (``transport.sse.id``, an ``sse``
record's ``sse.id``) is text the server chose; an ``http`` record's ``auth`` is
the tap's tag for an OAuth exchange (``prm``, ``as_meta``, ``as``, ``mcp``),
while a field named ``auth`` in a peer's data is a secret; an ``http`` record's
``event`` is the tap's (``request``, ``sse``…), an SSE event's ``event`` the
server's.

A place is a tuple: the record's ``type``, then the names of the fields that
lead to the object holding the field (``("message", "transport", "sse")``).
"""

from __future__ import annotations

#: fields at the top of any record (capture-format.md): numbering, time, the header's
#: format facts, the message envelope's annotations, event names, digests, process facts
_TOP = frozenset({"type", "seq", "t_us", "dir", "kind", "pair", "latency_us", "phase", "rev", "offset", "link", "members",
                  "eol", "json", "raw", "raw_b64", "findings", "event", "exchange", "conn", "status", "format", "version",
                  "mcptap", "started", "rules", "scrubbed", "code", "signal", "exit_code", "pid", "bytes", "messages",
                  "sha256"})

#: the JSON-RPC envelope of a request the end record names as never answered
_PENDING = frozenset({"dir", "id", "method", "id_text"})

#: the tap's own vocabulary in an SSE event's facts (``cut``: ``gap``, ``client_closed``)
_SSE = frozenset({"cut"})

#: per place (beyond the top of any record): the fields kept there
_KEPT: dict[tuple[str, ...], frozenset[str]] = {
    # the JSON-RPC envelope (kinds, pairing, lifecycle stay)
    ("message",): frozenset({"id", "method"}),
    # the HTTP tap's own vocabulary (docs/http-tap.md "Capture records"): the OAuth exchange's tag,
    # how an exchange ended, which side closed a connection, what the tap rewrote
    ("http",): frozenset({"auth", "how", "side", "what"}),
    ("message", "transport"): frozenset({"stream"}),
    ("message", "transport", "sse"): _SSE,
    ("http", "sse"): _SSE,
    ("end", "pending"): _PENDING,
    ("end", "cancelled_unanswered"): _PENDING,
}

#: places that are lists of objects (each object is at the list's place)
_LISTS = frozenset({("end", "pending"), ("end", "cancelled_unanswered")})

#: per place: peer text that is an opaque value, not a URL (an SSE event id: the
#: ``Last-Event-ID`` header a client resumes with carries it): the string patterns
#: only, so it gets the placeholder that header's value gets
_OPAQUE: dict[tuple[str, ...], frozenset[str]] = {
    ("message", "transport", "sse"): frozenset({"id"}),
    ("http", "sse"): frozenset({"id"}),
}


def kept(place: tuple[str, ...], key: str) -> bool:
    """True when field ``key`` of the object at ``place`` is structure or mcptap's
    own vocabulary (kept as it is)."""
    return key in _KEPT.get(place, ()) or len(place) == 1 and key in _TOP


def opaque(place: tuple[str, ...], key: str) -> bool:
    """True when field ``key`` at ``place`` is peer text to scan as text, never as a URL."""
    return key in _OPAQUE.get(place, ())


def listed(place: tuple[str, ...]) -> bool:
    """True when ``place`` names a list whose objects have fields kept (each object
    is then at ``place`` itself)."""
    return place in _LISTS
