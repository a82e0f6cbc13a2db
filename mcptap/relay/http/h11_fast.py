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
* ``next_body(conn)``: the ``Data`` or ``EndOfMessage`` event
  ``conn.next_event()`` would return now while the peer's body is read
  (Content-Length or chunked), extracted by the connection's own reader
  (chunk headers, trailers and their errors are h11's parser's, raised as
  ``next_event`` raises them); None when it could be anything else (then call
  ``next_event``: heads, NEED_DATA, the peer's close);
* ``whole_chunk(conn, data, pos)``: where the body of the whole chunk that
  ``data[pos:]`` starts with lies (its size line, body and CRLF all there, the
  reader at a chunk boundary with nothing buffered): the ``Data`` h11 would
  return for it after ``receive_data``, and after the chunk's CRLF h11's
  reader is back where it was, so the bytes need not go through h11's receive
  buffer at all (a small SSE event: one read, one chunk; below);
* ``send(conn, ev)``: ``conn.send(ev)``, an ``EndOfMessage`` in our body by the
  connection's own writer without the full state pass (below);
* ``send_response(conn, ev)``: ``conn.send(ev)`` for a final response head
  that came out of an h11 parser unchanged (``heads.passed`` returned it).
  ``send`` first rebuilds every response through the validating
  ``h11.Response`` constructor (``_clean_up_response_headers_for_sending``:
  every field through h11's regexes again) to add ``Connection: close`` or
  change the framing; where it would do neither (the connection stays
  alive, the body is framed by Content-Length or has none) the head is the
  one h11 parsed and is sent as it is, through the same state pass and writer.

``next_head(conn)``: ``conn.next_event()``; a ``Request`` received from
``IDLE``/``IDLE`` or a final ``Response`` received in ``SEND_RESPONSE`` (our
client side in ``SEND_BODY`` or ``DONE``), with keep-alive on, nothing pending
or proposed (no CONNECT, no Upgrade) and the head keeping the connection
alive, moves the states as h11's pass would (a request also the server to
``SEND_RESPONSE``) and sets the method, the peer's HTTP version, the
100-continue flag and the reader/writer by h11's own helpers; any other head
or state takes h11's full pass (``_process_event``), with ``next_event``'s
own checks and error handling around it.

An ``EndOfMessage`` (sent or received) in ``SEND_BODY`` moves that role to
``DONE``; h11's pass then finds nothing more to do unless keep-alive is off, a
protocol switch is pending or the other role is closed, closing or in error
(the state-triggered transitions from ``DONE``): only then does it take the
full pass. Otherwise it sets ``DONE``, clears the 100-continue flag for the
client's end as h11 does, and refreshes that role's reader or writer from
h11's own tables, as ``_respond_to_state_changes`` would. On a keep-alive
round trip these were 4 of the 8 remaining passes.

``start_next_cycle(conn)``: ``conn.start_next_cycle()`` from ``DONE``/``DONE``
(keep-alive on, no switch pending, nobody waiting for a 100 Continue: what
h11 asserts) sets both roles ``IDLE``, forgets the request method and installs
h11's ``IDLE`` reader and writer, without the state copies and comparisons of
h11's general path; from any other state h11's own call (and its error).

Relies on ``h11.Connection._writer``/``_reader``/``_receive_buffer``/``_process_error``
and ``_cstate``, the readers' fields and the ``READERS``/``WRITERS`` tables (h11 0.16, pinned in pyproject.toml; ``passbody.py`` reads
the same ones); ``SUPPORTED`` is False where they are missing, and then both fall
back to h11's public calls.
"""

from __future__ import annotations

from typing import Any

import h11
from h11._connection import _body_framing
from h11._readers import READERS, ChunkedReader, ContentLengthReader, chunk_header_re
from h11._writers import WRITERS, ChunkedWriter, ContentLengthWriter

from mcptap.relay.http import h11_fields as hf

_probe = h11.Connection(h11.CLIENT)
SUPPORTED = all(hasattr(_probe, a) for a in ("_writer", "_reader", "_receive_buffer", "_process_error", "_process_event",
                                             "_request_method", "_cstate")) and all(
    hasattr(ChunkedReader(), a) for a in ("_bytes_in_chunk", "_bytes_to_discard", "_reading_trailer")) and hasattr(
    ContentLengthReader(1), "_remaining") and all(hasattr(w, "send_data") for w in (ChunkedWriter, ContentLengthWriter)) and all(
    hasattr(_probe._cstate, a) for a in ("states", "keep_alive", "pending_switch_proposals")) and hasattr(
    h11.LocalProtocolError, "_reraise_as_remote_protocol_error") and hasattr(_probe, "_receive_buffer_closed") and hasattr(
    _probe._receive_buffer, "maybe_extract_at_most") and "chunk_size" in chunk_header_re.groupindex and all(
    hasattr(_probe, a) for a in ("_extract_next_receive_event", "_max_incomplete_event_size", "their_http_version"))
del _probe

_SEND_BODY = h11.SEND_BODY
_DONE = h11.DONE
_CLIENT = h11.CLIENT
_SERVER = h11.SERVER
_EOM = h11.EndOfMessage
#: the other role's states in which one role's move to DONE triggers no further transition
_CALM = frozenset({h11.IDLE, h11.SEND_RESPONSE, h11.SEND_BODY, h11.DONE})
#: the reader/writer h11 installs for a role entering DONE (``_get_io_object``: not a body state)
_DONE_IO: dict[tuple[Any, str], Any] = {(r, m): io.get((r, _DONE)) for r in (_CLIENT, _SERVER) for m, io in (("r", READERS), ("w", WRITERS))}
#: the same for a role back in IDLE (``start_next_cycle``)
_IDLE_IO: dict[tuple[Any, str], Any] = {(r, m): io.get((r, h11.IDLE)) for r in (_CLIENT, _SERVER)
                                        for m, io in (("r", READERS), ("w", WRITERS))}
_IDLE = h11.IDLE
#: the server's reader/writer in SEND_RESPONSE (``_get_io_object`` outside a body: h11's table)
_RESPONSE_READER: Any = READERS.get((_SERVER, h11.SEND_RESPONSE))
_RESPONSE_WRITER: Any = WRITERS.get((_SERVER, h11.SEND_RESPONSE))
#: our client side's states in which a final response received triggers nothing beyond the server's move
_CLIENT_CALM = frozenset({h11.SEND_BODY, h11.DONE})
_SEND_RESPONSE = h11.SEND_RESPONSE
_REQUEST = h11.Request
_RESPONSE = h11.Response


def _ended(conn: h11.Connection, role: Any, ev: h11.EndOfMessage) -> None:
    """``conn._process_event(role, ev)`` for ``role``'s ``EndOfMessage`` in ``SEND_BODY``."""
    cs: Any = conn._cstate
    states = cs.states
    if not cs.keep_alive or cs.pending_switch_proposals or states[_SERVER if role is _CLIENT else _CLIENT] not in _CALM:
        conn._process_event(role, ev)       # DONE leads on (MUST_CLOSE, MIGHT_SWITCH_PROTOCOL): h11's whole pass
        return
    states[role] = _DONE
    if role is _CLIENT:
        conn.client_is_waiting_for_100_continue = False
    if role is conn.our_role:
        conn._writer = _DONE_IO[role, "w"]
    else:
        conn._reader = _DONE_IO[role, "r"]


