"""What a capture record holds, read the same way by filters, show and check
(pure, level 1): a record dict in (docs/capture-format.md), a value out.

``message_text(r)``: payload as text; ``message_json(r)``: parsed JSON;
``tool_of(r)``: the tool of a ``tools/call``; ``record_findings(r)``.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson


def message_text(r: dict[str, Any]) -> str:
    """The record's payload as text: a message's exact bytes (decoded with
    replacement), a stderr record's data; "" for other records."""
    if "raw" in r:
        raw: str = r["raw"]
        return raw
    if "json" in r:
        return orjson.dumps(r["json"]).decode()
    if "data" in r and isinstance(r["data"], str):
        return r["data"]
    for k in ("raw_b64", "data_b64"):
        if k in r:
            return base64.b64decode(r[k]).decode("utf-8", "replace")
    return ""


def message_json(r: dict[str, Any]) -> Any:
    """The parsed JSON of a message record (its ``json``, or its raw bytes
    parsed), or None."""
    if "json" in r:
        return r["json"]
    if r.get("type") != "message" or "raw" not in r:
        return None
    try:
        return orjson.loads(r["raw"])
    except orjson.JSONDecodeError:
        return None


def tool_of(r: dict[str, Any]) -> str | None:
    """The tool name of a ``tools/call`` request record (params.name), else None."""
    if r.get("method") != "tools/call":
        return None
    v = message_json(r)
    params = v.get("params") if isinstance(v, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def record_findings(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings a record carries: ``findings`` (a list) on most records,
    ``unanswered`` on the end record (whose ``findings`` holds counts)."""
    fs = r.get("findings")
    if isinstance(fs, list):
        return fs
    unanswered = r.get("unanswered")
    if r.get("type") == "end" and isinstance(unanswered, list):
        return unanswered
    return []
