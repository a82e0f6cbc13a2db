"""Deeply nested JSON for the analysis walkers (pure, level 3).

The relay forwards any nesting; orjson parses up to 1024 levels. Python's own
recursion (``==``, ``repr``, the recursive walkers of ``diff`` and ``replay``)
gives out near 1000 frames, so a peer could crash analysis with a
``[[[[…]]]]`` of 990 levels. Every value diff and replay compare is first
passed through :func:`bounded`: containers nested deeper than
:data:`MAX_DEPTH` are replaced by one string naming their depth and the
SHA-256 of their canonical JSON, computed without recursion. Two values that
differ below that depth still compare unequal (different digests); a report
names the subtree instead of its content.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from mcptap.capture.dumps import dumps

#: Deeper containers are summarised (well under Python's recursion limit, far
#: above anything an MCP payload needs).
MAX_DEPTH = 200

_OPEN = {dict: b"{", list: b"["}


def depth(value: Any) -> int:
    """Nesting depth of a JSON value (a scalar: 0; ``[]``: 1), iteratively."""
    best = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            best = max(best, d)
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            best = max(best, d)
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return best


def digest(value: Any) -> str:
    """SHA-256 (hex) of ``value``'s canonical JSON (sorted keys, no spaces),
    computed without recursion."""
    h = hashlib.sha256()
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bytes):          # a literal token pushed below
            h.update(v)
        elif isinstance(v, dict):
            h.update(b"{")
            keys = sorted(v, key=str)
            items: list[Any] = [b"}"]
            for i in reversed(range(len(keys))):       # pushed in reverse: popped in order
                items.append(v[keys[i]])
                items.append((b"," if i else b"") + orjson.dumps(str(keys[i])) + b":")
            stack.extend(items)
        elif isinstance(v, list):
            h.update(b"[")
            seq: list[Any] = [b"]"]
            for i in reversed(range(len(v))):
                seq.append(v[i])
                if i:
                    seq.append(b",")
            stack.extend(seq)
        else:
            try:
                h.update(dumps(v))
            except (TypeError, ValueError):
                h.update(repr(type(v)).encode())
    return h.hexdigest()


def summary(value: Any) -> str:
    """The string a too-deep container is replaced by."""
    return f"«{depth(value)} levels of nesting, sha256:{digest(value)[:16]}»"


def bounded(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value`` itself when it nests at most ``limit`` levels; else a copy in
    which every container at depth ``limit`` is replaced by :func:`summary`.
    Never recurses (any depth is fine)."""
    if not isinstance(value, (dict, list)) or depth(value) <= limit:
        return value
    root: list[Any] = [None]
    # (source container, destination setter) pairs, breadth of one level at a time
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    while stack:
        src, parent, key, d = stack.pop()
        if d >= limit:
            parent[key] = summary(src)
            continue
        if isinstance(src, dict):
            dst: Any = {}
            parent[key] = dst
            for k, v in src.items():
                if isinstance(v, (dict, list)):
                    dst[k] = None
                    stack.append((v, dst, k, d + 1))
                else:
                    dst[k] = v
        else:
            dstl: list[Any] = [None] * len(src)
            parent[key] = dstl
            for i, v in enumerate(src):
                if isinstance(v, (dict, list)):
                    stack.append((v, dstl, i, d + 1))
                else:
                    dstl[i] = v
    return root[0]
