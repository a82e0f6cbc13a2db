"""Alignment of two exchange-key sequences, for ``diff`` (pure, level 3).

``align(a, b) -> Iterator[(i | None, j | None)]``: the common prefix and suffix
are matched directly; the middle is aligned with ``difflib`` when both sides
have at most ``DIFFLIB_LIMIT`` keys, otherwise by a greedy re-synchronisation
with a ``WINDOW``-key look-ahead (bounded work per mismatch), so inserted or
removed exchanges and stray non-JSON lines do not shift everything after them.

``pair_in_flight(pairs, …) -> Iterator[(i | None, j | None)]`` then pairs
equal exchanges that were in flight together with others (their send order
is the client's scheduling) when the alignment left them apart.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

DIFFLIB_LIMIT = 2000        # middle section size up to which difflib aligns
WINDOW = 256                # re-synchronisation window of the large-middle aligner


def align(a: Sequence[int], b: Sequence[int], difflib_limit: int | None = None,
          window: int | None = None, coarse_a: Sequence[Any] | None = None,
          coarse_b: Sequence[Any] | None = None) -> Iterator[tuple[int | None, int | None]]:
    """Align two key sequences: yields (i, j) for matched positions, (i, None)
    for a removed one and (None, j) for an inserted one, in order.
    ``difflib_limit`` / ``window``: None means ``DIFFLIB_LIMIT`` / ``WINDOW``.
    ``coarse_a`` / ``coarse_b``: optional looser keys (method and tool name):
    inside a replaced stretch, exchanges with equal coarse keys are paired in
    order (the same call with changed arguments), not reported removed + new."""
    if difflib_limit is None:
        difflib_limit = DIFFLIB_LIMIT
    if window is None:
        window = WINDOW
    n, m = len(a), len(b)
    lo = 0
    while lo < n and lo < m and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = n, m
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    for i in range(lo):
        yield i, i
    if hi_a - lo <= difflib_limit and hi_b - lo <= difflib_limit:
        yield from _align_difflib(a, b, lo, hi_a, hi_b, coarse_a, coarse_b)
    else:
        yield from _align_window(a, b, lo, hi_a, lo, hi_b, window)
    for k in range(n - hi_a):
        yield hi_a + k, hi_b + k


def _align_difflib(a: Sequence[int], b: Sequence[int], lo: int, hi_a: int, hi_b: int,
                   coarse_a: Sequence[Any] | None = None, coarse_b: Sequence[Any] | None = None,
                   ) -> Iterator[tuple[int | None, int | None]]:
    sm = difflib.SequenceMatcher(None, list(a[lo:hi_a]), list(b[lo:hi_b]), autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                yield lo + i1 + k, lo + j1 + k
        elif tag == "replace" and coarse_a is not None and coarse_b is not None:
            yield from _pair_coarse(range(lo + i1, lo + i2), range(lo + j1, lo + j2), coarse_a, coarse_b)
        else:
            for i in range(i1, i2):
                yield lo + i, None
            for j in range(j1, j2):
                yield None, lo + j


def _pair_coarse(ia: range, jb: range, ca: Sequence[Any], cb: Sequence[Any]) -> Iterator[tuple[int | None, int | None]]:
    """Inside a replaced stretch: pair equal coarse keys in order (a small
    difflib over the coarse keys), the rest removed / inserted."""
    sm = difflib.SequenceMatcher(None, [ca[i] for i in ia], [cb[j] for j in jb], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                yield ia[i1 + k], jb[j1 + k]
        else:
            for i in range(i1, i2):
                yield ia[i], None
            for j in range(j1, j2):
                yield None, jb[j]


def _align_window(a: Sequence[int], b: Sequence[int], i: int, n: int, j: int, m: int,
                  window: int) -> Iterator[tuple[int | None, int | None]]:
    """Greedy alignment with bounded look-ahead: on a mismatch, jump to the
    nearest (smallest i+j offset) pair of equal keys within ``window``."""
    while i < n and j < m:
        if a[i] == b[j]:
            yield i, j
            i += 1
            j += 1
            continue
        first_b: dict[int, int] = {}
        for dj in range(min(window, m - j)):
            first_b.setdefault(b[j + dj], dj)
        best: tuple[int, int] | None = None
        for di in range(min(window, n - i)):
            if best is not None and di >= best[0] + best[1]:
                break
            hit = first_b.get(a[i + di])
            if hit is not None and (best is None or di + hit < best[0] + best[1]):
                best = (di, hit)
        if best is None:
            yield i, None
            yield None, j
            i += 1
            j += 1
            continue
        for k in range(best[0]):
            yield i + k, None
        for k in range(best[1]):
            yield None, j + k
        i += best[0]
        j += best[1]
    for k in range(i, n):
        yield k, None
    for k in range(j, m):
        yield None, k


#: most alignment pairs held while looking for in-flight exchanges to re-pair
REPAIR_LIMIT = 10_000

Pair = tuple[int | None, int | None]


def pair_in_flight(pairs: Iterable[Pair], key_a: Sequence[int], key_b: Sequence[int], loose_a: Callable[[int], bool],
                   loose_b: Callable[[int], bool], coarse_a: Callable[[int], Any], coarse_b: Callable[[int], Any]) -> Iterator[Pair]:
    """``align``'s pairs (exchange indices) again, with exchanges of equal keys
    paired when either is *loose* (was in flight together with others: its
    place in the send order is the client's scheduling) and no *firm* match
    (two equal exchanges each in flight alone) lies between them. Catches
    what sorting each in-flight group cannot: the same requests sent together
    on one side and one by one, in another order, on the other. Exchanges this
    frees are paired again by coarse key (``coarse_a(i)``: method and name) in
    order, as ``align`` does. Holds at most ``REPAIR_LIMIT`` pairs."""
    buf: list[Pair] = []
    for p in pairs:
        i, j = p
        firm = i is not None and j is not None and key_a[i] == key_b[j] and not loose_a(i) and not loose_b(j)
        if firm or len(buf) >= REPAIR_LIMIT:
            yield from _repaired(buf, key_a, key_b, loose_a, loose_b, coarse_a, coarse_b)
            buf.clear()
        buf.append(p)
    yield from _repaired(buf, key_a, key_b, loose_a, loose_b, coarse_a, coarse_b)


def _repaired(buf: list[Pair], key_a: Sequence[int], key_b: Sequence[int], loose_a: Callable[[int], bool],
              loose_b: Callable[[int], bool], coarse_a: Callable[[int], Any], coarse_b: Callable[[int], Any]) -> Iterator[Pair]:
    def exact(p: Pair) -> bool:
        return p[0] is not None and p[1] is not None and key_a[p[0]] == key_b[p[1]]

    # free: exchanges not matched to an equal one (unmatched, or paired by coarse key), with buffer positions
    free_a = [(pos, p[0]) for pos, p in enumerate(buf) if p[0] is not None and not exact(p)]
    free_b = [(pos, p[1]) for pos, p in enumerate(buf) if p[1] is not None and not exact(p)]
    if not any(loose_a(i) for _, i in free_a) and not any(loose_b(j) for _, j in free_b):
        yield from buf
        return
    out: list[tuple[int, Pair]] = [(pos, p) for pos, p in enumerate(buf) if exact(p)]
    by_key: dict[int, list[tuple[int, int]]] = {}
    for pos, i in free_a:
        by_key.setdefault(key_a[i], []).append((pos, i))
    taken: set[int] = set()
    left_b: list[tuple[int, int]] = []
    for pos, j in free_b:
        cands = by_key.get(key_b[j], [])
        for k, (at, i) in enumerate(cands):
            if loose_a(i) or loose_b(j):
                out.append((min(at, pos), (i, j)))
                taken.add(i)
                del cands[k]
                break
        else:
            left_b.append((pos, j))
    left_a = [(pos, i) for pos, i in free_a if i not in taken]
    # what is left pairs as align() pairs it: the same call with changed arguments, in order
    sm = difflib.SequenceMatcher(None, [coarse_a(i) for _, i in left_a], [coarse_b(j) for _, j in left_b], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out.extend((min(left_a[i1 + k][0], left_b[j1 + k][0]), (left_a[i1 + k][1], left_b[j1 + k][1])) for k in range(i2 - i1))
        else:
            out.extend((pos, (i, None)) for pos, i in left_a[i1:i2])
            out.extend((pos, (None, j)) for pos, j in left_b[j1:j2])
    out.sort(key=lambda e: e[0])
    for _, p in out:
        yield p
