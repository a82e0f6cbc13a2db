"""The live recorder's ``chunk`` records (``Recorder._chunk``), apart so that the
recorder stays one responsibility a module.

While analysis is behind, forwarded stdio bytes are stored unframed, cut where the
relay's reads happened to end: anywhere, in the middle of a key or of a token. When the
capture's bytes are rewritten on their way to disk (``record --redact``: the writer's
``transform``; secrets of the server's argv: its ``line_filter``), a secret cut in two
would be matched by neither piece, so each direction's unfinished line waits here
(``WholeLines``) for the rest of it, and chunk records hold whole lines: the patterns see
every secret whole. The stream stays the same bytes in the same order; only where one
chunk record ends and the next begins moves. The held bytes go out with the next chunk of
their direction, or alone before anything that cuts or ends the stream (a directed gap,
the direction's eof, a new segment, the end record): ``Recorder`` calls ``_chunk_rest``
there. Bounded: an unfinished line longer than ``HOLD`` bytes is stored as it comes, less
an end held for the next chunk (``_tail``): where a secret of the server's argv may begin
or go on (``KnownSecrets.hold``, as for stderr reads: a known secret is never cut between
two records) and, with ``--redact``, after the last separator, so a token is not cut in two
(the scrubber's look-behind, ``redact/stderr_stream.Carry``, still replaces the rest of a
secret begun at the end of the record before, one holding a separator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcptap.capture.pieces import Buffers, Deferred, buffers_len
from mcptap.model import Direction
from mcptap.records import Chunk

if TYPE_CHECKING:
    from mcptap.capture.writer import CaptureWriter
    from mcptap.known_secrets import KnownSecrets

#: bytes of an unfinished line held per direction, waiting for its end
HOLD = 1 << 20
#: a chunk record over this many bytes is written in pieces (``capture.pieces``), from
#: the buffers it is made of (a framer's multi-MiB line head and the chunk after it are
#: never joined, nor held again as one text and one encoded line: 16 MiB lines each way
#: peaked at 37-52 MiB in the tap, by timing)
PIECES_ABOVE = 1 << 20


#: ``record --redact``: an unfinished line over ``HOLD`` is cut after its last separator
#: within this many bytes of its end (``ChunkRecording._tail``)
SEPARATED = 256
_SEPARATORS = (b" ", b"\t", b'"', b"'", b",", b";", b"<", b">", b"&", b"\r")


class WholeLines:
    """Per direction, the bytes after the last line end of what was stored unframed
    (pure). ``add`` gives what to store now, ``rest`` what is held."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Direction, tuple[int, bytes]] = {}       # direction -> (stream offset, bytes)

    def add(self, direction: Direction, data: bytes, offset: int,
            tail: Callable[[bytes], int] | None = None) -> tuple[bytes, int]:
        """``data`` (at stream ``offset``) comes next in ``direction``: the whole lines to
        store now (the held bytes first) and their offset; the unfinished line after them
        is held, unless it is longer than ``HOLD``: then it is given less its last
        ``tail(line)`` bytes (where a secret may begin or go on: ``KnownSecrets.hold``),
        held for the next chunk, so no argv secret is cut between two records."""
        held = self._held.pop(direction, None)
        if held is not None:
            offset, data = held[0], held[1] + data
        cut = data.rfind(b"\n") + 1
        if cut < len(data):
            if len(data) - cut > HOLD:
                keep = tail(data[cut:]) if tail is not None else 0
                cut = len(data) - keep if 0 < keep < len(data) - cut else len(data)
            if cut < len(data):
                self._held[direction] = (offset + cut, data[cut:])
                data = data[:cut]
        return data, offset

    def rest(self, direction: Direction) -> tuple[bytes, int] | None:
        """The held bytes of ``direction`` and their offset (now no longer held), or None."""
        h = self._held.pop(direction, None)
        return None if h is None else (h[1], h[0])

    def held(self, direction: Direction) -> int:
        """How many bytes of ``direction`` are held (not yet in a record)."""
        h = self._held.get(direction)
        return 0 if h is None else len(h[1])


