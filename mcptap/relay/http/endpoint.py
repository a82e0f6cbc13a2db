"""Rewriting of the legacy HTTP+SSE ``endpoint`` event in a forwarded stream (pure).

Spec 2024-11-05 basic/transports "HTTP with SSE": the server's first SSE event
is ``event: endpoint`` whose data is the URI the client must POST to. When that
URI is absolute and names the upstream's own origin, a host would POST straight
to the upstream and bypass the tap (cases/B21 wire-absolute); the tap then
rewrites the origin so the POSTs come through it. This is the only place where
the relay changes bytes, and it changes only the data line(s) of that event.

The rewriter sits on the forwarding path, so it holds back as little as
possible: every byte is forwarded at once except, inside a block whose
``event: endpoint`` line has been seen completely, the rest of that block until
its blank line (bounded by ``HOLD_LIMIT``: beyond it the held bytes are released
unchanged). A block that puts ``data`` before ``event: endpoint`` cannot be
rewritten (its data is already forwarded); the capture's findings say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable

HOLD_LIMIT = 64 * 1024
_BOM = b"\xef\xbb\xbf"
_HEAD = 64                    # bytes of a line kept to recognise ``event: endpoint``
#: a whole ``event: endpoint`` line, its end in the same chunk (``_is_endpoint_line`` of a line
#: not the stream's first): the lines before the first match are none, so they are passed over
#: in one search (a flood of lines that mention "endpoint" cost a loop pass each)
#: (the look-behind after the literal: a pattern that begins with one is tried at every byte)
_ENDPOINT_LINE = re.compile(rb"event(?<![^\r\n]event): ?endpoint(?=[\r\n])")
#: a blank line starts after the first byte of each (a CR LF's LF then a line end has one of them)
_BLANK_PAIRS = (b"\n\n", b"\n\r", b"\r\r")
#: lines of a held block the loop takes itself before it searches for the block's end (an
#: endpoint event has two or three; a search costs more than a few passes of the loop)
_LOOP_LINES = 4
#: False: no searches (the line loop alone; tests compare both)
JUMP = True


class EndpointRewriter:
    """Per SSE response body. ``rewrite(data) -> new data | None`` decides the
    new endpoint value (None: keep). ``feed(chunk)`` returns the bytes to
    forward now; ``flush()`` at the end of the body returns whatever is held.
    ``rewrites`` collects ``(original, rewritten)`` pairs; ``gave_up`` counts
    endpoint blocks released unchanged because they exceeded ``HOLD_LIMIT``."""

    def __init__(self, rewrite: Callable[[str], str | None]) -> None:
        self._rewrite = rewrite
        self._line = bytearray()      # head of the current line (classification only)
        self._after_cr = False        # last byte was a CR line end: an LF next is part of it
        self._first = True            # start of stream (BOM)
        self._holding = False
        self._held = bytearray()
        self._line_has_bytes = False
        self._held_lines = 0          # lines of the held block so far
        self.rewrites: list[tuple[str, str]] = []
        self.gave_up = 0
        #: the last endpoint block and what it became (a flood repeats one block: parsed once)
        self._last: tuple[bytes, bytes | None, tuple[str, str] | None] | None = None

    def feed(self, data: bytes) -> bytes:
        # line ends are found by memchr (bytes.find) and only a line's first 64 bytes are
        # looked at, so a long line (a 64 MiB data line) costs one search, not a byte loop
        if not (self._holding or self._first or self._after_cr or self._line_has_bytes) and b"endpoint" not in data:
            # at a line start with no "endpoint" in the chunk: no line that ends in it can be
            # an endpoint line, so only the state for the next chunk is kept (an SSE stream's
            # ordinary events: one search instead of the loop over their lines)
            self._skip(data)
            return data
        out: list[bytes] = []
        start = 0                      # data[start:i] not yet routed to out/held
        i = 0
        n = len(data)
        if n and self._after_cr:
            self._after_cr = False
            if data[0] == 0x0A:
                i = 1                  # the LF of a CR LF split between chunks
        line = self._line
        lf = cr_at = -2                # next LF / CR at or after i (-1: none in data), see protocol/sse.py
        while True:
            if JUMP and not (self._holding or self._line_has_bytes or self._first) and i < n:
                # at a line start: on to the next endpoint line, or past the end when there is none
                m = _ENDPOINT_LINE.search(data, i)
                if m is None:
                    self._skip(data, i)
                    break
                i = m.start()
            elif JUMP and self._holding and self._held_lines >= _LOOP_LINES and not self._line_has_bytes and i < n:
                # holding, at a line start: on to the line that ends the block, or past the end
                k = self._held_end(data, i, start)
                if k < 0:
                    self._skip(data, i)
                    break
                i = k
            if -1 != lf < i:
                lf = data.find(b"\n", i)
            if -1 != cr_at < i:
                cr_at = data.find(b"\r", i)
            e = cr_at if lf < 0 else lf if cr_at < 0 else min(lf, cr_at)
            if e < 0:
                e = n
            if e > i:
                self._line_has_bytes = True
                if len(line) < _HEAD:
                    line += data[i:min(e, i + _HEAD - len(line))]
            if e == n:
                break
            cr = data[e] == 0x0D
            i = e + 1
            if self._holding:
                self._held_lines += 1
                if not self._line_has_bytes:
                    # blank line: the endpoint block is complete
                    self._held += data[start:i]
                    start = i
                    # an LF completing this CR LF may follow; it is forwarded unchanged
                    out.append(self._release(rewrite=True))
                elif len(self._held) + (i - start) > HOLD_LIMIT:
                    self._held += data[start:i]
                    start = i
                    self.gave_up += 1
                    out.append(self._release(rewrite=False))
            elif self._line_has_bytes and self._is_endpoint_line(bytes(line)):
                out.append(data[start:i])
                start = i
                self._holding = True
                self._held_lines = 0
                self._held.clear()
            self._first = False
            line.clear()
            self._line_has_bytes = False
            if cr:
                if i == n:
                    self._after_cr = True
                elif data[i] == 0x0A:
                    i += 1
        if self._holding:
            self._held += data[start:]
            if len(self._held) > HOLD_LIMIT:
                self.gave_up += 1
                out.append(self._release(rewrite=False))
        elif not out and start == 0:
            return data                # the common case: nothing held, nothing changed (no copy)
        else:
            out.append(data[start:])
        return b"".join(out)

    def _held_end(self, data: bytes, i: int, start: int) -> int:
        """Holding at the line start ``data[i]`` (``data[start:i]`` not held yet):
        where the line starts whose end the loop releases the block at (the
        blank line, or the first line end past ``HOLD_LIMIT``), -1 when none
        in ``data``. The lines in between only go to the held bytes."""
        n = len(data)
        if data[i] in (0x0A, 0x0D):
            return i
        k = max(i, start + HOLD_LIMIT - len(self._held))     # a line end at or past it gives up
        e = n
        while k < n:
            lf, cr = data.find(b"\n", k), data.find(b"\r", k)
            x = cr if lf < 0 else lf if cr < 0 else min(lf, cr)
            if x < 0:
                break
            if data[x] == 0x0A and data[x - 1] == 0x0D:
                k = x + 1                 # the LF of a CR LF: that line ended before the limit
                continue
            e = x
            break
        # a blank line up to there comes first (the loop checks for it first); looked for in
        # growing windows, so a block's search costs about its own length, not the chunk's
        w, stop = 4096, min(e + 1, n)
        while True:
            end = min(stop, i + w)
            p = -1
            for pair in _BLANK_PAIRS:
                q = data.find(pair, i, end)
                if q >= 0:
                    p, end = q + 1, q + 1       # the next pairs are looked for before it only
            if p > 0:
                return p
            if end == stop:
                break
            w <<= 3
        if e < n:
            return max(data.rfind(b"\n", i, e), data.rfind(b"\r", i, e)) + 1 or i
        return -1

    def _skip(self, data: bytes, i: int = 0) -> None:
        """The line state after ``data[i:]`` (starting at a line start, holding nothing)."""
        j = max(data.rfind(b"\n", i), data.rfind(b"\r", i))
        k = j + 1 if j >= 0 else i
        tail = data[k:k + _HEAD]
        if tail:
            self._line += tail
            self._line_has_bytes = True
        elif j == len(data) - 1 and j >= i and data[j] == 0x0D:
            self._after_cr = True          # an LF first in the next chunk ends this line

    def flush(self) -> bytes:
        """End of body: release held bytes unchanged."""
        return self._release(rewrite=False) if self._holding else b""

    def _is_endpoint_line(self, line: bytes) -> bool:
        if self._first and line.startswith(_BOM):
            line = line[3:]
        name, colon, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        return name == b"event" and bool(colon) and value == b"endpoint"

    def _release(self, rewrite: bool) -> bytes:
        held = bytes(self._held)
        self._held.clear()
        self._holding = False
        if rewrite:
            last = self._last
            if last is not None and last[0] == held:
                new, pair = last[1], last[2]
                if pair is not None:
                    self.rewrites.append(pair)
            else:
                was = len(self.rewrites)
                new = self._rewrite_block(held)
                self._last = (held, new, self.rewrites[-1] if len(self.rewrites) > was else None)
            if new is not None:
                return new
        return held

    def _rewrite_block(self, block: bytes) -> bytes | None:
        """Replace the single ``data`` line's value; None when not applicable."""
        if b"data" not in block:
            return None                 # no data line at all (a flood of bare endpoint blocks): nothing to split
        lines = _split_lines(block)
        data_idx = [k for k, (content, _) in enumerate(lines) if content.split(b":", 1)[0] == b"data"]
        if len(data_idx) != 1:
            return None
        content, eol = lines[data_idx[0]]
        _, colon, value = content.partition(b":")
        space = b" " if value.startswith(b" ") else b""
        value = value[len(space):]
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        new = self._rewrite(text)
        if new is None or new == text:
            return None
        self.rewrites.append((text, new))
        lines[data_idx[0]] = (b"data" + colon + space + new.encode("utf-8"), eol)
        return b"".join(c + e for c, e in lines)


#: a line end: CR LF, LF or CR
_EOL = re.compile(rb"\r\n?|\n")


def _split_lines(block: bytes) -> list[tuple[bytes, bytes]]:
    """Split into (content, line end) pairs; CR LF, LF and CR all end a line
    (the line ends are found by the regex engine, not a Python loop per byte)."""
    out: list[tuple[bytes, bytes]] = []
    start = 0
    for m in _EOL.finditer(block):
        out.append((block[start:m.start()], m.group()))
        start = m.end()
    if start < len(block):
        out.append((block[start:], b""))
    return out
