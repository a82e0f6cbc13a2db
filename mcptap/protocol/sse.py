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

A block is emitted as soon as its blank line has arrived: a lone CR at the very
end of a chunk already ends that line (WHATWG), so the event is not held until
the next byte tells whether an LF follows (a CR-only stream would have each
event recorded one event late). Such an LF, arriving with the next chunk, is
still the end of the same line (never a blank line of its own): it is the first
byte of the next block's ``raw``, so only where ``raw`` splits, never an event's
fields, depends on where a CR LF was cut; a block that is that LF alone at EOF
counts as terminated.
"""

from __future__ import annotations

import io

from mcptap.protocol.sse_block import DROPPED_PREFIX, Block, SSEEvent, block_end

__all__ = ["SSEEvent", "SSEParser", "parse_all"]

BOM = b"\xef\xbb\xbf"

#: A block larger than this that fills the parser's whole buffer is handed over
#: as its ``raw`` (a bytearray) instead of copied out (bytes).
HAND_OVER_ABOVE = 1 << 20
#: A block (event) longer than this many bytes is not held: the parser keeps its
#: first ``DROPPED_PREFIX`` bytes, counts the rest up to the block's end and
#: emits it as one event with ``dropped`` set (a peer's endless event must not
#: grow memory without bound; 2x the 64 MiB events the tap is measured with)
MAX_BLOCK = 128 << 20


class SSEParser:
    """Incremental parser for one event stream (one HTTP response body, after
    transfer decoding and content decoding). Never raises on any input."""

    __slots__ = (
        "_buf", "_base", "_line_start", "_scan", "_skip_lf", "_eof", "_chunk_no", "_first_chunk",
        "_first_line", "_last_id", "_b", "_bs", "_lazy", "_spill", "_spilled",
        "_max", "_drop", "_drop_empty", "_drop_prefix", "_drop_lines",
    )

    def __init__(self, lazy_above: int | None = None, max_block: int = MAX_BLOCK) -> None:
        """``lazy_above``: a block's only data line longer than this many bytes
        is not decoded (``SSEEvent.data_bytes``; once that long, the rest of the
        line is written to a BytesIO as it arrives, never to the parser's buffer,
        so its bytes are held once); None: every line is decoded.
        ``max_block``: bytes of one block beyond which it is not held
        (``SSEEvent.dropped``)."""
        self._lazy = lazy_above
        self._max = max_block
        self._drop = -1           # >= 0: bytes of the block being dropped so far (``_start_drop``)
        self._drop_empty = False  # while dropping: the current line has no byte yet
        self._drop_prefix = b""
        self._drop_lines = 0
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
        self._last_id = ""
        self._b = Block(lazy_above)

    @property
    def last_event_id(self) -> str:
        """The last-event-id buffer (str, "" before any id)."""
        return self._last_id

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of an emitted event (int)."""
        b = self._b
        # a long line's value copied out of the buffer (``Block.line``: cut[0] < cut[1]) is counted there
        out = b"" if b.cut is not None and b.cut[0] < b.cut[1] else b.big
        return len(self._buf) - self._bs + (self._spill.tell() if self._spill is not None else len(out)) + b.taken

    def receive_data(self, data: bytes) -> list[SSEEvent]:
        """Feed one chunk; ``b""`` means EOF. Returns the completed events."""
        out: list[SSEEvent] = []
        if self._eof:
            return out
        buf = self._buf
        if self._drop >= 0:
            if not data:
                self._dropping(data, out)
                self._eof = True
                return out
            self._chunk_no += 1
            data = self._dropping(data, out)
            if not data:
                return out
            self._chunk_no -= 1           # the rest of this chunk is counted below
        if not data:
            self._eof = True
            if self._spill is not None:
                self._spill_line(b"")
            if self._bs < len(buf) or self._b.taken:
                if self._line_start < len(buf) and not self._spilled:
                    self._b.line(buf, self._line_start, len(buf), self._bom_check(self._line_start), self._bs)
                # the LF of a CR LF whose CR ended the last block (see the module doc) ends no event
                self._emit(len(buf), len(buf) - self._bs == 1 and buf[self._bs] == 0x0A, out)
            self._trim()
            return out
        self._chunk_no += 1
        if self._spill is not None:
            data = self._spill_line(data)
            if not data:
                if self.buffered > self._max:
                    self._start_drop(False)
                return out
        if self._bs == len(buf) and not self._b.taken:
            self._first_chunk = self._chunk_no
        buf += data
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
                if self._b.bulk:
                    self._take(self._line_start)      # once a chunk: the lines complete so far
                if self._lazy is not None and n - self._line_start > self._lazy and not self._spilled:
                    self._start_spill()
                if self.buffered > self._max:
                    self._start_drop(self._line_start == n)
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
                # a blank line ended by a CR at the buffer end ends the block now; _skip_lf
                # stays set, so an LF that follows is that line end's, never a blank line
                self._emit(nl, True, out)
                if self._buf is not buf:
                    return          # the buffer was handed over whole: nothing after it

    def _start_spill(self) -> None:
        """The current line has no end yet and is longer than ``lazy_above``:
        when it is the block's first data line, its value moves to a BytesIO."""
        buf, ls, b = self._buf, self._line_start, self._b
        v = ls + 6 if buf.startswith(b"data: ", ls) else ls + 5
        if b.data or b.bulk or not buf.startswith(b"data:", ls) or len(buf) - v <= (self._lazy or 0):
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

    def _start_drop(self, line_empty: bool) -> None:
        """The current block grew past ``max_block``: keep its first bytes,
        count the rest, hold none of it (``_dropping``) until its end."""
        b = self._b
        if b.bulk:
            self._take(self._line_start)
        buf, bs = self._buf, self._bs
        self._drop = self.buffered
        self._drop_prefix = b.head(buf[bs:bs + DROPPED_PREFIX], DROPPED_PREFIX) if b.bulk else bytes(buf[bs:bs + DROPPED_PREFIX])
        self._drop_empty = line_empty
        self._drop_lines = b.data_lines
        self._base -= b.taken             # the dropped block's offsets are counted from its start
        fresh = Block(self._lazy)         # the fields not kept (the block's data is not held)
        b.data, b.comments, b.big, b.spans, b.bulk, b.bio, b.skel, b.cuts, b.taken, b.ndata = (
            fresh.data, fresh.comments, fresh.big, fresh.spans, False, None, fresh.skel, fresh.cuts, 0, 0)
        self._spill = None
        self._spilled = False
        del buf[bs:]
        self._line_start = self._scan = bs

    def _dropping(self, data: bytes, out: list[SSEEvent]) -> bytes:
        """Bytes of a block being dropped: counted up to its blank line, which
        emits it; returns what follows (``b""`` while it goes on; at EOF,
        ``data`` is ``b""``: the block is emitted unterminated and ``b""`` returned)."""
        if not data:
            self._end_drop(False, out)
            return b""
        end, self._drop_empty, self._skip_lf = block_end(data, self._drop_empty, self._skip_lf)
        if end < 0:
            self._drop += len(data)
            return b""
        self._drop += end
        self._end_drop(True, out)
        return data[end:]

    def _end_drop(self, terminated: bool, out: list[SSEEvent]) -> None:
        b, size, raw = self._b, self._drop, self._drop_prefix
        self._drop = -1
        self._drop_prefix = b""
        if b.id is not None and terminated:
            self._last_id = b.id
        out.append(SSEEvent(
            type=b.event or "message", data="", data_lines=self._drop_lines, id=b.id, last_event_id=self._last_id,
            retry=b.retry, comments=(), unknown_fields=tuple(b.unknown), raw=raw, start=self._base, end=self._base + size,
            chunks=max(self._chunk_no - self._first_chunk + 1, 1), cr=b.cr, terminated=terminated, bom=b.bom,
            invalid_utf8=b.invalid_utf8, id_ignored=b.id_ignored, retry_invalid=b.retry_invalid, dropped=size - len(raw),
            last_cr=terminated and self._skip_lf))
        self._base += size
        self._first_chunk = self._chunk_no
        self._b = Block(self._lazy)

    def _take(self, upto: int) -> None:
        """A ``bulk`` block: its bytes up to ``upto`` leave the buffer (``Block.take``)."""
        b = self._b
        was = b.taken
        b.take(self._buf, self._bs, upto)
        self._base += b.taken - was
        self._bs = upto

    def _emit_bulk(self, end: int, terminated: bool, out: list[SSEEvent]) -> None:
        """Emit a ``bulk`` block ending at ``_buf[end]``: its data values joined, once, as ``data_bytes``."""
        self._take(end)
        b = self._b
        assert b.bio is not None
        big = b.bio.getvalue()       # the BytesIO's own buffer: no copy
        b.bio = None
        if b.id is not None and terminated:
            self._last_id = b.id
        chunks = self._chunk_no - self._first_chunk + 1
        out.append(SSEEvent(
            type=b.event or "message", data="", data_lines=b.data_lines, id=b.id, last_event_id=self._last_id, retry=b.retry,
            comments=tuple(b.comments), unknown_fields=tuple(b.unknown), raw=bytes(b.skel), start=self._base - b.taken,
            end=self._base, chunks=max(chunks, 1), cr=b.cr, terminated=terminated, bom=b.bom, invalid_utf8=b.invalid_utf8,
            id_ignored=b.id_ignored, retry_invalid=b.retry_invalid, data_bytes=big, data_at=b.cuts[0], data_cuts=tuple(b.cuts)))
        self._first_chunk = self._chunk_no
        self._b = Block(self._lazy)

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

    def _emit(self, end: int, terminated: bool, out: list[SSEEvent]) -> None:
        """Emit the block ``_buf[_bs:end]`` and start the next one at ``end``."""
        buf = self._buf
        b = self._b
        raw: bytes | bytearray
        big = None
        if b.bulk:
            self._emit_bulk(end, terminated, out)
            return
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
        chunks = self._chunk_no - self._first_chunk + 1
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
