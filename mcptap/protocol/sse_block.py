"""The fields of one event-stream block while it is parsed (protocol/sse.py's
``SSEParser`` internals; pure)."""

from __future__ import annotations


class Block:
    """Fields gathered for the block being parsed."""

    __slots__ = ("event", "data", "id", "retry", "comments", "unknown", "cr", "bom", "invalid_utf8",
                 "id_ignored", "retry_invalid", "lazy", "cut", "big")

    def __init__(self, lazy: int | None = None) -> None:
        self.lazy = lazy
        #: a data line too long to decode: where its value was (offsets from the block's
        #: first byte; equal when it never stayed in the buffer) and its bytes
        self.cut: tuple[int, int] | None = None
        self.big: bytes = b""
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
            name, value = self._text(buf, start, e), ""
        else:
            v = colon + 1
            if v < e and buf[v] == 0x20:
                v += 1
            name = self._text(buf, start, colon)
            if name == "data" and self.lazy is not None and e - v > self.lazy and not self.data:
                with memoryview(buf) as view:
                    self.big = view[v:e].tobytes()
                self.long_line(v - base, e - base)
                return True
            value = self._text(buf, v, e)
        if name == "data":
            if self.cut is not None and len(self.data) == 1:
                # a second data line: the long one is decoded after all (the data is their join)
                self.data[0] = self._decode(self.big)
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

    def long_line(self, start: int, end: int) -> None:
        """The block's first data line is long: its value (``self.big``, set
        by the caller) is kept as bytes, cut out of the block at ``start``..``end``."""
        self.cut = (start, end)
        self.data.append("")

    def _decode(self, data: bytes) -> str:
        try:
            return str(data, "utf-8")
        except UnicodeDecodeError:
            self.invalid_utf8 = True
            return str(data, "utf-8", "replace")

    def _text(self, buf: bytearray, a: int, b: int) -> str:
        # the view is released at once: the buffer must stay resizable
        with memoryview(buf) as view, view[a:b] as piece:
            try:
                return str(piece, "utf-8")
            except UnicodeDecodeError:
                self.invalid_utf8 = True
                return str(piece, "utf-8", "replace")
