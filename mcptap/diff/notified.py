"""Notifications, counted and compared as ``diff`` does (pure, level 3);
``replay`` compares the server's the same way (``replay/findings.py``).

``notified(rec) -> [(dir, method)]``: the notifications one message record
carries (itself, or a batch's notification members);
``notification_items(a, b, names) -> [Item]``: a method one side sent and the
other never did (counts by ``(dir, method)``), as report items
(section ``notifications``, kind ``removed`` / ``added``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcptap.diff.surface import Item


def notified(rec: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(direction, method) of each notification in the message record ``rec``:
    a notification record, or the notification members of a batch record."""
    kind = rec.get("kind")
    if kind == "notification":
        return [(rec.get("dir"), rec.get("method"))]
    if kind == "batch":
        return [(rec.get("dir"), m.get("method")) for m in rec.get("members") or () if isinstance(m, dict) and m.get("kind") == "notification"]
    return []


def notification_items(a: Mapping[tuple[Any, Any], int], b: Mapping[tuple[Any, Any], int],
                       names: tuple[str, str] = ("A", "B")) -> list[Item]:
    """One item per (direction, method) sent on one side only (a count of 0 is
    not sent), sorted; ``names``: how the sides are called in the detail."""
    items = []
    for key in sorted({k for k, n in a.items() if n} | {k for k, n in b.items() if n}, key=str):
        d, method = key
        if not b.get(key):
            items.append(Item("notifications", "removed", str(method), f"{d} {method}: sent in {names[0]} ({a[key]}), never in {names[1]}"))
        elif not a.get(key):
            items.append(Item("notifications", "added", str(method), f"{d} {method}: new in {names[1]} ({b[key]})"))
    return items
