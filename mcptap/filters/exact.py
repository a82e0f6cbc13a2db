"""A record's id, method and tool name as the peer sent them, for filters (pure, level 1).

A string with a lone UTF-16 surrogate escape (``"\\ud800"``, JSON grammar but
not Unicode) is U+FFFD in a record's ``id``, ``method`` and ``json`` (orjson,
every reader's parser, reads no lone surrogate); the raw bytes hold the
exact one (``records.message.exact_payload``). ``~id``, ``~m`` and ``~tool``
compare the exact value, as every view shows it (``\\ud800``), so a filter
naming U+FFFD does not match a peer's lone surrogate. A batch member's view
(``members.member_views``) carries its exact values in ``exact`` (``exact_member``).
"""

from __future__ import annotations

import re
from typing import Any

from mcptap.records.message import exact_id, exact_payload

_SURROGATE = re.compile("[\ud800-\udfff]")


def _lossy_equal(exact: Any, lossy: str) -> bool:
    return type(exact) is str and _SURROGATE.sub("\ufffd", exact) == lossy


def exact_field(r: dict[str, Any], key: str) -> Any:
    """``r[key]`` (``"id"`` or ``"method"``; None when absent) as the peer
    sent it: a string holding U+FFFD is read again from the raw bytes, and
    replaced by the exact string when that one holds a lone surrogate where
    the record has U+FFFD."""
    v = r.get(key)
    if type(v) is not str or "\ufffd" not in v:
        return v
    ex = r.get("exact")
    if type(ex) is dict:                # a batch member's view
        return ex.get(key, v)
    if "raw" not in r:
        return v
    value = exact_payload(r)
    if type(value) is not dict:
        return v
    if key == "id":
        return exact_id(v, value)
    exact = value.get(key)
    return exact if _lossy_equal(exact, v) else v


def exact_tool(r: dict[str, Any], name: str | None) -> str | None:
    """``name``, the record's tool (``capture.fields.tool_of``), as the peer sent it (as ``exact_field``)."""
    if name is None or "\ufffd" not in name:
        return name
    ex = r.get("exact")
    if type(ex) is dict:
        return ex.get("tool", name)     # type: ignore[no-any-return]
    if "raw" not in r:
        return name
    value = exact_payload(r)
    params = value.get("params") if type(value) is dict else None
    exact = params.get("name") if type(params) is dict else None
    return exact if _lossy_equal(exact, name) else name


def exact_member(item: Any, member: dict[str, Any]) -> dict[str, Any]:
    """The ``id``, ``method`` and tool name of batch member annotation
    ``member`` exact from ``item`` (its message, parsed with lone surrogates
    kept): the annotation's fields that differ, as ``{key: exact}``."""
    out: dict[str, Any] = {}
    if type(item) is not dict:
        return out
    for key in ("id", "method"):
        v = member.get(key)
        if type(v) is str and "\ufffd" in v and _lossy_equal(item.get(key), v):
            out[key] = item[key]
    params = item.get("params")
    name = params.get("name") if type(params) is dict and item.get("method") == "tools/call" else None
    if type(name) is str and _SURROGATE.search(name):
        out["tool"] = name
    return out
