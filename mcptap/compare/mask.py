"""Volatile-field masking for comparing two answers to the same request (pure, level 3).

``Masker(ignore=()).mask(value, method, root, other=ABSENT) -> value`` and
``Masker.fingerprint(value, method, root) -> int`` (used by ``compare.verdict``,
``replay.plan`` and ``diff``); ``Masker.ignored(value, method, root)``: only the
``--ignore`` paths masked (serve ``--strict``).

Volatile fields (never compared): any ``_meta`` object, progress tokens, session
ids, cursors, task ids, request state, elicitation ids (``VOLATILE_KEYS``: these
keys are dropped, so one present on one side only is no difference either), and
string values shaped like timestamps (ISO 8601) or UUIDs (read ``"<masked>"``). The keys of 2026-07-28
``inputRequests`` / ``inputResponses`` are the server's opaque names: only
the requests themselves are compared. ``--ignore PATH`` adds more:
a dotted path over the JSON-RPC message (``result.structuredContent.now``)
where ``*`` matches one segment, ``**`` any number, ``[*]`` any list index and
``[3]`` one; ``METHOD:`` in front limits it to one method
(``tools/call:result.content``). A path that ends at the member itself
(``result``, ``tools/call:error``, ``params``) masks the whole member.

An ignored object key is removed (not only its value replaced), so a field
ignored on one side and absent on the other makes no difference; an ignored
list item reads ``"<masked>"`` (its index stays), a list whose every item is
ignored (``[*]``, ``**``) reads ``"<masked>"`` whatever its length, and
ignored items at a list's end are dropped (one side may have more). Two values
compared are masked each with the other as ``other``: a list's ignored items at its
end are then dropped only past the other side's length, so an ignored item the other
side has too stays, and only the items that really differ are compared as missing
(``[1, x, 3]`` and ``[1, y]`` with ``[1]`` ignored: ``[1, <masked>, 3]`` and
``[1, <masked>]``, index 2 the one difference).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from mcptap.capture.dumps import dumps
from mcptap.compare.depth import bounded
from mcptap.compare.paths import json_text

#: Keys whose values a server (or client) mints afresh on every run.
VOLATILE_KEYS = frozenset({
    "_meta", "progressToken", "sessionId", "requestState", "nextCursor", "cursor", "taskId",
    "elicitationId", "subscriptionId", "timestamp", "createdAt", "lastUpdatedAt", "requestId",
})
MASKED = "<masked>"
#: ``mask(other=ABSENT)``: no value to compare with (fingerprints)
ABSENT: Any = object()
#: Maps keyed by opaque server-chosen names (2026-07-28 input rounds): compared as a list of values.
OPAQUE_KEYED = frozenset({"inputRequests", "inputResponses"})
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
#: Prefilter on serialized JSON: when it does not match, nothing needs masking.
_HINT = re.compile(rb'"(?:' + b"|".join(re.escape(k.encode()) for k in sorted(VOLATILE_KEYS | OPAQUE_KEYED)) + rb')"'
                   rb'|"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"')
_SORT = orjson.OPT_SORT_KEYS
#: Prefilter on serialized JSON: a string that may start with ``{`` or ``[`` (JSON-in-text).
_JSON_TEXT_HINT = re.compile(rb'"(?:\s|\\[nrt])*[\[{]')


def _volatile_value(v: str) -> bool:
    return len(v) >= 16 and (bool(_TIMESTAMP.match(v)) or bool(_UUID.match(v)))


# -- ignore patterns ------------------------------------------------------------

_SEG = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
#: the whole path: a key or an index, then ``.key`` or ``[index]`` any number of times
_PATH = re.compile(r"(?:[^.\[\]]+|\[[^\]]*\])(?:\.[^.\[\]]+|\[[^\]]*\])*")
_INDEX = re.compile(r"\*|[0-9]+")


@dataclass(frozen=True, slots=True)
class Pattern:
    """One compiled ``--ignore`` path: ``method`` (or None for any) and its segments."""

    method: str | None
    segments: tuple[str, ...]
    text: str


def parse_ignore(text: str) -> Pattern:
    """Compile an ``--ignore`` path (``[METHOD:]SEG(.KEY|[INDEX])*``, see the module doc).

    Raises ValueError naming the path and what is wrong with it: an empty path or method, an
    empty key (``a..b``, a trailing dot), an unclosed or stray bracket, an index other than
    ``*`` or digits. (The segments were once picked out of whatever matched, so ``bad[path``
    ignored ``bad.path`` and a typo silently ignored nothing.)"""
    method = None
    body = text.strip()
    if ":" in body.split(".")[0] and not body.startswith("["):
        method, body = body.split(":", 1)
        if not method.strip():
            raise ValueError(f"bad ignore path {text!r}: nothing before ':' (a method such as tools/call:)")
    if not body:
        raise ValueError(f"bad ignore path {text!r}: the path is empty")
    if not _PATH.fullmatch(body):
        raise ValueError(f"bad ignore path {text!r}: {_why(body)}")
    segs = []
    for m in _SEG.finditer(body):
        if m.group(1) is None:
            segs.append(m.group(2))
        elif _INDEX.fullmatch(m.group(1)):
            segs.append("[*]" if m.group(1) == "*" else f"[{int(m.group(1))}]")
        else:
            raise ValueError(f"bad ignore path {text!r}: [{m.group(1)}] is no list index ([*] or a number such as [0])")
    return Pattern(method, tuple(segs), text)


def _why(body: str) -> str:
    """What makes ``body`` no path (for the error message)."""
    if ".." in body or body.startswith(".") or body.endswith("."):
        return "an empty key (a doubled, leading or trailing '.')"
    if ".[" in body:
        return "'.' before '[' (a list index follows its key: a[0], not a.[0])"
    depth = 0
    for ch in body:
        if ch == "[":
            if depth:
                return "'[' inside [...]"
            depth = 1
        elif ch == "]":
            if not depth:
                return "']' without '['"
            depth = 0
    if depth:
        return "'[' without ']'"
    return "a key right after ']' needs a '.' before it (a[0].b)"


def _seg_match(pat: str, seg: str) -> bool:
    if pat == seg:
        return True
    if pat == "*":
        return not seg.startswith("[")
    if pat == "[*]":
        return seg.startswith("[")
    return False


def _advance(states: frozenset[tuple[int, int]], pats: Sequence[Pattern], seg: str) -> tuple[frozenset[tuple[int, int]], bool]:
    """NFA step over one path segment. Returns (next states, a pattern ended here)."""
    out: set[tuple[int, int]] = set()
    hit = False
    todo = list(states)
    seen = set(todo)
    while todo:
        pi, k = todo.pop()
        segs = pats[pi].segments
        if k < len(segs) and segs[k] == "**":
            if (pi, k + 1) not in seen:       # ** matching zero segments
                seen.add((pi, k + 1))
                todo.append((pi, k + 1))
            out.add((pi, k))                  # ** eating this segment
            if k + 1 == len(segs):
                hit = True
            continue
        if k < len(segs) and _seg_match(segs[k], seg):
            if k + 1 == len(segs):
                hit = True
            else:
                out.add((pi, k + 1))
    return frozenset(out), hit


def _every_item(states: frozenset[tuple[int, int]], pats: Sequence[Pattern]) -> bool:
    """Whether a pattern ends at any index of the list at ``states`` (``[*]``, ``**``):
    such a list is ignored whole, whatever its length."""
    return _advance(states, pats, "[*]")[1]


def _trim(items: list[Any], hits: set[int], floor: int = 0) -> list[Any]:
    """``items`` without the ignored items (indices ``hits``) at its end, down to ``floor``
    items at most (the other side's length: an index both have is compared there): a list
    longer only by an ignored index is no difference."""
    n = len(items)
    while n > floor and n - 1 in hits:
        n -= 1
    return items[:n]


class Masker:
    """Masks volatile fields (and ``--ignore`` paths) out of JSON values.

    ``mask(value, method, root)``: a copy of ``value`` with volatile parts
    replaced by ``"<masked>"`` (``value`` itself when nothing was masked).
    ``root`` names ``value``'s place in the message (``"result"``, ``"params"``,
    ``"error"``) so ignore paths can start from the message envelope.
    ``fingerprint(value, method, root)``: a hash of the masked value (int),
    fast when nothing is volatile (one serialization and one regex scan).
    """

    def __init__(self, ignore: Iterable[str | Pattern] = ()) -> None:
        self.patterns = [p if isinstance(p, Pattern) else parse_ignore(p) for p in ignore]

    def _states(self, method: str | None, root: str) -> tuple[frozenset[tuple[int, int]], bool]:
        """The NFA states inside ``root`` and whether a pattern ended at ``root`` itself."""
        live = frozenset((i, 0) for i, p in enumerate(self.patterns) if p.method is None or p.method == method)
        if not live:
            return live, False
        return _advance(live, self.patterns, root)

    def mask(self, value: Any, method: str | None = None, root: str = "result", other: Any = ABSENT) -> Any:
        """``other``: the value ``value`` is to be compared with (see the module docstring)."""
        value = bounded(value)
        other = other if other is ABSENT else bounded(other)
        if not self.patterns:
            return self._mask(value, frozenset(), other)
        states, whole = self._states(method, root)
        # ``--ignore result`` (or ``METHOD:error``, ``params``) names the whole member
        return MASKED if whole else self._mask(value, states, other)

    def _mask(self, value: Any, states: frozenset[tuple[int, int]], other: Any = ABSENT) -> Any:
        if isinstance(value, dict):
            out = None
            there = other if isinstance(other, dict) else {}
            for k, v in value.items():
                nv = v
                if k in VOLATILE_KEYS:    # (``_meta`` too) removed: present on one side only must not differ
                    if out is None:
                        out = dict(value)
                    del out[k]
                    continue
                sub = states
                hit = False
                if states:
                    sub, hit = _advance(states, self.patterns, k)
                if hit:             # removed: present on one side only must not differ
                    if out is None:
                        out = dict(value)
                    del out[k]
                    continue
                if k in OPAQUE_KEYED and isinstance(v, dict):
                    vals = [self._mask(x, sub) for x in v.values()]
                    nv = sorted(vals, key=lambda x: dumps(x, sort=True))
                elif isinstance(v, (dict, list)):
                    nv = self._mask(v, sub, there.get(k, ABSENT))
                elif isinstance(v, str) and _volatile_value(v):
                    nv = MASKED
                if nv is not v:
                    if out is None:
                        out = dict(value)
                    out[k] = nv
            return value if out is None else out
        if isinstance(value, list):
            if states and _every_item(states, self.patterns):
                return MASKED
            outl = None
            hits: set[int] = set()
            others = other if isinstance(other, list) else []
            for i, v in enumerate(value):
                sub = states
                hit = False
                if states:
                    sub, hit = _advance(states, self.patterns, f"[{i}]")
                nv = v
                if hit:
                    nv = MASKED
                    hits.add(i)
                elif isinstance(v, (dict, list)):
                    nv = self._mask(v, sub, others[i] if i < len(others) else ABSENT)
                elif isinstance(v, str) and _volatile_value(v):
                    nv = MASKED
                if nv is not v:
                    if outl is None:
                        outl = list(value)
                    outl[i] = nv
            return value if outl is None else _trim(outl, hits, len(others))
        if isinstance(value, str) and _volatile_value(value):
            return MASKED
        return value

    def ignored(self, value: Any, method: str | None = None, root: str = "params") -> Any:
        """A copy of ``value`` with only the ``--ignore`` paths masked (``value`` itself when
        none applies): no ``_meta``, volatile key or value rule. Strict matching's view
        (serve ``--strict``: exact params except what the user said to ignore)."""
        if not self.patterns:
            return value
        states, whole = self._states(method, root)
        if whole:               # ``--ignore params`` names the whole member
            return MASKED
        return self._ignore(bounded(value), states) if states else value

    def _ignore(self, value: Any, states: frozenset[tuple[int, int]]) -> Any:
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for k, v in value.items():
                sub, hit = _advance(states, self.patterns, k)
                if not hit:         # an ignored key is removed, as in ``mask``
                    kept[k] = self._ignore(v, sub) if sub else v
            same_ = len(kept) == len(value) and all(kept[k] is v for k, v in value.items())
            return value if same_ else kept
        if not isinstance(value, list):
            return value
        if _every_item(states, self.patterns):
            return MASKED
        out, hits = [], set()
        for i, v in enumerate(value):
            sub, hit = _advance(states, self.patterns, f"[{i}]")
            if hit:
                hits.add(i)
            out.append(MASKED if hit else self._ignore(v, sub) if sub else v)
        return _trim(out, hits) if hits or any(x is not y for x, y in zip(out, value, strict=True)) else value

    def fingerprint(self, value: Any, method: str | None = None, root: str = "result") -> int:
        value = bounded(value)
        if isinstance(value, dict) and "_meta" in value:
            value = {k: v for k, v in value.items() if k != "_meta"}
        if value == {}:
            value = None                  # absent params and empty params are the same request
        try:
            data = dumps(value, sort=True)
        except (TypeError, ValueError):
            return hash(repr(value))
        if _JSON_TEXT_HINT.search(data) is not None:
            # JSON-in-text compares as the JSON it holds (compare.paths.same): hash it so
            value = _canonical_text(value)
        elif not self.patterns and _HINT.search(data) is None:
            return hash(data)
        masked = self.mask(value, method, root)
        # ignoring every key given leaves {}: the same request as one without them
        return hash(dumps(None if masked == {} else masked, sort=True))


def _canonical_text(value: Any) -> Any:
    """``value`` with every string holding a JSON object or array replaced by
    that JSON written with sorted keys, so equal JSON-in-text hashes equal."""
    if isinstance(value, dict):
        return {k: _canonical_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_text(v) for v in value]
    if isinstance(value, str):
        inner = json_text(value)
        if inner is not None:
            return dumps(_canonical_text(inner), sort=True).decode()
    return value
