"""Alignment of two exchange-key sequences, for ``diff`` (pure, level 3).

``align(a, b) -> Iterator[(i | None, j | None)]``: the common prefix and suffix
are matched directly; the middle is aligned with ``difflib`` when both sides
have at most ``DIFFLIB_LIMIT`` keys, otherwise by a greedy re-synchronisation
with a ``WINDOW``-key look-ahead (bounded work per mismatch), so inserted or
removed exchanges and stray non-JSON lines do not shift everything after them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
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
