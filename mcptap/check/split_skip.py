"""The lines check/fullsplit.py's second process skips, when the capture's bytes
are re-framed (``chunk`` records): framed, not annotated (level 3, pure).

Re-framed, a stream's messages are numbered afresh (each one framed takes the
next seq) and framed at their stream offsets, and a line may span records: the
second process cannot start framing at its warm-up as if nothing came before.
So it frames every line before the warm-up with the same framers (the same
code, the bytes held across records included), counting the frames instead of
annotating them: the sequence, the offsets and the held bytes at the warm-up are
this process's exactly. A chunk's lines are counted, not parsed, when no line's
bracket depth rises (``NewlineFramer.skip_data``; tests/protocol/test_framing_skip.py
holds it to ``receive_data`` on any bytes, cut anywhere); a message record's line
is framed whole, as always. About 0.3 of the re-annotation's CPU a byte on a flood
of which a third was framed live (the annotation, skipped, is the rest). What annotation state the skipped messages
would have left, the warm-up rebuilds, and the comparison at the middle
(check/split_state.py) verifies, as for message records.

    skip(scan, lines) -> None     # FullScan fed ``lines`` (an iterable of lists of lines), messages counted, not annotated
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.check.fullscan import FullScan
from mcptap.model import Direction, Frame


def skip(scan: FullScan, lines: Iterable[list[bytes]]) -> None:
    """Feed ``scan`` (re-framing: ``scan.rec.reframing``) the lists of ``lines``,
    each framed message counted (its seq taken, its stream's message count)
    but not annotated; records that are no message (eof, gap, process…) are
    replayed as always. Raises what ``FullScan.run`` raises."""
    rec = scan.rec
    sink = rec.on_message

    def counted(frame: Frame, direction: Direction, t: int, session: Any = None, transport: Any = None, extra: Any = ()) -> None:
        rec.seq += 1
        rec.streams[direction].messages += 1

    framed = rec._replay_frames

    def lines_counted(direction: Direction, data: bytes, t: int) -> list[Any]:
        # the framer counts the lines it can (no line parsed: NewlineFramer.skip_data), frames the rest
        n = rec._framers[direction].skip_data(data) if data and direction not in rec._resync else None
        if n is None:
            return framed(direction, data, t)
        rec.seq += n
        rec.streams[direction].messages += n
        return []

    rec._emit = counted     # type: ignore[method-assign,assignment]   # (attributes of this object, deleted below)
    rec._replay_frames = lines_counted      # type: ignore[method-assign]
    rec.on_message = _nothing
    try:
        for batch in lines:
            scan.run(batch)
    finally:
        del rec._emit
        del rec._replay_frames
        rec.on_message = sink


def _nothing(msg: Any) -> None:
    """The sink of a skipped message (``counted`` gives none)."""
