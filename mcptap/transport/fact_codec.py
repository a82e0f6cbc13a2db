"""The HTTP tap's fact stream: relay batches from the relay process to the
recorder process (``http_recorder``), one frame per batch.

A frame is ``HEAD`` (``<BqIQ``: kind, t_us, meta size, body size), then
``meta`` (``marshal`` of a list of tuples, one per recorded item, and the
sizes of the out-of-line bodies), then the
batch's large bodies back to back. Only what ``HttpObserver`` reads is sent:
facts whole (as field tuples), ``SendClient``/``SendUpstream`` as their data
only (the recorder counts and digests forwarded bytes); commands and
``ClientOpened`` are left out. A body of ``OOB_FROM`` bytes or more travels
out of line (its place in the tuple holds its index), so it is never copied
into ``meta``: the relay writes it with ``os.writev`` from the object it
forwarded, and a body forwarded in the same batch (``ResponseBody`` and the
``SendClient`` that carries it, as it is or as a chunk) crosses the pipe once:
the write is sent as its framing and the body's index. On a 64 MiB SSE event
(``scripts/bench_http.py big``, same run): relay CPU 240 ms instead of 350,
recorder CPU 300 instead of 370 (bodies of 8-64 KiB were copied into meta,
and each chunk crossed the pipe twice).

Why marshal of tuples and not pickle of the dataclasses: for a round trip's
two batches, 2-5 µs to encode instead of 17-26 µs, 1.6 µs to decode instead
of 16-23 µs (Python 3.11, this machine).

Kinds: ``BATCH`` (t_us: the relay's clock when it produced the batch),
``START`` (meta: the tap's listen authority, str), ``END`` (meta: exit code
and the end record's extra fields), ``SPILLED`` (meta: the frame's pieces as
``(offset, size)`` in the spill file, read back by the recorder), ``LOST``
(meta: ``LOST_META``, batches neither the pipe, memory nor the spill file
could take: how many, their frames' bytes, the bytes they forwarded c2s and
s2c, and 1 if the spill file was at its bound, 0 if it could not be written;
then ``marshal`` of the exchanges whose facts they carried, a sorted list, or
None for every one, and of the last bytes of the response body each exchange
lost in them (``body_tails``; None: not known): ``lost_meta``/``read_lost``/
``read_tails``).
"""

from __future__ import annotations

import dataclasses
import marshal
import operator
import struct
from collections.abc import Callable
from typing import Any

from mcptap.relay.http import events as r

HEAD = struct.Struct("<BqIQ")
BATCH, START, END, SPILLED, LOST = 1, 2, 3, 4, 5
#: a LOST frame's meta: batches, frame bytes, bytes forwarded c2s, s2c, past the bound (fixed size:
#: the relay adds each batch it drops to the LOST frame still queued last, in place)
LOST_META = struct.Struct("<QQQQB")
#: bodies at least this large go out of line (never copied into meta); the tap reads
#: 64 KiB at a time, so a large body's pieces are a little under that
OOB_FROM = 8 << 10
#: bytes of framing a forwarded write may put before a body it carries (a chunk size line)
_FRAMING = 16

_SEND_CLIENT, _SEND_UPSTREAM, _REQUEST_BODY, _RESPONSE_BODY = 0, 1, 2, 3
#: the other facts the observer reads, sent as all their fields (code = index + 4)
_FACTS: tuple[type, ...] = (r.RequestStarted, r.RequestEnded, r.ResponseStarted, r.EndpointRewritten, r.AuthRewritten,
                            r.ResponseEnded, r.ConnClosed)
_GET: dict[type, tuple[int, Callable[[Any], tuple[Any, ...]]]] = {
    cls: (i + 4, operator.attrgetter(*[f.name for f in dataclasses.fields(cls)])) for i, cls in enumerate(_FACTS)}


def _oob(bodies: list[Any], data: Any) -> int:
    for i, b in enumerate(bodies):
        if b is data:
            return i
    bodies.append(data)
    return len(bodies) - 1


