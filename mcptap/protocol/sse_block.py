"""One event-stream block: ``SSEEvent`` (what protocol/sse.py's ``SSEParser``
emits) and the fields gathered while it is parsed (``Block``; pure)."""

from __future__ import annotations

import io
from dataclasses import dataclass

#: bytes of a dropped block kept as its ``raw`` (``SSEEvent.dropped``)
DROPPED_PREFIX = 256


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
    ``invalid_utf8`` says nothing about it; see protocol/sse_canonical.py);
    ``data_cuts``: set instead of ``data_at`` (which is then its first
    offset) for a block of several data lines the parser made with
    ``lazy_above`` left undecoded because together they are longer than that:
    ``data_bytes`` is their values joined with LF (the payload), each cut
    out of ``raw``: the k-th value goes at ``raw`` offset ``data_cuts[k]``;
    ``dropped``: a block longer than the parser's ``max_block``: its bytes
    were not held: ``raw`` is its first ``DROPPED_PREFIX`` bytes, ``dropped``
    how many more it had (``end - start`` is its whole size), ``data`` is ""
    and ``data_lines`` counts the data lines seen before it grew too long
    (the concatenation of ``raw`` then lacks those bytes); ``last_cr``: such a
    block's last byte (not in ``raw``) is a CR, read last: an LF that follows,
    in the next read, is that line's end, though it starts the next block's ``raw``
    (as after a kept block whose ``raw`` ends with a CR).
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
    dropped: int = 0
    data_cuts: tuple[int, ...] = ()
    last_cr: bool = False

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
        return self.id is not None and self.data == "" and self.data_bytes is None and not self.dropped

    @property
    def blank(self) -> bool:
        """Only line terminators (and the stream's BOM): a stray blank line."""
        raw = self.raw[3:] if self.bom else self.raw
        return not raw.strip(b"\r\n")


