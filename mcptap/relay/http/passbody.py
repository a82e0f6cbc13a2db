"""Body bytes past h11's parser and writer (pure, no I/O; h11 internals in one place).

h11 hands a body out as it parses it: each read is appended to its receive
buffer (a copy), sliced out twice (``maybe_extract_at_most``: two more) and
returned as a ``bytearray`` the relay turns into ``bytes`` (a fourth); its
writer then joins the chunk framing and the data (a fifth). On a 64 MiB SSE
event that was most of the relay's per-byte work. Two shortcuts keep the
body's bytes in the object the socket read produced:

* ``ahead(conn)``: how many of the next bytes received on ``conn`` are body
  bytes h11 would return as they are (the receive buffer is empty and the
  reader is inside a chunk, or inside a Content-Length body); the relay takes
  them from its read itself and ``consume`` advances h11's reader as its own
  ``Data`` event would have (at a chunk's end it then expects the CRLF).
  Framing, trailers and everything else still go through h11's parser, so
  what is accepted and how the body ends are h11's decisions.
* ``framed(conn, data)``: the pieces h11 writes for a ``Data`` event
  (``send_with_data_passthrough``: the chunk size line, ``data`` itself, the
  CRLF), not joined, for a vectored write.

Relies on ``h11.Connection._receive_buffer``/``_receive_buffer_closed``/``_reader``
and the readers' ``_bytes_in_chunk``/``_bytes_to_discard``/``_reading_trailer``
/``_remaining`` (h11 0.16: its chunk reader checks the CRLF after a chunk, pinned in pyproject.toml);
``SUPPORTED`` is False where they are missing or of another type, and then ``ahead`` is always 0;
``framed`` reads ``_writer`` (``WRITER``: else h11 frames every piece).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h11
from h11._readers import ChunkedReader, ContentLengthReader
from h11._writers import ChunkedWriter

SUPPORTED = all(hasattr(h11.Connection(h11.CLIENT), a) for a in ("_receive_buffer", "_receive_buffer_closed", "_reader")) and all(
    hasattr(ChunkedReader(), a) for a in ("_bytes_in_chunk", "_bytes_to_discard", "_reading_trailer")) and hasattr(
    ContentLengthReader(1), "_remaining") and type(getattr(ChunkedReader(), "_bytes_to_discard", None)) is bytes
#: ``framed`` may frame a chunk itself (h11 keeps its body writer in ``_writer``)
WRITER = hasattr(h11.Connection(h11.SERVER), "_writer")
# h11 < 0.16 kept ``_bytes_to_discard`` as a count (int); ``consume`` sets the bytes 0.16 expects
# (it checks that a chunk's CRLF is really there), so older readers are not touched


def ahead(conn: h11.Connection) -> int:
    """Bytes of body the next received bytes of ``conn`` start with (0: let h11 parse them)."""
    if not SUPPORTED or conn.their_state is not h11.SEND_BODY or conn._receive_buffer or conn._receive_buffer_closed:
        return 0
    rd: Any = conn._reader
    t = type(rd)
    if t is ChunkedReader:
        if rd._bytes_to_discard or rd._reading_trailer:
            return 0
        return int(rd._bytes_in_chunk)
    if t is ContentLengthReader:
        return int(rd._remaining)
    return 0


def consume(conn: h11.Connection, n: int) -> None:
    """Advance ``conn``'s body reader past ``n`` bytes (``0 < n <= ahead(conn)``)
    taken without h11, as its ``Data`` event for them would."""
    rd: Any = conn._reader
    if type(rd) is ChunkedReader:
        rd._bytes_in_chunk -= n
        if rd._bytes_in_chunk == 0:
            rd._bytes_to_discard = b"\r\n"
    else:
        rd._remaining -= n


def framed(conn: h11.Connection, data: bytes) -> list[bytes]:
    """The bytes h11 sends for ``Data(data)`` on ``conn``, as pieces (one of
    them ``data`` itself). Raises ``h11.LocalProtocolError`` as ``send``.

    Inside a chunked body (our side in SEND_BODY, h11's ``ChunkedWriter``) a
    ``Data`` changes no state and cannot fail: its chunk is framed here, as that
    writer frames it, without h11's event machinery (~8 us of each 256 KiB read
    of a large SSE event)."""
    if data and WRITER and conn.our_state is h11.SEND_BODY and type(conn._writer) is ChunkedWriter:
        return [b"%x\r\n" % len(data), data, b"\r\n"]
    return conn.send_with_data_passthrough(h11.Data(data=data)) or []


def pass_body(conn: h11.Connection, data: bytes, deliver: Callable[[bytes, list[Any]], None], alive: Callable[[], bool],
              pump: Callable[[list[Any]], None], out: list[Any]) -> bytes | None:
    """Take the body bytes ``data`` (just read from ``conn``'s peer) starts with
    past h11 (a read inside a Content-Length body or a chunk goes on as the
    object read, no h11 copies) and ``deliver`` them; returns what h11 must
    still parse, or None when nothing is left (or ``alive()`` turned false).
    At the body's last byte ``pump`` lets h11 say how the message ends."""
    n = ahead(conn)
    if not n:
        return data
    body = data if n >= len(data) else data[:n]
    consume(conn, len(body))
    deliver(body, out)
    if not alive():
        return None
    if body is data:
        if n == len(data):
            pump(out)
        return None     # else still inside the body: next_event could only say NEED_DATA
    return data[len(body):]