def _headed(conn: h11.Connection, ev: Any) -> None:
    """``conn._process_event(conn.our_role, ev)`` for a head we send: a ``Request``
    (client side) or a final ``Response`` (server side). h11's full pass unless
    keep-alive stays on, no protocol switch is (or becomes) pending and the states
    are those the head leaves from; then the head moves the sender on (a request
    also the server, to ``SEND_RESPONSE``) and nothing else follows."""
    cs: Any = conn._cstate
    states = cs.states
    role = conn.our_role
    f = hf.fields(ev.headers)
    if cs.pending_switch_proposals or not cs.keep_alive or not hf.keep_alive(ev, f):
        conn._process_event(role, ev)
        return
    if type(ev) is _REQUEST:
        if role is not _CLIENT or states[_CLIENT] is not _IDLE or states[_SERVER] is not _IDLE or ev.method == b"CONNECT" \
                or b"upgrade" in f:
            conn._process_event(role, ev)
            return
        states[_CLIENT] = _SEND_BODY
        states[_SERVER] = _SEND_RESPONSE
        conn._request_method = ev.method
        if hf.expects_continue(ev, f):
            conn.client_is_waiting_for_100_continue = True
        conn._writer = hf.body_io(ev.method, ev, f, WRITERS) or conn._get_io_object(_CLIENT, ev, WRITERS)
        conn._reader = _RESPONSE_READER
        return
    if type(ev) is not _RESPONSE or role is not _SERVER or states[_SERVER] is not _SEND_RESPONSE:
        conn._process_event(role, ev)
        return
    states[_SERVER] = _SEND_BODY
    conn.client_is_waiting_for_100_continue = False
    conn._writer = hf.body_io(conn._request_method, ev, f, WRITERS) or conn._get_io_object(_SERVER, ev, WRITERS)


