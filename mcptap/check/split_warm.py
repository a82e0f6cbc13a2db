"""Where check/fullsplit.py's second process begins its warm-up (level 3:
reads the capture file it is handed).

The warm-up rebuilds the annotator state the second half starts from; what it
must hold is what that state remembers of the lines the second process skips:
the last ``DONE_WINDOW`` answered ids, cancelled and task ids, and progress
tokens. A notification flood names none (any warm-up rebuilds its state), a
tools/call capture thousands a MiB. So the warm-up is sized by the bytes
themselves: counted (``bytes.count``, no line parsed) in blocks from the fork
to the middle, it starts at the latest block from which, for each kind of
name, either the skipped bytes hold none or the warm-up holds ``EVENTS``
(a request and its answer each name an id: more than the window needs). A
guess, never a risk: check/fullsplit.py compares the two processes' states at
the middle (check/split_state.py) and, when they differ, forks again with the
whole ``WARM_BYTES``.

    warm_start(fp, at, mid, cap) -> int     # a byte in [max(at, mid - cap), mid]
"""

from __future__ import annotations

from typing import IO

from mcptap.protocol.pending import DONE_WINDOW

#: bytes counted at a time (a warm-up begins at a block's start)
BLOCK = 1 << 20
#: the names an annotator remembers, by kind, as they stand in a capture line (ids, requestId and
#: taskId; progress tokens): over-counted (an ``id`` in any word) at worst, which makes the warm-up longer
KINDS = ((b"id", b"Id"), (b"Token",))
#: names of a kind the warm-up holds before the state's memory of that kind is taken as rebuilt
EVENTS = 4 * DONE_WINDOW
#: bytes of warm-up at least (requests opened shortly before it, answered in the half)
WARM_MIN = 1 << 20


def warm_start(fp: IO[bytes], at: int, mid: int, cap: int) -> int:
    """The byte from which the second process, forked with the state at ``at``
    and skipping to it, warms up for its half from ``mid`` (module doc): a
    block start in [``at``, ``mid``), ``mid - cap`` at the earliest (``at`` when
    that is before it). Not a line start (the caller finds the next)."""
    floor = max(at, mid - cap)
    blocks: list[tuple[int, list[int]]] = []
    total = [0] * len(KINDS)
    fp.seek(at)
    pos = at
    while pos < mid:
        data = fp.read(min(BLOCK, mid - pos))
        if not data:
            break
        counts = [sum(data.count(name) for name in kind) for kind in KINDS]
        blocks.append((pos, counts))
        total = [t + c for t, c in zip(total, counts, strict=True)]
        pos += len(data)
    warm = [0] * len(KINDS)
    for start, counts in reversed(blocks):
        if start <= floor:
            break
        warm = [w + c for w, c in zip(warm, counts, strict=True)]
        if mid - start >= WARM_MIN and all(t == w or w >= EVENTS for t, w in zip(total, warm, strict=True)):
            return start
    return floor
