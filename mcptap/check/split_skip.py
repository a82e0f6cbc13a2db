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

import orjson

from mcptap.capture.integrity import BACKWARDS_US
from mcptap.check.fullscan import FullScan
from mcptap.check.scan import FLUSH_BYTES
from mcptap.check.shape_oracle import plain_fields
from mcptap.model import Direction, Frame

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


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
        if scan.stdio and rec.light:
            for batch in lines:
                _skip_batch(scan, batch)
        else:
            for batch in lines:
                scan.run(batch)
    finally:
        del rec._emit
        del rec._replay_frames
        rec.on_message = sink


def _skip_batch(scan: FullScan, lines: list[bytes]) -> None:
    """``scan.run(lines)`` within ``skip``: the common message record (``FullScan.run``'s
    fast line) whose direction's framer holds nothing is counted here, as ``run`` and
    ``replay_json_reframed`` count it (its seq, stream bytes and messages, the framer's
    offset, the integrity check's counters and bytes), without a frame or a call per
    layer; any other line goes through ``run``. (A flood's skip: 12% fewer instructions;
    what is left is mostly parsing, the lines' and the chunk records'.)"""
    rec = scan.rec
    loads, dumps, NL = orjson.loads, orjson.dumps, b"\n"
    counts, bufs, streams, framers, resync = scan.counts, scan.bufs, rec.streams, rec._framers, rec._resync
    n, last, buffered, t_floor = scan.n, scan.last_seq, scan.buffered, scan.t_floor
    t = rec.t_us
    # what makes a line uncommon whatever it holds, as run tests it; only run (below) changes it
    common = (not scan.gap_since_last and scan.end_seen is None and scan.pending is None and rec._seg is None
              and last is not None and rec.reframing)
    for line in lines:
        if common:
            try:
                fields = plain_fields(loads(line))
            except orjson.JSONDecodeError:
                fields = None
            if fields is not None:
                seq, ft, d, value, _ = fields
                direction = _DIRS[d]
                framer = framers[direction]
                if (seq == last + 1 and t_floor <= ft and direction not in resync and not framer._buf and not framer._held  # type: ignore[operator]
                        and not framer._eof):
                    try:
                        data = dumps(value) + NL
                    except (TypeError, orjson.JSONEncodeError):
                        data = b""          # (run's exact encoding, and whole=False: framed as bytes, below)
                    if data:
                        n += 1
                        last = seq
                        t = ft
                        if ft - BACKWARDS_US > t_floor:
                            t_floor = ft - BACKWARDS_US
                        size = len(data)
                        c = counts[d]
                        c[1] += 1
                        c[0] += size
                        bufs[d].append(data)
                        buffered += size
                        if buffered > FLUSH_BYTES:
                            scan.buffered = buffered
                            scan.flush()
                            buffered = 0
                        s = streams[direction]
                        s.bytes += size
                        s.messages += 1
                        framer._base += size
                        rec.seq += 1
                        continue
        # anything else: as run reads it, the counters handed back and taken again
        scan.n, scan.last_seq, scan.buffered, scan.t_floor = n, last, buffered, t_floor
        rec.t_us = t
        scan.run([line])
        n, last, buffered, t_floor = scan.n, scan.last_seq, scan.buffered, scan.t_floor
        t = rec.t_us
        common = (not scan.gap_since_last and scan.end_seen is None and scan.pending is None and rec._seg is None
                  and last is not None and rec.reframing)
    scan.n, scan.last_seq, scan.buffered, scan.t_floor = n, last, buffered, t_floor
    rec.t_us = t


def _nothing(msg: Any) -> None:
    """The sink of a skipped message (``counted`` gives none)."""
