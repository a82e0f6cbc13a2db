"""Incremental ``text/event-stream`` parser (pure, sans-IO, h11 style).

Rules: WHATWG HTML §9.2.6 "Interpreting an event stream". Lines end in CR LF, LF
or CR (a CR at the end of one network chunk may be followed by the LF of the same
line end in the next chunk); one leading U+FEFF BOM of the stream is ignored;
``:`` starts a comment; a line without a colon is a field with an empty value; one
space after the colon is dropped; ``data`` lines are joined with LF; a blank line
dispatches the event; an ``id`` containing NUL is ignored; ``retry`` is honoured
only when it is all ASCII digits. The last-event-id buffer persists across events.

Unlike a browser this parser accounts for every byte: each *block* (the lines up
to and including a blank line) becomes one :class:`SSEEvent`, also when a browser
would not dispatch it (comment-only keep-alives, id-only events, stray blank
lines); ``SSEEvent.dispatched`` tells which ones a browser delivers. At EOF the
bytes of an unfinished block come out as one event with ``terminated=False``
(a browser discards it). The concatenation of all events' ``raw`` equals the
input, always, whatever the chunking.

Usage::

    p = SSEParser()
    for ev in p.receive_data(chunk): ...     # events completed by this chunk
    for ev in p.receive_data(b""): ...       # EOF: flush

A block ended by a lone CR at the very end of a chunk is held until the next
chunk (or EOF) tells whether an LF follows, so that ``raw`` is exact.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from mcptap.protocol.sse_block import Block

BOM = b"\xef\xbb\xbf"

#: A block larger than this that fills the parser's whole buffer is handed over
#: as its ``raw`` (a bytearray) instead of copied out (bytes).
HAND_OVER_ABOVE = 1 << 20


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One block of an event stream.

    ``type``: event type (``"message"`` when no ``event`` field); ``data``: the
    data lines joined with LF (str, U+FFFD for undecodable bytes); ``data_lines``:
    number of ``data`` fields; ``id``: value of a valid ``id`` field in this block
    or None; ``last_event_id``: the stream's last-event-id buffer after this block
    (what a client sends as ``Last-Event-ID`` when it reconnects); ``retry``: ms
    (int) or None; ``comments``: comment texts (one leading space dropped);
    ``unknown_fields``: names of fields the spec ignores; ``raw``: the exact bytes
    (a bytearray, never changed, for a block above ``HAND_OVER_ABOVE``);
    ``start``/``end``: byte offsets of ``raw`` in the stream (end exclusive);
    ``chunks``: how many ``receive_data`` chunks contributed bytes; ``cr``: some
    line ended with CR LF or a lone CR; ``terminated``: False for the unfinished
    block flushed at EOF; ``bom``: the stream's leading BOM is in ``raw``;
    ``invalid_utf8``: some line did not decode; ``id_ignored``: an ``id`` field
    contained NUL; ``retry_invalid``: a ``retry`` field was not all digits;
    ``data_bytes``: set only by a parser made with ``lazy_above``, for a
    block whose one data line is longer than that: the line's value, not
    decoded and cut out of ``raw`` at offset ``data_at`` (the block's bytes are
    ``raw[:data_at] + data_bytes + raw[data_at:]``; ``data`` is then "" and
    ``invalid_utf8`` says nothing about it; see protocol/sse_canonical.py).
    """

    type: str
    data: str
    data_lines: int
    id: str | None
    last_event_id: str
    retry: int | None
    comments: tuple[str, ...]
    unknown_fields: tuple[str, ...]
    raw: bytes | bytearray
    start: int
    end: int
    chunks: int = 1
    cr: bool = False
    terminated: bool = True
    bom: bool = False
    invalid_utf8: bool = False
    id_ignored: bool = False
    retry_invalid: bool = False
    data_bytes: bytes | None = None
    data_at: int = 0

    @property
    def dispatched(self) -> bool:
        """A browser would deliver this event (terminated, at least one data line)."""
        return self.terminated and self.data_lines > 0

    @property
    def multiline(self) -> bool:
        return self.data_lines > 1

    @property
    def priming(self) -> bool:
        """Event id with empty (or absent) data: the 2025-11-25 priming event."""
        return self.id is not None and self.data == "" and self.data_bytes is None

    @property
    def blank(self) -> bool:
        """Only line terminators (and the stream's BOM): a stray blank line."""
        raw = self.raw[3:] if self.bom else self.raw
        return not raw.strip(b"\r\n")


