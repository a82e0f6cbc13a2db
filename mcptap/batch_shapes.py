"""Schema shape checks of JSON-RPC batch members for the reuse path (pure, level 1).

``reuse_annotations.reuse_annotations`` adds to a capture's recorded
annotations the shape checks the live tap never runs; the annotator
(``protocol/annotate.py``, what ``check --full`` runs) checks every member of
a batch like a message of its own: a request's or notification's params, a
response's result against the method of the request it answers, whether that
request was a plain message or a member of an earlier batch. :class:`BatchShapes`
gives the reuse path the same checks: a batch record's member requests are
kept open by (the batch's seq, the member's id) until a response names that
seq in its ``pair`` (a member of a later batch, or a plain response).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptap.model import Direction, Finding, Kind
from mcptap.protocol.jsonrpc import id_key

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}
#: open member requests kept at most (a capture of batches never answered stops growing it)
MAX_OPEN = 1 << 16

#: ``check(direction, kind, method, payload, revision, request_params)``: ``protocol.shapes.check``
Check = Callable[..., list[Finding]]
#: ``take(seq)``: the (method, params) of the plain request record ``seq``, now answered, or None
Take = Callable[[int], "tuple[Any, Any] | None"]


class BatchShapes:
    """Open member requests of the batch records read so far, and the shape
    checks of batch members (``check``: ``protocol.shapes.check``)."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.open: dict[tuple[int, Any], tuple[Any, Any]] = {}     # (batch seq, id key) -> (method, params)

    def batch(self, rec: dict[str, Any], value: Any, take: Take) -> list[Finding]:
        """The shape findings of the members of batch record ``rec`` (``value``:
        its parsed payload, a list; ``rec``'s ``members``: their annotations);
        member responses to plain requests take those from ``take``.
        Malformed members are skipped."""
        members, d = rec.get("members"), _DIRS.get(str(rec.get("dir")))
        if type(value) is not list or type(members) is not list or d is None:
            return []
        rev, seq = rec.get("rev"), rec.get("seq")
        out: list[Finding] = []
        for m in members:
            i = m.get("index") if type(m) is dict else None
            if type(i) is not int or not 0 <= i < len(value) or type(value[i]) is not dict:
                continue
            item, kind = value[i], m.get("kind")
            mrev = m.get("rev", rev)        # the member's own when its batch changed revision midway (docs/capture-format.md)
            if kind == "request" or kind == "notification":
                method, params = m.get("method"), item.get("params")
                if kind == "request" and type(seq) is int and len(self.open) < MAX_OPEN:
                    self.open[seq, id_key(m.get("id"))] = (method, params)
                if type(method) is str:
                    out += self.check(d, Kind(kind), method, params, mrev)
            elif kind == "response" or kind == "error":
                req = self.answer(m.get("pair"), m.get("id"), take)
                if kind == "response" and req is not None and type(req[0]) is str:
                    out += self.response(d, req, item, mrev)
        return out

    def answer(self, pair: Any, rid: Any, take: Take | None = None) -> tuple[Any, Any] | None:
        """The (method, params) of the request a response with ``pair`` and id
        ``rid`` answers: a batch member's (now answered), else ``take(pair)``."""
        if type(pair) is not int:
            return None
        req = self.open.pop((pair, id_key(rid)), None)
        if req is None and take is not None:
            req = take(pair)
        return req

    def response(self, d: Direction, req: tuple[Any, Any], value: dict[str, Any], rev: Any) -> list[Finding]:
        """The shape findings of response ``value`` (a parsed message) to ``req``."""
        params = req[1] if type(req[1]) is dict and "task" in req[1] else None
        return self.check(d, Kind.RESPONSE, req[0], value.get("result"), rev, params)