def _forwarded(bodies: list[Any], data: Any) -> Any:
    """A large forwarded write as ``(head, body index, tail)`` when it is a
    body of this batch in its transfer framing (a chunk: size line, body,
    CRLF), so the body's bytes cross the pipe once; else out of line."""
    for i in range(len(bodies) - 1, -1, -1):
        b = bodies[i]
        if b is data:
            return i
        n = len(b)
        if n + _FRAMING < len(data) or n > len(data):
            continue
        for k in range(len(data) - n + 1):
            if data.startswith(b, k):        # compares in place (no slice)
                return (data[:k], i, data[k + n:])
    return _oob(bodies, data)


def encode(items: list[Any]) -> tuple[bytes, list[Any]] | None:
    """``(meta, bodies)`` of one relay batch, or None when it holds nothing
    to record. ``bodies``: the out-of-line data objects themselves (no copy)."""
    out: list[tuple[Any, ...]] = []
    bodies: list[Any] = []
    get = _GET.get
    for it in items:
        t = type(it)
        if t is r.SendClient or t is r.SendUpstream:
            d = it.data
            out.append((_SEND_CLIENT if t is r.SendClient else _SEND_UPSTREAM, _forwarded(bodies, d) if len(d) >= OOB_FROM else d))
        elif t is r.ResponseBody or t is r.RequestBody:
            d = it.data
            out.append((_RESPONSE_BODY if t is r.ResponseBody else _REQUEST_BODY, it.exchange, it.conn,
                        _oob(bodies, d) if len(d) >= OOB_FROM else d))
        else:
            g = get(t)
            if g is not None:
                out.append((g[0], g[1](it)))
    if not out:
        return None
    return marshal.dumps((out, [len(b) for b in bodies] if bodies else None)), bodies


def decode(meta: bytes, read: Callable[[int], bytes]) -> list[Any]:
    """The items ``encode`` sent (``SendClient``/``SendUpstream`` with
    placeholder connection numbers: the observer reads only their data);
    ``read(n)``: the frame's next ``n`` body bytes."""
    out, sizes = marshal.loads(meta)
    bodies = [read(n) for n in sizes] if sizes else []
    items: list[Any] = []
    for rec in out:
        code = rec[0]
        if code <= _RESPONSE_BODY:
            d = rec[-1]
            if type(d) is int:
                d = bodies[d]
            elif type(d) is tuple:
                d = d[0] + bodies[d[1]] + d[2]
            if code == _SEND_CLIENT:
                items.append(r.SendClient(-1, d))
            elif code == _SEND_UPSTREAM:
                items.append(r.SendUpstream(-1, -1, d))
            elif code == _RESPONSE_BODY:
                items.append(r.ResponseBody(rec[1], rec[2], d))
            else:
                items.append(r.RequestBody(rec[1], rec[2], d))
        else:
            items.append(_FACTS[code - 4](*rec[1]))
    return items


def frame(kind: int, t_us: int, meta: bytes, bodies: list[Any] | None = None) -> list[Any]:
    """The buffers of one frame, for ``os.writev`` (bodies: not copied)."""
    if not bodies:
        return [HEAD.pack(kind, t_us, len(meta), 0), meta]
    return [HEAD.pack(kind, t_us, len(meta), sum(len(b) for b in bodies)), meta, *bodies]


def forwarded_sizes(meta: bytes) -> tuple[int, int]:
    """Bytes a batch's ``SendUpstream`` (c2s) and ``SendClient`` (s2c) forwarded,
    from its ``meta`` alone (the bodies' sizes are in it): what a dropped batch
    leaves out of the capture's byte counts."""
    c2s, s2c, _ = dropped_facts(meta)
    return c2s, s2c


def dropped_facts(meta: bytes) -> tuple[int, int, set[int]]:
    """``forwarded_sizes`` of a batch's ``meta``, and the exchanges whose facts
    (heads, bodies, ends) it carries: those a dropped batch cuts."""
    out, sizes = marshal.loads(meta)
    got = [0, 0]
    exchanges: set[int] = set()
    for rec in out:
        code = rec[0]
        if code == _SEND_UPSTREAM or code == _SEND_CLIENT:
            d = rec[-1]
            n = sizes[d] if type(d) is int else len(d[0]) + sizes[d[1]] + len(d[2]) if type(d) is tuple else len(d)
            got[code == _SEND_CLIENT] += n
        elif code == _REQUEST_BODY or code == _RESPONSE_BODY:
            exchanges.add(rec[1])
        elif _FACTS[code - 4] is not r.ConnClosed:
            exchanges.add(rec[1][0])                # every other fact's first field is its exchange
    return got[0], got[1], exchanges


