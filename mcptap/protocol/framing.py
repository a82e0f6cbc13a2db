"""Newline framing of one stdio byte stream (pure, sans-IO).

Spec (every revision, basic/transports stdio): one JSON-RPC message per line,
messages MUST NOT contain embedded newlines. Real peers break this (banners,
pretty-printed JSON, CRLF, BOMs, invalid UTF-8, 16 MiB lines), so the framer
cuts *every* byte into some frame and never refuses input:

* each ``\\n``-terminated line is one frame; bytes after the last newline are
  kept until more data or EOF (``receive_data(b"")``), then emitted with
  ``terminated=False``;
* a line that does not parse and looks like the start of a JSON value is held,
  and following lines are joined to it until the join parses (one frame with
  ``lines > 1``: pretty-printed JSON) or a bound is hit (then each held line is
  emitted on its own);
* every other line is a frame of its own, whatever it holds: frames (and so
  findings) depend on the bytes only, never on how reads cut them (blank and
  log lines used to be merged per read: ``\n\n`` read at once was one
  ``framing.empty_line``, read in two, two);
* the concatenation of all frames' ``raw`` equals the input, always.

Forwarding never waits for this: the transport forwards a chunk, then feeds a
copy here. Cost is linear in the input (the scan offset is kept, so a 16 MiB
line arriving in 64 KiB chunks is scanned once).
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from mcptap.model import UNPARSED, Frame
from mcptap.protocol.jsonparse import BOM, parse_json, parse_json_full

#: Bounds of multi-line recovery (cases/B02): beyond these, held lines are
#: released as separate non-JSON frames.
JOIN_MAX_BYTES = 1 << 20
JOIN_MAX_LINES = 10_000


_LEAD_WS = re.compile(rb"[ \t\r\n]*")

#: ``NewlineFramer.parses``: each line parsed, with what ``parse_json_full`` returned for it
Parses = list[tuple[bytes, tuple[Any, tuple[int, ...], int]]]


def _looks_like_json_start(line: bytes) -> bool:
    m = _LEAD_WS.match(line)
    i = m.end() if m is not None else 0
    s = line[i:i + 8]   # the head only: never copy a 16 MiB line
    if s.startswith(BOM):
        s = s[3:].lstrip()
    return s[:1] in (b"{", b"[")


def _looks_like_json_end(line: bytes) -> bool:
    return line[-8:].rstrip(b" \t\r\n")[-1:] in (b"}", b"]")


class NewlineFramer:
    """Incremental newline framer for one direction of a stdio stream.

    ``receive_data(chunk)`` returns the frames completed by ``chunk`` (list of
    Frame, possibly empty); ``receive_data(b"")`` signals EOF and flushes the
    rest. Never raises on any input. ``offset`` fields count from ``offset``
    (the stream offset of the first byte this framer sees; default 0).
    """

    __slots__ = ("_buf", "_base", "_scan", "_held", "_held_bytes", "_eof", "_depth", "_starts", "parses", "reuse")

    def __init__(self, offset: int = 0) -> None:
        self._buf = bytearray()
        self._base = offset     # stream offset of _buf[0]
        self._scan = 0          # no newline in _buf[:_scan]
        self._held: list[Frame] = []
        self._held_bytes = 0
        self._eof = False
        self._depth = 0
        self._starts: list[tuple[int, int]] = []   # (held index, depth before) of value openers
        #: when a list: each line's parse is appended, ``(raw, parse_json_full(raw))`` (a reader
        #: that frames the same bytes as its Recorder hands these on, so no line is parsed twice)
        self.parses: Parses | None = None
        #: parses made by another framer of the same bytes (``parses``), used in order while
        #: their lines match (a line that does not is parsed here)
        self.reuse: deque[tuple[bytes, tuple[Any, tuple[int, ...], int]]] | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet emitted in a frame (int)."""
        return len(self._buf) + self._held_bytes

    def take_buffered(self) -> bytes:
        """Remove and return the bytes received but not yet framed (held lines,
        then the partial last line), in stream order; the framer continues as
        if they had been emitted. Used when analysis falls behind and the rest
        of a stream is stored unframed (recorder ``chunk`` records)."""
        return b"".join(self.take_pieces())

    def take_pieces(self) -> list[bytes | bytearray]:
        """``take_buffered``'s bytes, not joined: the held lines, then the
        partial last line's own buffer (handed over, not copied: a 4 MiB line
        head is not held twice while it goes to a record). Empty pieces are left out."""
        out: list[bytes | bytearray] = [f.raw for f in self._held]
        if self._buf:
            out.append(self._buf)
        self._held = []
        self._held_bytes = 0
        self._starts = []
        self._depth = 0
        self._base += len(self._buf)
        self._buf = bytearray()
        self._scan = 0
        return out

    def whole_line(self, raw: bytes, value: Any) -> Frame | None:
        """The frame ``receive_data(raw)`` would return for ``raw``, one line of
        valid UTF-8 JSON ending in its only ``\\n`` whose parse is ``value``
        (e.g. ``orjson.dumps(value) + b"\\n"``), without scanning or parsing it
        again; None (nothing done) when bytes are held or EOF was seen."""
        if self._buf or self._held or self._eof:
            return None
        offset = self._base
        self._base = offset + len(raw)
        return Frame(raw, offset, True, value)

    def skip_data(self, data: bytes) -> int | None:
        """How many frames ``receive_data(data)`` returns, the framer left as it
        leaves it, without parsing a line or building a frame: or None (nothing
        done) when that cannot be told so. A line is held (joined to the next:
        not a frame of its own) only when its bracket depth rises
        (``_depth_delta``); here no line of ``data`` may (each line's depth read
        from its skeleton, ``_skeletons``: all lines alike cost one; a backslash:
        None), nothing is held before and ``data`` ends a line, so each line is one frame.
        Check/split_skip.py's count of the lines it skips."""
        if self._held or self._eof or self.parses is not None or self.reuse is not None:
            return None
        buf: bytes | bytearray = self._buf + data if self._buf else data
        end = buf.rfind(b"\n") + 1
        if not end:
            return None
        skels = _skeletons(memoryview(buf)[:end])
        if skels is None or any(_depth_delta(s) > 0 for s in skels):
            return None
        n = buf.count(b"\n", 0, end)
        self._buf = bytearray(memoryview(buf)[end:])
        self._scan = len(self._buf)
        self._base += end
        return n

    def receive_parsed(self, data: bytes, parsed: Parses) -> list[Frame]:
        """``receive_data(data)`` with the lines another framer of the same bytes
        parsed already (its ``parses`` for ``data``) taken from ``parsed``."""
        self.reuse = deque(parsed)
        try:
            return self.receive_data(data)
        finally:
            self.reuse = None

    def receive_data(self, data: bytes) -> list[Frame]:
        out: list[Frame] = []
        if not data:
            if not self._eof:
                self._eof = True
                if self._buf:
                    raw = bytes(self._buf)
                    self._buf.clear()
                    self._line(raw, self._base, False, out)
                    self._base += len(raw)
                self._release_held(out)
            return out
        if self._eof:
            return out
        buf: bytes | bytearray = self._buf
        if buf:
            buf += data
            start = 0
            pos = buf.find(b"\n", self._scan)
        else:
            # fast path: no partial line pending, slice the chunk directly
            buf = data
            start = 0
            pos = data.find(b"\n")
        base = self._base
        lines: list[tuple[bytes, int]] = []
        while pos != -1:
            end = pos + 1
            # one copy out of the buffer (slicing a bytearray then bytes() would copy twice)
            lines.append((bytes(memoryview(buf)[start:end]) if buf is not data else data[start:end], base + start))
            start = end
            pos = buf.find(b"\n", start)
        if start == 0:
            if buf is data:
                self._buf = bytearray(data)
            self._scan = len(self._buf)
        else:
            self._buf = bytearray(memoryview(buf)[start:])     # one copy (a slice, then bytearray() of it, was two)
            self._scan = len(self._buf)
            self._base = base + start
        del buf  # a completed multi-MiB line is freed before it is parsed
        for raw, off in lines:
            self._line(raw, off, True, out)
        return out

    # -- one complete line -------------------------------------------------
    def _line(self, raw: bytes, offset: int, terminated: bool, out: list[Frame]) -> None:
        if self._held:
            self._held_line(raw, offset, terminated, out)
            return
        reuse = self.reuse
        if reuse and reuse[0][0] == raw:
            value, bad, odd = reuse.popleft()[1]
        else:
            value, bad, odd = parse_json_full(raw)
        if self.parses is not None:
            self.parses.append((raw, (value, bad, odd)))
        if value is UNPARSED and terminated and _looks_like_json_start(raw):
            d = _depth_delta(raw)
            if d > 0:
                self._held.append(Frame(raw, offset, terminated, UNPARSED, bad))
                self._held_bytes = len(raw)
                self._depth = d
                self._starts = [(0, 0)]
                return
        out.append(Frame(raw, offset, terminated, value, bad, 1, odd))

    def _held_line(self, raw: bytes, offset: int, terminated: bool, out: list[Frame]) -> None:
        """Multi-line recovery (cases/B02). Held lines are tracked with a
        string-aware bracket depth; each line that opens a value records the
        depth before it. When a line brings the depth back to such a recorded
        depth, the lines from that opener are parsed once; a JSON-RPC object
        (or batch) ends the hold. Linear in the input: nothing is re-scanned
        when a hold is abandoned."""
        if _looks_like_json_start(raw):
            alone, _ = parse_json(raw)
            if isinstance(alone, dict):
                # a complete message on its own: the held lines were garbage
                self._release_held(out)
                self._line(raw, offset, terminated, out)
                return
            if _depth_delta(raw) > 0:
                self._starts.append((len(self._held), self._depth))
        self._held.append(Frame(raw, offset, terminated))
        self._held_bytes += len(raw)
        self._depth += _depth_delta(raw)
        depth = self._depth
        for i in range(len(self._starts) - 1, -1, -1):
            idx, before = self._starts[i]
            if before != depth:
                continue
            del self._starts[i:]
            span = self._held[idx:]
            joined = b"".join(f.raw for f in span)
            value, bad = parse_json(joined)
            if _is_jsonrpc(value):
                self._release_held(out, upto=idx)
                first = span[0]
                out.append(Frame(joined, first.offset, terminated, value, bad, len(span)))
                self._held.clear()
                self._held_bytes = 0
                self._starts = []
                return
            break
        if depth <= 0 or not self._starts or not terminated or self._held_bytes > JOIN_MAX_BYTES or len(self._held) > JOIN_MAX_LINES:
            self._release_held(out)

    def _release_held(self, out: list[Frame], upto: int | None = None) -> None:
        """Give up on joining ``held[:upto]`` (all when None): each line
        becomes its own non-JSON frame, never re-scanned."""
        held = self._held if upto is None else self._held[:upto]
        if upto is None:
            self._held = []
            self._held_bytes = 0
            self._starts = []
            self._depth = 0
        for f in held:
            self._line_unparsed(f, out)

    def _line_unparsed(self, f: Frame, out: list[Frame]) -> None:
        value, bad = parse_json(f.raw)
        out.append(Frame(f.raw, f.offset, f.terminated, value, bad))


