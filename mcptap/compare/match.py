"""The one request matcher of replay and serve (pure, level 3).

``Matcher(masker=None, strict=False)`` indexes recorded requests by a key made
of their method and normalised params and hands them out first-in-first-out
among equals, as mitmproxy's server replay does (``addons/serverplayback.py``:
a loose hash of the request, a list of flows per hash, the first one popped)::

    m.add("tools/call", params, item, group=session)
    item, how = m.take("tools/call", live_params, group=session)

Keys (``Matcher.key``):

* by default the params are normalised with the same :class:`Masker` replay
  uses to compare answers: ``_meta`` dropped (per-request metadata, progress
  tokens, 2026-07-28 client info) and volatile keys dropped (a first page's
  ``tools/list`` and the next page's, with its ``cursor``, share a key: equal params
  are preferred, below), timestamp/UUID-shaped strings masked, absent params equal to ``{}``;
* ``initialize`` and ``server/discover`` match by method alone (the recorded
  server answers whatever client info and capabilities arrive);
* ``strict=True``: params must be equal as JSON except ``_meta.progressToken``
  (a client mints one per call) and the masker's ``--ignore`` paths.

``take`` prefers, among the entries of its key, an unused one whose params
are equal to the live ones as JSON (strict); when entries with equal params
exist but are all used, the last of them again (not in strict mode); else
one of ``group`` (a recorded session), then any unused entry, then — not in
strict mode — repeats the last entry of that key
(mitmproxy's ``server_replay_reuse``, here only once the recorded ones are
used up). Equal params first: a pagination ``cursor`` is masked as volatile,
so every page of ``tools/list`` shares one key, and a client that lists
twice must get the page its cursor names, not the next in line. ``by_method=True`` falls back to the first unused entry of the same
method when the params match nothing (replay answering a live server's
sampling or elicitation request whose prompt changed).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from mcptap.capture.dumps import dumps
from mcptap.compare.mask import Masker

T = TypeVar("T")

#: Requests answered by method alone: their params describe the client, not the question.
HANDSHAKE_METHODS = frozenset({"initialize", "server/discover"})

EXACT, REUSED, METHOD, NONE = "exact", "reused", "method", "none"


def _strict_params(params: Any) -> bytes:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            params = {**params, "_meta": {k: v for k, v in meta.items() if k != "progressToken"}}
            if not params["_meta"]:
                del params["_meta"]
        if not params:
            params = None
    try:
        return dumps(params, sort=True)
    except (TypeError, ValueError):
        return repr(params).encode()


class _Entry(Generic[T]):
    __slots__ = ("item", "group", "used", "exact")

    def __init__(self, item: T, group: Any, exact: bytes) -> None:
        self.item = item
        self.group = group
        self.used = False
        self.exact = exact          # the params as strict JSON


class Matcher(Generic[T]):
    """Recorded requests, FIFO per (method, normalised params) key (see module docstring)."""

    def __init__(self, masker: Masker | None = None, strict: bool = False) -> None:
        self.masker = masker or Masker()
        self.strict = strict
        self._by_key: dict[Hashable, list[_Entry[T]]] = {}
        self._by_method: dict[str, list[_Entry[T]]] = {}

    def key(self, method: str, params: Any) -> Hashable:
        """The matching key of a request (hashable)."""
        if method in HANDSHAKE_METHODS:
            return (method, None)
        if self.strict:
            # exact, but what the user said to ignore (--ignore) is ignored here too
            return (method, _strict_params(self.masker.ignored(params, method, "params")))
        return (method, self.masker.fingerprint(params, method, "params"))

    def add(self, method: str, params: Any, item: T, group: Any = None) -> None:
        """Index ``item`` (recorded in ``group``, e.g. its session) under its key."""
        e = _Entry(item, group, _strict_params(params))
        self._by_key.setdefault(self.key(method, params), []).append(e)
        self._by_method.setdefault(method, []).append(e)

    @staticmethod
    def _first(entries: list[_Entry[T]], group: Any, exact: bytes | None = None) -> _Entry[T] | None:
        """The first unused entry, preferring equal params, then ``group``."""
        best, best_rank = None, 4
        for e in entries:
            if not e.used:
                rank = (0 if e.exact == exact else 2) + (0 if e.group == group else 1)
                if rank < best_rank:
                    best, best_rank = e, rank
                    if not rank:
                        break
        return best

    def take(self, method: str, params: Any, group: Any = None, by_method: bool = False) -> tuple[T | None, str]:
        """The next recorded entry for this request and how it was found:
        ``"exact"`` (same key, not used before), ``"reused"`` (same key, all
        used: the last one again), ``"method"`` (``by_method``: same method,
        other params) or ``"none"`` (item None)."""
        entries = self._by_key.get(self.key(method, params))
        exact = _strict_params(params) if entries else None
        if entries:
            same = [e for e in entries if e.exact == exact]
            if same and all(e.used for e in same) and not self.strict:
                # the very request was recorded and is used up: its answer again, not another
                # page's (a cursor is masked, so every page shares the key)
                return same[-1].item, REUSED
            e = self._first(entries, group, exact)
            if e is not None:
                e.used = True
                return e.item, EXACT
        if by_method:
            e = self._first(self._by_method.get(method, []), group)
            if e is not None:
                e.used = True
                return e.item, METHOD
        if entries and not self.strict:
            same = [e for e in entries if e.exact == exact]
            return (same or entries)[-1].item, REUSED
        if by_method and not self.strict and self._by_method.get(method):
            return self._by_method[method][-1].item, REUSED
        return None, NONE

    def knows(self, method: str) -> bool:
        """Whether any request of ``method`` was recorded."""
        return method in self._by_method

    def used_up(self, method: str, params: Any) -> int:
        """How many requests matching ``method`` and ``params`` were recorded when every one
        of them was taken already (``strict``: no answer is given twice); 0 otherwise."""
        entries = self._by_key.get(self.key(method, params)) or []
        return len(entries) if entries and all(e.used for e in entries) else 0

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_method.values())