class ChunkRecording:
    """Mixed into ``recorder.Recorder`` (which provides the clock, the sequence and the writer)."""

    writer: CaptureWriter | None
    known: KnownSecrets | None
    clock: Callable[[], int]
    chunks: int
    chunk_bytes: int
    _lines: WholeLines

    if TYPE_CHECKING:       # provided by Recorder and RecordingState
        def _next(self) -> int: ...
        def _write(self, rec: dict[str, Any]) -> None: ...

    def _whole_lines(self) -> bool:
        w = self.writer
        return w is not None and (w.transform is not None or w.line_filter is not None)

    def _tail(self, line: bytes) -> int:
        """How many bytes at the end of ``line`` (an unfinished line over ``HOLD``) wait
        for the next chunk: where an argv secret may begin or go on (``KnownSecrets.hold``:
        the stream is cut only where searching each piece finds what the whole would);
        for the patterns of ``record --redact``, from the last separator (space, quote,
        comma …) within the scrubber's look-behind (``Carry``, which replaces the rest of
        a secret begun in the record before): a token is not cut in two, its head left in
        clear. 0: nothing to hold."""
        known = self.known
        keep = known.hold(line) if known is not None else 0
        w = self.writer
        if w is not None and w.transform is not None:
            end = len(line) - keep
            at = max(line.rfind(s, max(0, end - SEPARATED), end) for s in _SEPARATORS)
            # cut there only where no argv secret runs across it (one holding a space or a quote)
            if at >= 0 and (known is None or known.hold(line[:at + 1]) == 0):
                keep = len(line) - at - 1
        return keep

    def _chunk(self, direction: Direction, data: Buffers, offset: int, t: int) -> None:
        """Store ``data`` (forwarded in ``direction`` at stream ``offset``, read at ``t``;
        one buffer or consecutive ones) unframed: one ``chunk`` record, of whole lines
        when the capture is rewritten (module doc). A bytearray (a framer's buffer,
        handed over) must not change afterwards."""
        if self._whole_lines():
            data, offset = self._lines.add(direction, b"".join(data) if isinstance(data, list) else bytes(data), offset,
                                           self._tail)
            if not data:
                return
        n = buffers_len(data)
        self.chunks += 1
        self.chunk_bytes += n
        seq = self._next()
        w = self.writer
        if w is not None and n > PIECES_ABOVE and not self._whole_lines():
            # a long line's head (``Recorder.long_line``), the bytes held when analysis fell behind:
            # the record line is written in pieces, never held again joined, as one text and one line
            deferred = Deferred()
            big = data          # the record is made around a placeholder; these bytes go in after it, piece by piece
            line = deferred.line(Chunk(seq, t, direction._value_, offset, b"").to_json(encode=lambda _, key, d: deferred(big, key, d)))
            if line is not None:
                w.write_pieces(line)
                return
        one = b"".join(data) if isinstance(data, list) else data
        self._write(Chunk(seq, t, direction._value_, offset, one if type(one) is bytes else bytes(one)).to_json())

    def _chunk_pieces(self, direction: Direction, parts: list[bytes | bytearray], end: int, t: int) -> bool:
        """Store ``parts`` (consecutive bytes of ``direction`` ending at stream offset
        ``end``: a framer's ``take_pieces``, lines framed before them, a chunk after
        them) as one chunk record, never joined when it is written in pieces. True
        if they end a line (or there are none)."""
        parts = [p for p in parts if p]
        if parts:
            self._chunk(direction, parts if len(parts) > 1 else parts[0], end - sum(map(len, parts)), t)
        return not parts or parts[-1].endswith(b"\n")

    def _chunk_rest(self, directions: Iterable[Direction]) -> None:
        """The stream of each of ``directions`` is cut or ends here: its held bytes
        (an unfinished line) are stored now, as they are."""
        for d in directions:
            rest = self._lines.rest(d)
            if rest is not None:
                self._write(Chunk(self._next(), self.clock(), d._value_, rest[1], rest[0]).to_json())
                self.chunks += 1
                self.chunk_bytes += len(rest[0])
