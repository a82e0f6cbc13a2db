"""Request context for ``mcptap show`` (level 3): :class:`Tracker` links each
response, progress and cancellation to its request. Memory is bounded by the
open requests, never by the length of the capture.
"""

from __future__ import annotations

from typing import Any

from mcptap.filters.members import member_views
from mcptap.protocol.jsonrpc import id_key
from mcptap.records.refusals import refused_how
from mcptap.show.values import method_of, tool_name


class Tracker:
    """Links records to the request they belong to, for display and filters.

    ``feed(record) -> request info or None``: for a response its request
    (via ``pair``); for ``notifications/progress`` and
    ``notifications/cancelled`` the request named by their ``link``. Request
    info is a dict ``{"seq", "method", "tool", "id"}`` (and ``"member": True`` for a
    batch member's request). Only open requests are
    held (answered ones are dropped), so memory follows concurrency, not length.
    """

    __slots__ = ("_open", "members")

    def __init__(self) -> None:
        #: open requests: seq (a batch member's: (seq, id key)) -> info
        self._open: dict[Any, dict[str, Any]] = {}
        #: after ``feed`` of a batch record: its members as (``filters.members.member_views``
        #: record, request info as ``feed`` gives it) pairs, for filters and the summary; else None
        self.members: list[tuple[dict[str, Any], dict[str, Any] | None]] | None = None

    def feed(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        self.members = None
        if rec.get("type") != "message":
            return None
        kind = rec.get("kind")
        if kind == "batch":
            self.members = [(v, self._member(v)) for v in member_views(rec)]
            return None
        return self._message(rec, kind)

    def _message(self, rec: dict[str, Any], kind: Any, key: Any = None) -> dict[str, Any] | None:
        if kind == "request":
            info = {"seq": rec["seq"], "method": method_of(rec), "tool": tool_name(rec), "id": rec.get("id")}
            if key is not None:
                info["member"] = True       # a batch member's: no record of its own holds its method (show/html.py)
            if refused_how(rec) is None:      # one the tap refused is answered by no one: not held open
                self._open[rec["seq"] if key is None else key] = info
            return info
        if kind in ("response", "error"):
            pair = rec.get("pair")
            if pair is None:
                return None
            return (self._open.pop(pair, None) or self._open.pop((pair, id_key(rec.get("id"))), None)   # a batch member's
                    or {"seq": pair, "method": None, "tool": None})
        link = rec.get("link")
        if link is not None:
            return self._open.get(link) or {"seq": link, "method": None, "tool": None}
        return None

    def _member(self, view: dict[str, Any]) -> dict[str, Any] | None:
        kind = view.get("kind")
        return self._message(view, kind, (view.get("seq"), id_key(view.get("id"))) if kind == "request" else None)