def _got_head(conn: h11.Connection, ev: Any) -> None:
    """``conn._process_event(conn.their_role, ev)`` for a head received (see module doc)."""
    cs: Any = conn._cstate
    states = cs.states
    t = type(ev)
    if cs.pending_switch_proposals or not cs.keep_alive or (t is not _REQUEST and t is not _RESPONSE):
        conn._process_event(conn.their_role, ev)
        return
    f = hf.fields(ev.headers)
    if not hf.keep_alive(ev, f):
        conn._process_event(conn.their_role, ev)
        return
    if t is _REQUEST:
        if conn.our_role is not _SERVER or states[_CLIENT] is not _IDLE or states[_SERVER] is not _IDLE \
                or ev.method == b"CONNECT" or b"upgrade" in f:
            conn._process_event(_CLIENT, ev)
            return
        states[_CLIENT] = _SEND_BODY
        states[_SERVER] = _SEND_RESPONSE
        conn._request_method = ev.method
        conn.their_http_version = ev.http_version
        if hf.expects_continue(ev, f):
            conn.client_is_waiting_for_100_continue = True
        conn._writer = _RESPONSE_WRITER
        conn._reader = hf.body_io(ev.method, ev, f, READERS) or conn._get_io_object(_CLIENT, ev, READERS)
        return
    if conn.our_role is not _CLIENT or states[_SERVER] is not _SEND_RESPONSE or states[_CLIENT] not in _CLIENT_CALM:
        conn._process_event(_SERVER, ev)
        return
    states[_SERVER] = _SEND_BODY
    conn.their_http_version = ev.http_version
    conn.client_is_waiting_for_100_continue = False
    conn._reader = hf.body_io(conn._request_method, ev, f, READERS) or conn._get_io_object(_SERVER, ev, READERS)


def next_head(conn: h11.Connection) -> Any:
    """``conn.next_event()`` (see module doc): the same event, errors and state."""
    st = conn.their_state
    if not SUPPORTED or (st is not _IDLE and st is not _SEND_RESPONSE):
        return conn.next_event()
    try:        # next_event's body (its ERROR check cannot apply in these states)
        ev: Any = conn._extract_next_receive_event()
        if ev is h11.NEED_DATA:
            if len(conn._receive_buffer) > conn._max_incomplete_event_size:
                raise h11.RemoteProtocolError("Receive buffer too long", error_status_hint=431)
            if conn._receive_buffer_closed:
                raise h11.RemoteProtocolError("peer unexpectedly closed connection")
        elif ev is not h11.PAUSED:
            _got_head(conn, ev)
        return ev
    except BaseException as exc:
        conn._process_error(conn.their_role)
        if isinstance(exc, h11.LocalProtocolError):
            exc._reraise_as_remote_protocol_error()
        raise


def start_next_cycle(conn: h11.Connection) -> None:
    """``conn.start_next_cycle()`` (see module doc); raises ``h11.LocalProtocolError`` as it does."""
    cs: Any = conn._cstate
    states = cs.states
    if not SUPPORTED or states[_CLIENT] is not _DONE or states[_SERVER] is not _DONE or not cs.keep_alive \
            or cs.pending_switch_proposals or conn.client_is_waiting_for_100_continue:
        conn.start_next_cycle()
        return
    cs.states = {_CLIENT: _IDLE, _SERVER: _IDLE}
    conn._request_method = None
    conn._writer = _IDLE_IO[conn.our_role, "w"]
    conn._reader = _IDLE_IO[conn.their_role, "r"]


def send(conn: h11.Connection, ev: Any) -> bytes | None:
    """``conn.send(ev)``: the same bytes, errors and state (see module doc)."""
    t = type(ev)
    w: Any = conn._writer
    if SUPPORTED and t is _EOM and conn.our_state is _SEND_BODY and (type(w) is ContentLengthWriter or type(w) is ChunkedWriter):
        parts: list[bytes] = []
        try:
            _ended(conn, conn.our_role, ev)     # as send: the state pass first, then the writer (its errors)
            w.send_eom(ev.headers, parts.append)
        except BaseException:
            conn._process_error(conn.our_role)
            raise
        return b"".join(parts)
    if SUPPORTED and t is _REQUEST and w is not None and conn.our_state is _IDLE:
        parts = []
        try:
            _headed(conn, ev)
            w(ev, parts.append)
        except BaseException:
            conn._process_error(conn.our_role)
            raise
        return b"".join(parts)
    sent: bytes | None = conn.send(ev)
    return sent


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
    if t is ChunkedWriter:
        # its three writes (size line, data, CRLF; nothing for no data), formatted at once: it cannot fail
        return b"%x\r\n%s\r\n" % (len(data), data) if data else b""
    parts: list[bytes] = []
    try:
        w.send_data(data, parts.append)
    except BaseException:
        conn._process_error(conn.our_role)
        raise
    return b"".join(parts)