#: exchanges a LOST frame names at most; past them it stands for every open one (a flood of
#: short exchanges must not grow the frame, rewritten in place for each batch, without bound)
LOST_EXCHANGES = 4096


#: bytes of a lost response body's end kept per exchange: enough to tell a blank line (an SSE event's end)
TAIL = 4


def lost_meta(batches: int, size: int, c2s: int, s2c: int, full: int, exchanges: set[int] | None,
              tails: dict[int, bytes] | None = None) -> bytes:
    """A LOST frame's meta (module doc); ``exchanges`` None or past ``LOST_EXCHANGES``: every one;
    ``tails`` (``body_tails``) None or past ``LOST_EXCHANGES``: not known."""
    named = sorted(exchanges) if exchanges is not None and len(exchanges) <= LOST_EXCHANGES else None
    kept = tails if tails is not None and len(tails) <= LOST_EXCHANGES else None
    return LOST_META.pack(batches, size, c2s, s2c, full) + marshal.dumps((named, kept))


def body_tails(meta: bytes, bodies: list[Any]) -> dict[int, bytes]:
    """``{exchange: the last TAIL bytes of the response body it carried}`` of a batch
    (``meta`` and its out-of-line ``bodies``, as ``encode`` gave them); an exchange
    without response body bytes in it is not named."""
    out: dict[int, bytes] = {}
    for rec in marshal.loads(meta)[0]:
        if rec[0] == _RESPONSE_BODY:
            d = rec[-1]
            end = bytes(bodies[d][-TAIL:]) if type(d) is int else (
                bytes(bodies[d[1]][-TAIL:]) + d[2] if type(d) is tuple else d[-TAIL:])
            if end:
                out[rec[1]] = (out.get(rec[1], b"") + end)[-TAIL:]
    return out


def add_tails(into: dict[int, bytes] | None, tails: dict[int, bytes]) -> dict[int, bytes] | None:
    """``into`` (the tails of batches lost before) with those of the batch lost after them."""
    if into is None:
        return None
    for x, t in tails.items():
        into[x] = (into.get(x, b"") + t)[-TAIL:]
    return into if len(into) <= LOST_EXCHANGES else None


def read_lost(meta: bytes) -> tuple[int, int, int, int, int, list[int] | None]:
    """``(batches, size, c2s, s2c, full, exchanges)`` of a LOST frame's meta
    (exchanges None: every open one; a meta that cannot be read: one batch, nothing known)."""
    if len(meta) < LOST_META.size:
        return 1, 0, 0, 0, 0, None
    n, size, c2s, s2c, full = LOST_META.unpack_from(meta)
    named = _lost_parts(meta)[0]
    return n, size, c2s, s2c, full, named if isinstance(named, list) else None


def rest(bufs: list[Any], done: int) -> list[Any]:
    """What is left of a frame's buffers ``bufs`` (``frame``) after ``done``
    bytes of them were written (a partial ``writev``)."""
    out = []
    for b in bufs:
        n = len(b)
        if done >= n:
            done -= n
            continue
        out.append(memoryview(b)[done:] if done else b)
        done = 0
    return out


def read_tails(meta: bytes) -> dict[int, bytes] | None:
    """The ``body_tails`` a LOST frame's meta carries (None: not known)."""
    tails = _lost_parts(meta)[1]
    return tails if isinstance(tails, dict) else None


def _lost_parts(meta: bytes) -> tuple[Any, Any]:
    """(exchanges, tails) after a LOST frame's counts; (None, None) when unreadable."""
    try:
        got = marshal.loads(meta[LOST_META.size:]) if len(meta) > LOST_META.size else None
    except (EOFError, ValueError, TypeError):
        return None, None
    if isinstance(got, tuple) and len(got) == 2:
        return got[0], got[1]
    return got, None            # an older frame: the exchanges alone
