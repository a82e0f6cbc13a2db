"""Which records of an HTTP capture belong to a request the tap refused itself
(pure, level 1): ``records.events.TAP_REFUSALS``, a DNS rebinding page's
``403``, a smuggling-prone head's ``400``, an unfronted OAuth URL's ``404``.
Such a request never reached the server.

Since the ``refused`` marker, the tap writes it on the exchange's ``http``
``request`` record and in the transport facts of its message records
(``transport.refused``, docs/http-tap.md). A capture written before has none;
what the tap recorded there says it all the same: the exchange's ``end``
record's ``how`` is one of ``TAP_REFUSALS`` (the tap answered, no ``response``
record came). :func:`mark_refusals` reads such a capture's records and gives
the refused ones the marker, so every reader treats an old capture's refused
requests as it does today's.

* ``refused_how(rec)``: the marker of a record (``http`` request, or message), or None.
* ``tap_answer(how)``: what the client got for it, ``{"how", "status", "reason"}``.
* ``mark_refusals(records, window)``: the records, in order, refused ones marked.
* ``unmarked_refusals(src)``: whether a capture file's bytes hold a refusal without the marker.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, Any

from mcptap.records.events import TAP_REFUSALS, TAP_REFUSED

#: records of other exchanges a request record is held back for, after its exchange's last
#: record, waiting for that exchange's end. The tap writes a refused exchange's ``end`` in the
#: same step as its request's last record (its head, or the body's message), so a few suffice;
#: past it the request is taken as forwarded
WINDOW = 64

#: records of the exchange, between its request head and its end, that a refusal leaves too
_BODY_EVENTS = frozenset({"request_body", "auth_rewrite"})


def refused_how(rec: dict[str, Any]) -> str | None:
    """The ``how`` of the tap's refusal a record carries (an ``http`` request
    record's ``refused``, a message record's ``transport.refused``), or None."""
    how = _fact(rec, "refused")
    return how if isinstance(how, str) and how else None


def _fact(rec: dict[str, Any], key: str) -> Any:
    """An HTTP transport fact of a record, as read: an ``http`` record's ``key``,
    a message record's ``transport[key]``; None for other records or when absent."""
    typ = rec.get("type")
    if typ == "http":
        return rec.get(key)
    if typ == "message":
        tr = rec.get("transport")
        return tr.get(key) if isinstance(tr, dict) else None
    return None


def tap_answer(how: str) -> dict[str, Any]:
    """What the client got for a request the tap refused with ``how``: ``{"how",
    "status", "reason"}`` (``TAP_REFUSALS``; status and reason None for a ``how``
    this mcptap does not know, a newer one's)."""
    status, reason = TAP_REFUSALS.get(how, (None, None))
    return {"how": how, "status": status, "reason": reason}


def needs_marking(header: dict[str, Any]) -> bool:
    """Whether a capture's records go through :func:`mark_refusals`: an HTTP capture
    written under other rules than these (header ``rules``), so perhaps before the
    marker; one of these rules marks every refusal itself (nothing to look ahead for,
    which ``show --follow`` of a capture being written would wait on)."""
    from mcptap.protocol.fingerprint import rules_fingerprint

    return header.get("transport") == "http" and header.get("rules") != rules_fingerprint()


def _marked(rec: dict[str, Any], how: str) -> dict[str, Any]:
    """``rec`` (a copy) with the marker, as the tap writes it today."""
    if rec.get("type") == "http":
        return rec if rec.get("event") != "request" else dict(rec, refused=how)
    if rec.get("dir") != "c2s":
        return rec
    return dict(rec, transport=dict(rec["transport"], refused=how))


class _Watch:
    """A request record held back: its exchange's records so far (their places
    in the queue) and how many records of others came since its last one."""

    __slots__ = ("first", "parts", "since")

    def __init__(self, first: int) -> None:
        self.first = first
        self.parts = [first]
        self.since = 0


def mark_refusals(records: Iterable[dict[str, Any]], window: int = WINDOW) -> Iterator[dict[str, Any]]:
    """``records`` (an HTTP capture's, as read) in their order, those of a request
    the tap refused itself carrying the ``refused`` marker (module doc): a request
    record without one is held back, with the records after it, until its
    exchange shows how it went on: its ``end`` with a tap refusal's ``how`` (then
    it and its body's message records are marked), a ``response`` or any other
    record of it (forwarded), or ``window`` records of others after its last one.
    Records that carry the marker already, and everything of a capture written
    since the marker, pass through unchanged (copies are marked, not the records
    given). Memory: the records held, at most ``window`` after each request record
    waiting for its end."""
    queue: deque[dict[str, Any]] = deque()
    base = 0                        # the place of queue[0] among the records read
    watching: dict[int, _Watch] = {}
    n = 0
    for rec in records:
        got = _fact(rec, "exchange")
        ex = got if type(got) is int else None
        w = watching.get(ex) if ex is not None else None
        if w is not None:
            if rec.get("type") == "http" and rec.get("event") == "end":
                how = rec.get("how")
                if how in TAP_REFUSED:
                    for at in w.parts:
                        queue[at - base] = _marked(queue[at - base], str(how))
                del watching[ex]   # type: ignore[arg-type]
            elif (rec.get("type") == "message" and rec.get("dir") == "c2s") or rec.get("event") in _BODY_EVENTS:
                w.parts.append(n)
                w.since = -1
            else:
                del watching[ex]   # type: ignore[arg-type]
        elif (ex is not None and rec.get("type") == "http" and rec.get("event") == "request" and "refused" not in rec
              and ex not in watching):
            watching[ex] = _Watch(n)
            w = watching[ex]
            w.since = -1
        queue.append(rec)
        n += 1
        if watching:
            for k, v in list(watching.items()):
                v.since += 1
                if v.since > window:
                    del watching[k]
        first = min((v.first for v in watching.values()), default=n)
        while base < first:
            yield queue.popleft()
            base += 1
    yield from queue


_HOW = re.compile(rb'"how"\s*:\s*"(?:' + b"|".join(h.encode("ascii") for h in sorted(TAP_REFUSED)) + rb')"')
_MARKER = re.compile(rb'"refused"\s*:\s*"')
_BLOCK = 1 << 20


def unmarked_refusals(src: IO[bytes]) -> bool:
    """Whether a capture's bytes (``src``, read to its end in blocks) hold an
    ``end`` of a tap refusal (its ``how`` in any spacing) and no ``refused``
    marker anywhere: a capture written before the marker whose refused requests
    :func:`mark_refusals` must find. A payload may hold the same text: then the
    answer is True where a record-by-record reading finds nothing to mark
    (only slower, never wrong)."""
    refusal = marker = False
    tail = b""
    while True:
        block = src.read(_BLOCK)
        if not block:
            return refusal and not marker
        data = tail + block
        refusal = refusal or _HOW.search(data) is not None
        marker = marker or _MARKER.search(data) is not None
        if marker:
            return False
        tail = data[-64:]
