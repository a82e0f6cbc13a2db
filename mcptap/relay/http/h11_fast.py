"""h11 events sent and received without work h11 does that cannot change them (pure, no I/O).

Every event h11 sends or returns goes through ``Connection._process_event``: a
copy of the states, the event-triggered and state-triggered transitions run to
a fixed point (each with its own dict copy), the keep-alive and 100-continue
checks and the reader/writer refresh. For a ``Data`` event in ``SEND_BODY``
that pass changes nothing but the 100-continue flag: ``(SEND_BODY, Data)``
leads back to ``SEND_BODY`` for either role, the states were already at the
fixed point (h11 fires the state-triggered transitions after every change),
so neither the writer nor the reader is replaced. On a keep-alive JSON round
trip the two bodies' four ``Data`` events were ~4 of its ~14 such passes.

* ``send_data(conn, data)``: the bytes ``conn.send(h11.Data(data=data))``
  returns, by the connection's own writer (Content-Length or chunked: the
  length checks and the framing are h11's), with the same errors and the same
  ``ERROR`` state after one;
* ``next_data(conn)``: the ``Data`` event ``conn.next_event()`` would return
  now when it is certain to be one (the reader is inside a Content-Length body
  or inside a chunk, bytes are buffered), extracted by the connection's own
  reader; None otherwise (then call ``next_event``: chunk headers, trailers,
  the end of a message and every error stay with h11's parser);
* ``send_response(conn, ev)``: ``conn.send(ev)`` for a final response head
  that came out of an h11 parser unchanged (``heads.passed`` returned it).
  ``send`` first rebuilds every response through the validating
  ``h11.Response`` constructor (``_clean_up_response_headers_for_sending``:
  every field through h11's regexes again) to add ``Connection: close`` or
  change the framing; where it would do neither (the connection stays
  alive, the body is framed by Content-Length or has none) the head is the
  one h11 parsed and is sent as it is, through the same state pass and writer.

Relies on ``h11.Connection._writer``/``_reader``/``_receive_buffer``/``_process_error``
and the readers' fields (h11 0.16, pinned in pyproject.toml; ``passbody.py`` reads
the same ones); ``SUPPORTED`` is False where they are missing, and then both fall
back to h11's public calls.
"""

from __future__ import annotations

from typing import Any

import h11
from h11._connection import _body_framing
from h11._readers import ChunkedReader, ContentLengthReader
from h11._writers import ChunkedWriter, ContentLengthWriter

_probe = h11.Connection(h11.CLIENT)
SUPPORTED = all(hasattr(_probe, a) for a in ("_writer", "_reader", "_receive_buffer", "_process_error", "_process_event",
                                             "_request_method", "_cstate")) and all(
    hasattr(ChunkedReader(), a) for a in ("_bytes_in_chunk", "_bytes_to_discard", "_reading_trailer")) and hasattr(
    ContentLengthReader(1), "_remaining") and all(hasattr(w, "send_data") for w in (ChunkedWriter, ContentLengthWriter))
del _probe

_SEND_BODY = h11.SEND_BODY
_CLIENT = h11.CLIENT


def send_data(conn: h11.Connection, data: bytes) -> bytes:
    """``conn.send(h11.Data(data=data))`` (see module doc). Raises
    ``h11.LocalProtocolError`` as ``send`` (too much data for the declared
    Content-Length, not in a body), leaving ``conn`` in ``ERROR`` as it does."""
    w: Any = conn._writer
    t = type(w)
    if not SUPPORTED or conn.our_state is not _SEND_BODY or (t is not ContentLengthWriter and t is not ChunkedWriter):
        return conn.send(h11.Data(data=data))
    if conn.our_role is _CLIENT:
        conn.client_is_waiting_for_100_continue = False        # as _process_event, before the writer runs
    parts: list[bytes] = []
    try:
        w.send_data(data, parts.append)
    except BaseException:
        conn._process_error(conn.our_role)
        raise
    return b"".join(parts)


def next_data(conn: h11.Connection) -> h11.Data | None:
    """The ``Data`` event ``conn.next_event()`` would return now, taken by the
    connection's own reader; None when the next event may be anything else."""
    if not SUPPORTED or conn.their_state is not _SEND_BODY or not conn._receive_buffer:
        return None
    rd: Any = conn._reader
    t = type(rd)
    if t is ContentLengthReader:
        if not rd._remaining:
            return None
    elif t is not ChunkedReader or rd._reading_trailer or rd._bytes_to_discard or not rd._bytes_in_chunk:
        return None
    ev: h11.Data = rd(conn._receive_buffer)     # a Data: bytes are buffered and the body has bytes left
    if conn.their_role is _CLIENT:
        conn.client_is_waiting_for_100_continue = False
    return ev


def send_response(conn: h11.Connection, ev: h11.Response) -> bytes:
    """``conn.send(ev)`` for a final response head ``ev`` h11 parsed (its
    fields unchanged, HTTP/1.1); the same bytes, errors and state."""
    cs: Any = conn._cstate
    if not SUPPORTED or conn.our_state is not h11.SEND_RESPONSE or not cs.keep_alive or ev.http_version != b"1.1":
        return conn.send(ev)
    method: Any = conn._request_method      # None before a request: h11's send passes it on the same way
    if _body_framing(b"GET" if method == b"HEAD" else method, ev)[0] != "content-length":
        return conn.send(ev)        # h11 sets the framing (chunked, or a close for an HTTP/1.0 client)
    writer: Any = conn._writer
    parts: list[bytes] = []
    try:
        conn._process_event(conn.our_role, ev)
        writer(ev, parts.append)
    except BaseException:
        conn._process_error(conn.our_role)
        raise
    return b"".join(parts)
