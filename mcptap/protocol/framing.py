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
* the concatenation of all frames' ``raw`` equals the input, always.

Forwarding never waits for this: the transport forwards a chunk, then feeds a
copy here. Cost is linear in the input (the scan offset is kept, so a 16 MiB
line arriving in 64 KiB chunks is scanned once).
"""

from __future__ import annotations

from typing import Any

import orjson

from mcptap.model import UNPARSED, Frame

BOM = b"\xef\xbb\xbf"

#: Bounds of multi-line recovery (cases/B02): beyond these, held lines are
#: released as separate non-JSON frames.
JOIN_MAX_BYTES = 1 << 20
JOIN_MAX_LINES = 10_000


def bad_utf8_offsets(data: bytes, limit: int = 64) -> tuple[int, ...]:
    """Offsets of bytes that do not decode as UTF-8 (at most ``limit``)."""
    out: list[int] = []
    pos = 0
    while len(out) < limit:
        try:
            data[pos:].decode("utf-8")
            break
        except UnicodeDecodeError as exc:
            out.extend(range(pos + exc.start, pos + exc.end))
            pos += exc.end
    return tuple(out[:limit])


def parse_json(raw: bytes) -> tuple[Any, tuple[int, ...]]:
    """Parse one frame's bytes leniently: a BOM is skipped, invalid UTF-8 is
    replaced by U+FFFD (so ids stay readable, cases/B06), trailing CR/LF is JSON
    whitespace. Returns ``(value or UNPARSED, invalid_utf8_offsets)``; never raises."""
    body = raw[3:] if raw.startswith(BOM) else raw
    try:
        return orjson.loads(body), ()
    except orjson.JSONDecodeError:
        pass
    except Exception:  # noqa: BLE001 - arbitrary peer bytes must never raise
        return UNPARSED, ()
    try:
        body.decode("utf-8")
        return UNPARSED, ()
    except UnicodeDecodeError:
        pass
    bad = bad_utf8_offsets(raw)
    try:
        return orjson.loads(body.decode("utf-8", "replace")), bad
    except Exception:  # noqa: BLE001
        return UNPARSED, bad


def _looks_like_json_start(line: bytes) -> bool:
    s = line.lstrip(b" \t\r\n")
    if s.startswith(BOM):
        s = s[3:].lstrip()
    return s[:1] in (b"{", b"[")


def _looks_like_json_end(line: bytes) -> bool:
    return line.rstrip(b" \t\r\n")[-1:] in (b"}", b"]")


class NewlineFramer:
    """Incremental newline framer for one direction of a stdio stream.

    ``receive_data(chunk)`` returns the frames completed by ``chunk`` (list of
    Frame, possibly empty); ``receive_data(b"")`` signals EOF and flushes the
    rest. Never raises on any input. ``offset`` fields count from the first byte
    this framer saw.
    """

    __slots__ = ("_buf", "_base", "_scan", "_held", "_held_bytes", "_eof")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._base = 0          # stream offset of _buf[0]
        self._scan = 0          # no newline in _buf[:_scan]
        self._held: list[Frame] = []
        self._held_bytes = 0
        self._eof = False

    @property
    def buffered(self) -> int:
        """Bytes received but not yet emitted in a frame (int)."""
        return len(self._buf) + self._held_bytes

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
                while self._held:  # a released line may start a new hold
                    self._release_held(out)
            return out
        if self._eof:
            return out
        buf = self._buf
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
        while pos != -1:
            end = pos + 1
            self._line(bytes(buf[start:end]), base + start, True, out)
            start = end
            pos = buf.find(b"\n", start)
        if start == 0:
            if buf is data:
                self._buf = bytearray(data)
            self._scan = len(self._buf)
        else:
            rest = buf[start:]
            self._buf = bytearray(rest)
            self._scan = len(rest)
            self._base = base + start
        return out

    # -- one complete line -------------------------------------------------
    def _line(self, raw: bytes, offset: int, terminated: bool, out: list[Frame]) -> None:
        if self._held:
            if _looks_like_json_start(raw):
                alone, _ = parse_json(raw)
                if isinstance(alone, dict):
                    # a complete message on its own: the held lines were garbage
                    self._release_held(out)
                    self._line(raw, offset, terminated, out)
                    return
            self._held.append(Frame(raw, offset, terminated))
            self._held_bytes += len(raw)
            if _looks_like_json_end(raw):
                joined = b"".join(f.raw for f in self._held)
                value, bad = parse_json(joined)
                if value is not UNPARSED:
                    first = self._held[0]
                    out.append(Frame(joined, first.offset, terminated, value, bad, len(self._held)))
                    self._held.clear()
                    self._held_bytes = 0
                    return
            if self._held_bytes > JOIN_MAX_BYTES or len(self._held) > JOIN_MAX_LINES:
                self._release_held(out)
            elif not terminated:
                self._release_held(out)
            return
        value, bad = parse_json(raw)
        if value is UNPARSED and terminated and _looks_like_json_start(raw):
            self._held.append(Frame(raw, offset, terminated, UNPARSED, bad))
            self._held_bytes = len(raw)
            return
        out.append(Frame(raw, offset, terminated, value, bad))

    def _release_held(self, out: list[Frame]) -> None:
        """Give up on joining: each held line becomes its own frame, except that
        a held line that starts a JSON value is re-examined (it may open the
        next multi-line message)."""
        held = self._held
        if not held:
            return
        self._held = []
        self._held_bytes = 0
        first, rest = held[0], held[1:]
        out.append(Frame(first.raw, first.offset, first.terminated, UNPARSED, bad_utf8_offsets(first.raw)))
        for f in rest:
            self._line(f.raw, f.offset, f.terminated, out)
