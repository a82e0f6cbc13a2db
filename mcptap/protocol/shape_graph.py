"""The ref graph of a pydantic core schema (pure, level 1; used by
protocol/shape_fast.py): which ref'd schemas a schema tree holds
(:func:`refs_of`), which refs a schema uses directly (:func:`refs_in`), and
whether some ref'd schema reaches itself (:func:`cyclic`, a recursive type).
"""

from __future__ import annotations

from typing import Any

#: keys of a core schema node whose values are no schemas (a class, values, a default)
NOT_SCHEMAS = frozenset({"cls", "metadata", "default", "expected"})


def cyclic(refs: dict[str, dict[str, Any]]) -> bool:
    """True when some ref'd schema reaches itself (a recursive type, e.g. 2026-07-28's JSONValue)."""
    edges = {ref: set(refs_in(s, top=True)) for ref, s in refs.items()}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            r = todo.pop()
            if r == start:
                return True
            if r not in seen:
                seen.add(r)
                todo.extend(edges.get(r, ()))
    return False


def refs_in(s: Any, top: bool = False) -> list[str]:
    """The refs schema ``s`` uses directly (not through another ref'd schema)."""
    if isinstance(s, dict):
        if s.get("type") == "definition-ref":
            return [s.get("schema_ref", "")]
        if not top and isinstance(s.get("ref"), str):
            return [s["ref"]]
        return [r for k, v in s.items() if k not in NOT_SCHEMAS for r in refs_in(v)]
    if isinstance(s, (list, tuple)):
        return [r for v in s for r in refs_in(v)]
    return []


def refs_of(s: Any, out: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every schema with a ``ref`` in core schema ``s`` (nodes, lists), into ``out``: ref -> schema."""
    if isinstance(s, dict):
        ref = s.get("ref")
        if isinstance(ref, str) and s.get("type") != "definition-ref":
            out.setdefault(ref, s)
        for k, v in s.items():
            if k not in NOT_SCHEMAS:
                refs_of(v, out)
    elif isinstance(s, (list, tuple)):
        for v in s:
            refs_of(v, out)
    return out
