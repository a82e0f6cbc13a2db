"""The members of a JSON-RPC batch record as message records of their own (pure, level 1).

A batch (a JSON array, legal in 2025-03-26) is one capture record whose
``members`` annotations (``[{index, kind, id, method, pair, latency_us}]``,
docs/capture-format.md) describe each JSON-RPC message in it. Filters
(``~m``, ``~tool``, ``~id``, ``~lat``, ``~j``…) and show's summary read a
member through :func:`member_views`: a message record with the batch's
``seq``, ``t_us``, ``dir``, ``phase``, ``rev`` and ``session``, the member's
annotations, its own ``json`` and ``member`` (its index: ``~batch`` matches
it too), and no findings (those stay the batch record's) nor raw bytes.
A member whose id, method or tool name holds a lone surrogate (U+FFFD in the
record) has the exact ones in ``exact`` (``{"id"?, "method"?, "tool"?}``,
``filters.exact``; its ``id`` stays the record's, which pairing keys on).
"""

from __future__ import annotations

from typing import Any

from mcptap.capture.fields import message_json
from mcptap.filters.exact import exact_member
from mcptap.records.message import exact_payload

#: the batch record's fields every member view shares
_SHARED = ("seq", "t_us", "dir", "phase", "rev", "session")


def member_views(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """One message record per well-formed member of batch record ``rec``, in
    order ([] for any other record, or a batch without usable ``members``)."""
    members = rec.get("members")
    if rec.get("kind") != "batch" or type(members) is not list:
        return []
    value = rec["json"] if "json" in rec else message_json(rec)     # raw only (a lone surrogate, 1 MiB+): parsed
    shared = {k: rec[k] for k in _SHARED if k in rec}
    out: list[dict[str, Any]] = []
    exact = exact_payload(rec)      # None (one scan of the raw bytes) unless they hold a lone surrogate escape
    for m in members:
        i = m.get("index") if type(m) is dict else None
        if type(i) is not int:
            continue
        # a view for filters and the summary, never written: the batch record's own type (message)
        view = {"type": rec.get("type"), **shared, **{k: v for k, v in m.items() if k != "index"}, "member": i}
        if type(value) is list and 0 <= i < len(value):
            view["json"] = value[i]
        if type(exact) is list and 0 <= i < len(exact) and (fields := exact_member(exact[i], m)):
            view["exact"] = fields
        out.append(view)
    return out
