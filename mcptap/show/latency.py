"""A latency distribution in bounded memory for ``mcptap show``'s summary (level 3):
:class:`Latencies`, exact below 1 ms, else to 3 significant digits.
"""

from __future__ import annotations

from typing import Any


def _bucket(us: int) -> int:
    # exact below 1 ms, 3 significant digits above: bounded size, <1 % error
    if us < 1000:
        return us
    e: int = 10 ** (len(str(us)) - 3)
    return us // e * e


class Latencies:
    """Latency distribution in bounded memory (exact below 1 ms, else to 3
    significant digits). ``add(us)``; ``percentile(p)`` (0-100) in µs."""

    __slots__ = ("counts", "n", "max")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0
        self.max = 0

    def add(self, us: int) -> None:
        b = _bucket(us)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.n += 1
        if us > self.max:
            self.max = us

    def percentile(self, p: float) -> int | None:
        if not self.n:
            return None
        rank = max(1, -(-self.n * p // 100))   # nearest-rank method
        if rank >= self.n:
            return self.max                     # the top rank is the maximum, known exactly
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(b, self.max)
        return self.max

    def to_json(self) -> dict[str, Any]:
        return {"count": self.n, "p50_us": self.percentile(50), "p90_us": self.percentile(90),
                "p99_us": self.percentile(99), "max_us": self.max if self.n else None}
