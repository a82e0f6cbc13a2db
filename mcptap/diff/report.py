"""The result of a capture diff (pure, level 3): ``DiffReport``, built by
:mod:`mcptap.diff.captures`, printed by :mod:`mcptap.diff.render`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.diff.surface import Item
from mcptap.escape import escape_name


@dataclass
class DiffReport:
    """Result of ``diff_captures``. ``items``: every difference (Item);
    ``counts``: exchanges by verdict; ``stats``: per-side facts; ``notes``: how the
    comparison was made where that changes what it can show (JSON ``notes``, only when any)."""

    a: str
    b: str
    items: list[Item] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def different(self) -> bool:
        return bool(self.items)

    @property
    def breaking(self) -> int:
        return sum(1 for it in self.items if it.breaking)

    def to_json(self) -> dict[str, Any]:
        # the names as every output shows them (escape_name: a byte that is not UTF-8 reads \\xff, strict JSON)
        d = {"a": escape_name(self.a), "b": escape_name(self.b), "different": self.different, "breaking": self.breaking,
             "exchanges": self.counts, "stats": self.stats, "items": [it.to_json() for it in self.items]}
        if self.notes:
            d["notes"] = list(self.notes)
        return d