class Block:
    """Fields gathered for the block being parsed."""

    __slots__ = ("event", "data", "id", "retry", "comments", "unknown", "cr", "bom", "invalid_utf8",
                 "id_ignored", "retry_invalid", "lazy", "cut", "big", "spans", "dsize", "bulk", "bio", "skel", "cuts",
                 "taken", "ndata")

    def __init__(self, lazy: int | None = None) -> None:
        self.lazy = lazy
        #: a data line too long to decode: where its value was (offsets from the block's
        #: first byte; equal when it never stayed in the buffer) and its bytes
        self.cut: tuple[int, int] | None = None
        self.big: bytes = b""
        #: data values not yet taken (offsets from the block's first byte in the buffer) and
        #: the bytes of all its values so far (lazy parsers only)
        self.spans: list[tuple[int, int]] = []
        self.dsize = 0
        #: the block's data lines are together longer than ``lazy``: the values go to ``bio``
        #: (joined with LF, never decoded), the rest of the block's bytes to ``skel``, the
        #: values' places there to ``cuts`` (``take``); ``taken``: bytes of the block taken,
        #: ``ndata``: its data lines
        self.bulk = False
        self.bio: io.BytesIO | None = None
        self.skel = bytearray()
        self.cuts: list[int] = []
        self.taken = 0
        self.ndata = 0
        self.event = ""
        self.data: list[str] = []
        self.id: str | None = None
        self.retry: int | None = None
        self.comments: list[str] = []
        self.unknown: list[str] = []
        self.cr = False
        self.bom = False
        self.invalid_utf8 = False
        self.id_ignored = False
        self.retry_invalid = False

    def line(self, buf: bytearray, s: int, e: int, bom: bool, base: int) -> bool:
        """Interpret the line ``buf[s:e]`` (terminator removed). Returns False for a blank line.

        The line is split at its first colon as bytes and only the name and the
        value are decoded (straight from the buffer), so a 64 MiB data line is
        decoded once and never copied as a whole. A colon or space is never part
        of a UTF-8 sequence, so this equals decoding the whole line first.
        ``base``: the block's first byte in ``buf`` (for ``span``)."""
        start = s + 3 if bom else s
        if bom:
            self.bom = True
        if e <= start:
            return False
        colon = buf.find(b":", start, e)
        if colon == start:
            c = start + 1
            if c < e and buf[c] == 0x20:
                c += 1
            self.comments.append(self._text(buf, c, e))
            return True
        if colon < 0:
            name, v = self._text(buf, start, e), e
        else:
            v = colon + 1
            if v < e and buf[v] == 0x20:
                v += 1
            name = self._text(buf, start, colon)
        if name == "data" and self.lazy is not None:
            n = e - v
            if not self.bulk and self.cut is None and not self.data and n > self.lazy:
                with memoryview(buf) as view:
                    self.big = view[v:e].tobytes()
                self.long_line(v - base, e - base)
                return True
            self.spans.append((v - base, e - base))
            self.dsize += n
            if self.bulk or self.cut is not None or self.dsize > self.lazy:
                # the values are together too long to decode: they are taken as bytes (``take``)
                self.bulk = True
                self.ndata += 1
                return True
        value = self._text(buf, v, e) if v < e else ""
        if name == "data":
            self.data.append(value)
        elif name == "event":
            self.event = value
        elif name == "id":
            if "\x00" in value:
                self.id_ignored = True
            else:
                self.id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)
            else:
                self.retry_invalid = True
        else:
            self.unknown.append(name)
        return True

    @property
    def data_lines(self) -> int:
        return self.ndata + len(self.data)

    def take(self, buf: bytearray, bs: int, upto: int) -> None:
        """A ``bulk`` block: move its bytes ``buf[bs:upto]`` (``bs``: where the
        block's bytes not taken yet begin, the base of ``spans``) into ``skel``
        and its data values into ``bio`` (each value once, never decoded)."""
        bio = self.bio
        pos = bs
        if bio is None:
            bio = self.bio = io.BytesIO()
            self.ndata += len(self.data)
            self.data = []            # the decoded values of the lines before: their bytes are taken again
            if self.cut is not None:
                c0, c1 = self.cut
                self.skel += buf[bs:bs + c0]
                self.cuts.append(len(self.skel))
                bio.write(self.big)
                self.big, self.cut, pos = b"", None, bs + c1
        skel, cuts = self.skel, self.cuts
        with memoryview(buf) as view:
            for s, e in self.spans:
                skel += view[pos:bs + s]
                if cuts:
                    bio.write(b"\n")
                cuts.append(len(skel))
                bio.write(view[bs + s:bs + e])
                pos = bs + e
            skel += view[pos:upto]
        self.spans.clear()
        # the block's bytes taken (a spilled value's never were in ``buf``; the LFs joining the values are not the block's)
        self.taken = len(skel) + bio.tell() - max(len(cuts) - 1, 0)

    def head(self, rest: bytes | bytearray, n: int) -> bytes:
        """The first ``n`` bytes of a ``bulk`` block whose bytes not taken are ``rest``."""
        out = bytearray()
        data = self.bio.getvalue() if self.bio is not None else b""
        pos = vpos = 0
        for c in self.cuts:
            out += self.skel[pos:c]
            end = data.find(b"\n", vpos)
            end = len(data) if end < 0 else end
            out += data[vpos:min(end, vpos + n)]
            vpos, pos = end + 1, c
            if len(out) >= n:
                return bytes(out[:n])
        out += self.skel[pos:pos + n]
        out += rest[:n]
        return bytes(out[:n])

    def long_line(self, start: int, end: int) -> None:
        """The block's first data line is long: its value (``self.big``, set
        by the caller) is kept as bytes, cut out of the block at ``start``..``end``."""
        self.cut = (start, end)
        self.data.append("")

    def _text(self, buf: bytearray, a: int, b: int) -> str:
        # the view is released at once: the buffer must stay resizable
        with memoryview(buf) as view, view[a:b] as piece:
            try:
                return str(piece, "utf-8")
            except UnicodeDecodeError:
                self.invalid_utf8 = True
                return str(piece, "utf-8", "replace")


def block_end(data: bytes, line_empty: bool, skip_lf: bool) -> tuple[int, bool, bool]:
    """Where the blank line that ends a block is in ``data`` (a chunk of a
    block's bytes; ``line_empty``: no byte of the current line came before it;
    ``skip_lf``: the last line ended with a CR, so an LF first is its end):
    ``(end, line_empty, skip_lf)`` with ``end`` the index after that blank
    line or -1, and the two states after ``data`` (after ``end`` when found:
    an LF that may follow a CR at the very end is the next block's)."""
    n, pos = len(data), 0
    while pos < n:
        if skip_lf:
            skip_lf = False
            if data[pos] == 0x0A:
                pos += 1
                continue
        lf, cr = data.find(b"\n", pos), data.find(b"\r", pos)
        eol = cr if lf < 0 else lf if cr < 0 else min(lf, cr)
        if eol < 0:
            return -1, False, False
        if eol == pos and line_empty:
            end = eol + 1
            if data[eol] == 0x0D:
                if end < n:
                    end += data[end] == 0x0A
                else:
                    skip_lf = True
            return end, True, skip_lf
        line_empty, skip_lf = True, data[eol] == 0x0D
        pos = eol + 1
    return -1, line_empty, skip_lf
