"""JSON-path differences between two JSON values (pure, level 3).

``json_diff(a, b, path="", limit=MAX_PATHS) -> list[PathChange]``: paths such as
``result.content[0].text`` or ``result.tools[name=echo]`` (lists of objects with
a unique ``name`` / ``uri`` / ``uriTemplate`` are compared by that key, and
a change of their order is one ``reordered`` change; other lists by index).
``same(a, b)``: the JSON equality both use. Used by ``compare.verdict`` for
CHANGED verdicts: a CHANGED exchange always has at least one path.

A string that holds a JSON object or array on both sides (a tool's
JSON-in-text result) is compared inside, as the JSON it holds (object key
order and spacing are no difference; arrays keep their order): its changes are paths below ``PATH(json)``
(``result.content[0].text(json).version``); any other changed string is
shown as a window around its first differing character (``first_difference``),
never as two equal-looking prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from mcptap.capture.dumps import dumps
from mcptap.compare.depth import bounded
from mcptap.protocol.excerpt import clip

MAX_PATHS = 25
#: strings longer than this are not parsed as JSON-in-text (characters)
JSON_TEXT_MAX = 1 << 20
#: what a description shows of a changed string before its first difference (characters)
CONTEXT = 20


@dataclass(frozen=True, slots=True)
class PathChange:
    """One difference: ``path`` (``result.tools[name=echo]``), ``kind``
    (``added`` / ``removed`` / ``changed``) and the two values (None when absent)."""

    path: str
    kind: str               # added / removed / changed / reordered (a, b: the lists' keys in order)
    a: Any = None
    b: Any = None

    def to_json(self) -> dict[str, Any]:
        """``{path, kind, a?, b?, at?}``: values of more than 200 characters are
        cut; two changed strings are cut to a window around ``at``, the index
        (characters) of their first difference."""
        d: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.kind == "changed" and isinstance(self.a, str) and isinstance(self.b, str):
            at = first_difference(self.a, self.b)
            d["a"], d["b"], d["at"] = _window(self.a, at, 200), _window(self.b, at, 200), at
            return d
        if self.kind != "added":
            d["a"] = _preview(self.a)
        if self.kind != "removed":
            d["b"] = _preview(self.b)
        return d


def first_difference(a: str, b: str) -> int:
    """The index of the first character where ``a`` and ``b`` differ (the
    shorter one's length when one starts the other)."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:          # binary search on equal prefixes: slices compare at C speed
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _window(text: str, at: int, n: int) -> str:
    """``text`` cut to at most ``n`` characters (plus ellipses) showing index
    ``at`` with ``CONTEXT`` characters before it."""
    if len(text) <= n:
        return text
    start = max(0, at - CONTEXT)
    end = start + n
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _preview(v: Any, limit: int = 200) -> Any:
    if isinstance(v, (dict, list)):
        text = dumps(v).decode()
        return v if len(text) <= limit else text[:limit] + "…"
    if isinstance(v, str) and len(v) > limit:
        return v[:limit] + "…"
    return v


def short(v: Any, n: int = 60) -> str:
    """A value for one line of a report: strings quoted, JSON compact,
    ``absent`` for None, cut to ``n`` characters with an ellipsis."""
    text = v if isinstance(v, str) else dumps(v).decode() if v is not None else "absent"
    text = repr(text) if isinstance(v, str) else text
    return text if len(text) <= n else clip(text, n - 1) + "…"


def describe_change(c: PathChange) -> str:
    """One change as replay and diff both print it: ``path: A -> B`` (changed),
    ``+path: B`` (added), ``-path: A`` (removed); the marks are diff's."""
    if c.kind == "added":
        return f"+{c.path}: {short(c.b)}"
    if c.kind == "removed":
        return f"-{c.path}: {short(c.a)}"
    if c.kind == "reordered":
        return f"{c.path}: order changed: {short(c.a)} -> {short(c.b)}"
    if isinstance(c.a, str) and isinstance(c.b, str) and (len(repr(c.a)) > 60 or len(repr(c.b)) > 60):
        at = first_difference(c.a, c.b)
        return f"{c.path}: {short(_window(c.a, at, 50))} -> {short(_window(c.b, at, 50))} (from character {at})"
    return f"{c.path}: {short(c.a)} -> {short(c.b)}"


def describe(changes: Sequence[PathChange], limit: int) -> str:
    """The first ``limit`` changes, comma-separated (`` …`` when there are more)."""
    return ", ".join(describe_change(c) for c in changes[:limit]) + (" …" if len(changes) > limit else "")


_LIST_KEYS = ("name", "uri", "uriTemplate")


def _list_key(a: list[Any], b: list[Any]) -> str | None:
    """The key that identifies members of both lists (tools by name...), if any."""
    items = a + b
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for k in _LIST_KEYS:
        va = [x.get(k) for x in a]
        vb = [x.get(k) for x in b]
        if all(isinstance(v, str) for v in va + vb) and len(set(va)) == len(va) and len(set(vb)) == len(vb):
            return k
    return None


def same(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (``3`` and ``3.0`` are one JSON number),
    but ``true``/``false`` never equal ``1``/``0`` (Python's ``==`` says they
    do), objects by keys regardless of order, arrays element by element; two
    strings that each hold a JSON object or array (JSON-in-text) compare as the
    JSON they hold, so a tool's text differing only in key order or spacing is
    equal; other strings compare as exact text."""
    if type(a) is str and type(b) is str:
        return a == b or _samejson_text(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _samejson_text(a: str, b: str) -> bool:
    ja = json_text(a)
    if ja is None:
        return False
    jb = json_text(b)
    return jb is not None and same(ja, jb)


def json_diff(a: Any, b: Any, path: str = "", limit: int = MAX_PATHS) -> list[PathChange]:
    """Differences between two JSON values as path changes (at most ``limit``).
    Lists of objects with a unique ``name``/``uri``/``uriTemplate`` are
    compared by that key, other lists by index."""
    out: list[PathChange] = []
    _diff(bounded(a), bounded(b), path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[PathChange], limit: int) -> None:
    if len(out) >= limit or same(a, b):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if len(out) >= limit:
                return
            p = f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append(PathChange(p, "removed", a[k], None))
            else:
                _diff(a[k], b[k], p, out, limit)
        for k in b:
            if k not in a and len(out) < limit:
                out.append(PathChange(f"{path}.{k}" if path else str(k), "added", None, b[k]))
        return
    if isinstance(a, list) and isinstance(b, list):
        key = _list_key(a, b)
        if key is not None:
            da = {x[key]: x for x in a}
            db = {x[key]: x for x in b}
            for k, v in da.items():
                p = f"{path}[{key}={k}]"
                if k not in db:
                    if len(out) < limit:
                        out.append(PathChange(p, "removed", v, None))
                else:
                    _diff(v, db[k], p, out, limit)
            for k, v in db.items():
                if k not in da and len(out) < limit:
                    out.append(PathChange(f"{path}[{key}={k}]", "added", None, v))
            # the members kept are compared by key, so their order is one change of its own
            order_a = [k for k in da if k in db]
            order_b = [k for k in db if k in da]
            if order_a != order_b and len(out) < limit:
                out.append(PathChange(path or "$", "reordered", order_a, order_b))
            return
        for i in range(max(len(a), len(b))):
            if len(out) >= limit:
                return
            p = f"{path}[{i}]"
            if i >= len(b):
                out.append(PathChange(p, "removed", a[i], None))
            elif i >= len(a):
                out.append(PathChange(p, "added", None, b[i]))
            else:
                _diff(a[i], b[i], p, out, limit)
        return
    if type(a) is str and type(b) is str:
        ja, jb = json_text(a), json_text(b)
        if ja is not None and jb is not None:       # unequal as JSON, or same() would have said so
            _diff(ja, jb, f"{path or '$'}(json)", out, limit)
            return
    out.append(PathChange(path or "$", "changed", a, b))


def json_text(text: str) -> Any:
    """The JSON object or array ``text`` holds, or None (not JSON, a scalar, too long)."""
    head = text.lstrip()[:1]
    if (head != "{" and head != "[") or len(text) > JSON_TEXT_MAX:
        return None
    try:
        return bounded(orjson.loads(text))
    except (orjson.JSONDecodeError, TypeError):
        return None
