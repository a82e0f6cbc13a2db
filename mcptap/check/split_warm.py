"""Where check/fullsplit.py's second process begins its warm-up (level 3:
reads the capture file it is handed).

The warm-up rebuilds the annotator state the second half starts from; what it
must hold is what that state remembers of the lines the second process skips:
the last ``DONE_WINDOW`` answered ids, cancelled and task ids, and progress
tokens. A notification flood names none (any warm-up rebuilds its state), a
tools/call capture thousands a MiB. So the warm-up is sized by the bytes
themselves: counted (``bytes.count``, no line parsed) in blocks back from the
middle, at most the longest warm-up's, it starts at the latest block from
which, for each kind of name, either the skipped bytes hold none or the
warm-up holds ``EVENTS`` (a request and its answer each name an id: more than
the window needs); a kind too sparse to fill its window in the longest: the
longest. The second process looks for names in the bytes before those
(``named``, as it skips them) and takes the longest warm-up when it finds one. A
guess, never a risk: check/fullsplit.py compares the two processes' states at
the middle (check/split_state.py) and, when they differ, forks again with the
whole ``WARM_BYTES``.

    warm_start(fp, mid, floor) -> int       # a byte in [floor, mid]
    named(fp, at, end) -> bool              # a name in those bytes
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


def warm_start(fp: IO[bytes], mid: int, floor: int) -> int:
    """The byte from which the second process warms up for its half from
    ``mid`` (module doc): a block start in (``floor``, ``mid``), else ``floor``
    (the longest warm-up). Reads [``floor``, ``mid``) at most, once: the names
    before ``floor`` are the second process's to look for (``named``). Not a
    line start (the caller finds the next)."""
    blocks: list[tuple[int, list[int]]] = []
    pos = mid
    while pos > floor:              # from the middle back: dense names are told from the first blocks
        start = max(floor, pos - BLOCK)
        fp.seek(start)
        data = fp.read(pos - start)
        counts = [sum(data.count(name) for name in kind) for kind in KINDS]
        blocks.append((start, counts))
        got = [sum(c[k] for _, c in blocks) for k in range(len(KINDS))]
        if any(0 < g and g * (mid - floor) < EVENTS * (mid - start) for g in got):
            return floor            # a kind too sparse for its window in all of the warm-up: the longest
        pos = start
    total = [sum(c[k] for _, c in blocks) for k in range(len(KINDS))]
    warm = [0] * len(KINDS)
    for start, counts in blocks:
        if start <= floor:
            break
        warm = [w + c for w, c in zip(warm, counts, strict=True)]
        if mid - start >= WARM_MIN and all(t == w or w >= EVENTS for t, w in zip(total, warm, strict=True)):
            return start
    return floor


def named(fp: IO[bytes], at: int, end: int) -> bool:
    """Whether the bytes [``at``, ``end``) hold a name of ``KINDS`` (read in blocks, up to the first)."""
    longest = max(len(name) for kind in KINDS for name in kind)
    fp.seek(at)
    tail = b""
    while at < end:
        data = tail + fp.read(min(BLOCK, end - at))
        if len(data) == len(tail):
            return False
        at += len(data) - len(tail)
        if any(name in data for kind in KINDS for name in kind):
            return True
        tail = data[-(longest - 1):]
    return False
