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
there. Bounded: an unfinished line longer than ``HOLD`` bytes is stored as it comes (the
scrubber's look-behind, ``redact/scrub.py``, still catches the rest of a secret begun at
the end of the record before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcptap.model import Direction
from mcptap.records import Chunk

if TYPE_CHECKING:
    from mcptap.capture.writer import CaptureWriter

#: bytes of an unfinished line held per direction, waiting for its end
HOLD = 1 << 20


class WholeLines:
    """Per direction, the bytes after the last line end of what was stored unframed
    (pure). ``add`` gives what to store now, ``rest`` what is held."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Direction, tuple[int, bytes]] = {}       # direction -> (stream offset, bytes)

    def add(self, direction: Direction, data: bytes, offset: int) -> tuple[bytes, int]:
        """``data`` (at stream ``offset``) comes next in ``direction``: the whole lines to
        store now (the held bytes first) and their offset; the unfinished line after them
        is held, unless it is longer than ``HOLD`` (then everything is given)."""
        held = self._held.pop(direction, None)
        if held is not None:
            offset, data = held[0], held[1] + data
        cut = data.rfind(b"\n") + 1
        if cut < len(data) and len(data) - cut <= HOLD:
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

    def _chunk(self, direction: Direction, data: bytes, offset: int, t: int) -> None:
        """Store ``data`` (forwarded in ``direction`` at stream ``offset``, read at ``t``)
        unframed: a ``chunk`` record, of whole lines when the capture is rewritten (module doc)."""
        if self._whole_lines():
            data, offset = self._lines.add(direction, data, offset)
            if not data:
                return
        self._write(Chunk(self._next(), t, direction._value_, offset, data).to_json())
        self.chunks += 1
        self.chunk_bytes += len(data)

    def _chunk_rest(self, directions: Iterable[Direction]) -> None:
        """The stream of each of ``directions`` is cut or ends here: its held bytes
        (an unfinished line) are stored now, as they are."""
        for d in directions:
            rest = self._lines.rest(d)
            if rest is not None:
                self._write(Chunk(self._next(), self.clock(), d._value_, rest[1], rest[0]).to_json())
                self.chunks += 1
                self.chunk_bytes += len(rest[0])