class SSEParser:
    """Incremental parser for one event stream (one HTTP response body, after
    transfer decoding and content decoding). Never raises on any input."""

    __slots__ = (
        "_buf", "_base", "_line_start", "_scan", "_skip_lf", "_eof", "_chunk_no", "_first_chunk",
        "_first_line", "_held", "_last_id", "_b", "_bs", "_lazy", "_spill", "_spilled",
    )

    def __init__(self, lazy_above: int | None = None) -> None:
        """``lazy_above``: a block's only data line longer than this many bytes
        is not decoded (``SSEEvent.data_bytes``; once that long, the rest of the
        line is written to a BytesIO as it arrives, never to the parser's buffer,
        so its bytes are held once); None: every line is decoded."""
        self._lazy = lazy_above
        self._spill: io.BytesIO | None = None     # the long data line being received
        self._spilled = False     # the current line is that line (interpreted already)
        self._buf = bytearray()   # unemitted bytes; trimmed once per chunk
        self._bs = 0              # index in _buf where the current block starts
        self._base = 0            # stream offset of _buf[_bs]
        self._line_start = 0      # index in _buf where the current line starts
        self._scan = 0            # no line end in _buf[_line_start:_scan]
        self._skip_lf = False     # previous line ended with CR: an LF next belongs to it
        self._eof = False
        self._chunk_no = 0
        self._first_chunk = 0     # chunk that brought the current block's first byte
        self._first_line = True   # BOM handling applies to the stream's first line only
        self._held = False        # block complete but ended by a CR at the buffer end
        self._last_id = ""
        self._b = Block(lazy_above)

    @property
    def last_event_id(self) -> str:
        """The last-event-id buffer (str, "" before any id)."""
        return self._last_id

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of an emitted event (int)."""
        return len(self._buf) - self._bs + (self._spill.tell() if self._spill is not None else len(self._b.big))

    def receive_data(self, data: bytes) -> list[SSEEvent]:
        """Feed one chunk; ``b""`` means EOF. Returns the completed events."""
        out: list[SSEEvent] = []
        if self._eof:
            return out
        buf = self._buf
        if not data:
            self._eof = True
            if self._spill is not None:
                self._spill_line(b"")
            if self._held:
                self._emit(len(buf), True, out, self._chunk_no)
            elif self._bs < len(buf):
                if self._line_start < len(buf) and not self._spilled:
                    self._b.line(buf, self._line_start, len(buf), self._bom_check(self._line_start), self._bs)
                self._emit(len(buf), False, out)
            self._trim()
            return out
        self._chunk_no += 1
        if self._spill is not None:
            data = self._spill_line(data)
            if not data:
                return out
        if self._bs == len(buf):
            self._first_chunk = self._chunk_no
        old = len(buf)
        buf += data
        if self._held:
            if buf[old] == 0x0A:
                # the LF of the CR LF that ended the held block
                self._emit(old + 1, True, out)
            else:
                self._emit(old, True, out, self._chunk_no - 1)
            self._line_start = self._scan = self._bs
        self._scan_lines(out)
        self._trim()
        return out

    # -- internals -----------------------------------------------------------
    def _scan_lines(self, out: list[SSEEvent]) -> None:
        buf = self._buf
        n = len(buf)
        pos = self._scan
        # next LF / CR at or after pos (-1: none up to n); two memchr searches, each
        # redone only once pos has passed the hit, so the scan stays linear
        lf = cr_at = -2
        while True:
            if self._skip_lf and pos < n and pos == self._line_start:
                self._skip_lf = False
                if buf[pos] == 0x0A:
                    pos += 1
                    self._line_start = pos
            if -1 != lf < pos:
                lf = buf.find(b"\n", pos)
            if -1 != cr_at < pos:
                cr_at = buf.find(b"\r", pos)
            eol = cr_at if lf < 0 else lf if cr_at < 0 else min(lf, cr_at)
            if eol < 0:
                self._scan = n
                if self._lazy is not None and n - self._line_start > self._lazy and not self._spilled:
                    self._start_spill()
                return
            nl = eol + 1
            cr = buf[eol] == 0x0D
            if cr:
                if nl < n:
                    if buf[nl] == 0x0A:
                        nl += 1
                else:
                    self._skip_lf = True
            b = self._b
            b.cr = b.cr or cr
            # the line is read in place (no copy of a 64 MiB data line)
            if self._spilled:
                content, self._spilled = True, False
            else:
                content = b.line(buf, self._line_start, eol, self._bom_check(self._line_start), self._bs)
            self._line_start = pos = nl
            if not content:
                if cr and nl == n and self._skip_lf:
                    # blank line ended by a CR at the buffer end: wait for a possible LF
                    self._held = True
                    self._skip_lf = False
                    self._scan = nl
                    return
                self._emit(nl, True, out)
                if self._buf is not buf:
                    return          # the buffer was handed over whole: nothing after it

    def _start_spill(self) -> None:
        """The current line has no end yet and is longer than ``lazy_above``:
        when it is the block's first data line, its value moves to a BytesIO."""
        buf, ls, b = self._buf, self._line_start, self._b
        v = ls + 6 if buf.startswith(b"data: ", ls) else ls + 5
        if b.data or not buf.startswith(b"data:", ls) or len(buf) - v <= (self._lazy or 0):
            return
        self._bom_check(ls)
        self._spill = io.BytesIO()
        with memoryview(buf) as view:
            self._spill.write(view[v:])
        del buf[v:]
        self._scan = v
        self._spilled = True
        b.long_line(v - self._bs, v - self._bs)

    def _spill_line(self, data: bytes) -> bytes:
        """Bytes while a long line is spilled: up to its end into the spill;
        returns what follows (the line's end first), ``b""`` while it goes on."""
        spill = self._spill
        assert spill is not None
        lf, cr = data.find(b"\n"), data.find(b"\r")
        end = len(data) if lf < 0 and cr < 0 else cr if lf < 0 else lf if cr < 0 else min(lf, cr)
        with memoryview(data) as view:
            spill.write(view[:end])
        if end == len(data) and data:
            return b""
        self._b.big = spill.getvalue()       # the BytesIO's own buffer: no copy
        self._spill = None
        return data[end:]

    def _trim(self) -> None:
        """Drop the bytes of emitted blocks (once per chunk: linear cost)."""
        bs = self._bs
        if bs:
            del self._buf[:bs]
            self._bs = 0
            self._line_start -= bs
            self._scan -= bs

    def _bom_check(self, start: int) -> bool:
        if self._first_line:
            self._first_line = False
            return self._buf.startswith(BOM, start)
        return False

    def _emit(self, end: int, terminated: bool, out: list[SSEEvent], last_chunk: int | None = None) -> None:
        """Emit the block ``_buf[_bs:end]`` and start the next one at ``end``."""
        self._held = False
        buf = self._buf
        b = self._b
        raw: bytes | bytearray
        big = None
        if b.cut is not None:
            # the long data line's value is not in raw (when it is the only data line)
            c0, c1 = self._bs + b.cut[0], self._bs + b.cut[1]
            with memoryview(buf) as view:
                raw = view[self._bs:c0].tobytes() + view[c1:end].tobytes()
            big = b.big
            if len(b.data) > 1:
                raw, big = raw[:b.cut[0]] + big + raw[b.cut[0]:], None
        elif self._bs == 0 and end == len(buf) > HAND_OVER_ABOVE:
            # a large block that is the whole buffer: the buffer itself becomes
            # ``raw`` (no second copy of a 64 MiB event) and parsing goes on in a new one
            raw = buf
            self._buf = bytearray()
            self._line_start = self._scan = end = 0
        else:
            with memoryview(buf) as view:
                raw = view[self._bs:end].tobytes()      # one copy (a bytearray slice and bytes() would be two)
        self._bs = end
        if not raw:
            return
        if b.id is not None and terminated:
            # an unfinished block is discarded, its id never reaches the client
            self._last_id = b.id
        chunks = (self._chunk_no if last_chunk is None else last_chunk) - self._first_chunk + 1
        out.append(SSEEvent(
            type=b.event or "message",
            data="\n".join(b.data),
            data_lines=len(b.data),
            id=b.id,
            last_event_id=self._last_id,
            retry=b.retry,
            comments=tuple(b.comments),
            unknown_fields=tuple(b.unknown),
            raw=raw,
            start=self._base,
            end=self._base + len(raw) + len(big or b""),
            chunks=max(chunks, 1),
            cr=b.cr,
            terminated=terminated,
            bom=b.bom,
            invalid_utf8=b.invalid_utf8,
            id_ignored=b.id_ignored,
            retry_invalid=b.retry_invalid,
            data_bytes=big,
            data_at=b.cut[0] if big is not None and b.cut is not None else 0,
        ))
        self._base += len(raw) + len(big or b"")
        self._first_chunk = self._chunk_no
        self._b = Block(self._lazy)


def parse_all(data: bytes) -> list[SSEEvent]:
    """Parse a complete stream (``data`` then EOF) in one call."""
    p = SSEParser()
    return p.receive_data(data) + p.receive_data(b"")