_STRINGS = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def _depth_delta(line: bytes) -> int:
    """Net bracket depth change of one line, ignoring brackets inside JSON
    strings (JSON strings never span lines)."""
    if b'"' in line:
        line = _STRINGS.sub(b"", line)
    return line.count(b"{") + line.count(b"[") - line.count(b"}") - line.count(b"]")


#: every byte but those ``_STRINGS`` and ``_depth_delta`` tell apart (quote, newline, brackets; backslash: see ``_skeletons``)
_NOT_SKELETON = bytes(c for c in range(256) if c not in b'"\\\n{}[]')


def _skeletons(lines: bytes | memoryview) -> set[bytes] | None:
    """The distinct skeletons of ``lines`` (newline-separated): each line with
    every byte but quotes and brackets left out, whose ``_depth_delta`` is the
    line's (with no backslash, a string is a quote, other bytes, a quote: it
    still is one, its brackets left out the same). None when ``lines`` hold a
    backslash (an escape's second byte would be read as the one after it). A
    flood's lines share one."""
    skel = bytes(lines).translate(None, _NOT_SKELETON)
    return None if b"\\" in skel else set(skel.split(b"\n"))


def _is_jsonrpc(value: Any) -> bool:
    if isinstance(value, dict):
        return "jsonrpc" in value or "method" in value or "result" in value or "error" in value
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, dict) and ("jsonrpc" in v or "method" in v) for v in value)
    return False