def next_body(conn: h11.Connection) -> h11.Data | h11.EndOfMessage | None:
    """The ``Data`` or ``EndOfMessage`` event ``conn.next_event()`` would
    return now, taken by the connection's own reader; None when the next event
    may be anything else. Raises ``h11.RemoteProtocolError`` as ``next_event``
    (a broken chunk header or footer, bad trailers), leaving ``conn`` the same."""
    if not SUPPORTED or conn.their_state is not _SEND_BODY:
        return None
    rd: Any = conn._reader
    t = type(rd)
    if t is ContentLengthReader:
        if rd._remaining and not conn._receive_buffer:
            return None         # NEED_DATA, or the peer's close: next_event's checks
    elif t is not ChunkedReader or not conn._receive_buffer:
        return None
    try:
        ev: Any = rd(conn._receive_buffer)
        if ev is None:
            return None         # a chunk or trailer not complete yet: next_event says NEED_DATA (or raises)
        if type(ev) is _EOM:
            _ended(conn, conn.their_role, ev)
            return ev
    except BaseException as exc:       # as next_event
        conn._process_error(conn.their_role)
        if isinstance(exc, h11.LocalProtocolError):
            exc._reraise_as_remote_protocol_error()
        raise
    if conn.their_role is _CLIENT:
        conn.client_is_waiting_for_100_continue = False
    return ev       # type: ignore[no-any-return]


def send_response(conn: h11.Connection, ev: h11.Response) -> bytes:
    """``conn.send(ev)`` for a final response head ``ev`` h11 parsed (its
    fields unchanged, HTTP/1.1); the same bytes, errors and state."""
    cs: Any = conn._cstate
    if not SUPPORTED or conn.our_state is not h11.SEND_RESPONSE or not cs.keep_alive or ev.http_version != b"1.1":
        return conn.send(ev)
    method: Any = conn._request_method      # None before a request: h11's send passes it on the same way
    m = b"GET" if method == b"HEAD" else method
    if (hf.framing(m, ev, hf.fields(ev.headers)) or _body_framing(m, ev)[0]) != "content-length":
        return conn.send(ev)        # h11 sets the framing (chunked, or a close for an HTTP/1.0 client)
    writer: Any = conn._writer
    parts: list[bytes] = []
    try:
        _headed(conn, ev)
        writer(ev, parts.append)
    except BaseException:
        conn._process_error(conn.our_role)
        raise
    return b"".join(parts)


def whole_chunk(conn: h11.Connection, data: bytes, pos: int) -> tuple[int, int] | None:
    """``(start, end)``: ``data[start:end]`` is the body of the whole chunk
    ``data[pos:]`` starts with (size line, body and CRLF; not the last chunk)
    while ``conn`` reads a chunked body at a chunk boundary with nothing
    buffered. It is the ``Data`` (``chunk_start`` and ``chunk_end``)
    ``next_event`` would return after ``conn.receive_data(data[pos:])``, and
    past the chunk's CRLF h11's reader is where it was: the caller goes on at
    ``end + 2`` without giving these bytes to h11 (its buffer copy, two
    extractions, the CRLF discard). None when the bytes there are anything
    else (a partial chunk, the last chunk, an invalid size line): then h11
    parses ``data[pos:]``. The chunk's CRLF that an earlier ``next_body`` left
    in h11's buffer is discarded first, as h11's reader would (state only).
    The size line is matched by h11's own regex, as its reader does."""
    if not SUPPORTED or conn.their_state is not _SEND_BODY:
        return None
    rd: Any = conn._reader
    if type(rd) is not ChunkedReader or rd._bytes_in_chunk or rd._reading_trailer or conn._receive_buffer_closed:
        return None
    buf: Any = conn._receive_buffer
    if rd._bytes_to_discard or buf:
        if rd._bytes_to_discard != b"\r\n" or len(buf) != 2 or bytes(buf) != b"\r\n":
            return None
        buf.maybe_extract_at_most(2)       # as the reader's next call: the CRLF matches, nothing more is buffered
        rd._bytes_to_discard = b""
    e = data.find(b"\r\n", pos)
    if e < 0:
        return None
    m = chunk_header_re.fullmatch(data, pos, e + 2)
    if m is None:
        return None
    start = e + 2
    end = start + int(m["chunk_size"], 16)
    if end == start or len(data) < end + 2 or data[end] != 13 or data[end + 1] != 10:
        return None
    if conn.their_role is _CLIENT:
        conn.client_is_waiting_for_100_continue = False     # as _process_event for the client's Data
    return start, end
