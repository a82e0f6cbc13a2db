"""The request heads of a Streamable HTTP replay (pure, level 3).

``post_headers(value, authority, session_id, version, tools, extra) -> [(name, value)]``:
the head of the POST that carries one c2s JSON-RPC value (message or batch).

* ``Accept: application/json, text/event-stream`` and ``Content-Type:
  application/json`` (spec 2025-03-26+ basic/transports, "Sending Messages to
  the Server"); ``Mcp-Session-Id`` when the live session has one;
* ``MCP-Protocol-Version``: the request's ``_meta`` revision on 2026-07-28,
  where ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` (from the recorded
  tool's ``x-mcp-header`` arguments) are added (spec 2026-07-28
  basic/transports/streamable-http, "Required request headers"); else the
  session's negotiated revision from 2025-06-18 on;
* ``extra``: the user's headers (``--header``), last.

``header_value(text)``: a 2026-07-28 ``Mcp-*`` header value (base64-wrapped
when not plain printable ASCII).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson

from mcptap.protocol.lifecycle import META_VERSION


def header_value(v: str) -> str:
    """A 2026-07-28 ``Mcp-*`` header value: as is when plain printable ASCII
    without edge whitespace, else ``=?base64?…?=`` of its UTF-8."""
    if v and v.isascii() and v.isprintable() and v == v.strip() and not (v.startswith("=?") and v.endswith("?=")):
        return v
    return "=?base64?" + base64.b64encode(v.encode("utf-8")).decode("ascii") + "?="


def post_headers(value: Any, authority: str, session_id: str | None, version: str | None, tools: dict[str, Any],
                 extra: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The POST head for ``value`` (module docstring). ``session_id``: the live
    ``Mcp-Session-Id`` or None; ``version``: the session's negotiated revision
    or None; ``tools``: recorded tool definitions by name."""
    h = [("Host", authority), ("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json"),
         ("User-Agent", "mcptap-replay")]
    if session_id is not None:
        h.append(("Mcp-Session-Id", session_id))
    msg: dict[str, Any] = value if isinstance(value, dict) else {}
    params = msg.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    meta_version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    if isinstance(meta_version, str):
        h.append(("MCP-Protocol-Version", meta_version))
        if "method" in msg and "id" in msg:
            method = msg["method"]
            h.append(("Mcp-Method", header_value(str(method))))
            name = params.get("uri") if method == "resources/read" else params.get("name")
            if method in ("tools/call", "prompts/get", "resources/read") and isinstance(name, str):
                h.append(("Mcp-Name", header_value(name)))
            if method == "tools/call":
                h.extend(param_headers(params, tools))
    elif version is not None and version >= "2025-06-18":
        h.append(("MCP-Protocol-Version", version))
    h.extend(extra)
    return h


def param_headers(params: dict[str, Any], tools: dict[str, Any]) -> list[tuple[str, str]]:
    """``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call``: each argument
    the recorded tool's input schema marks with ``x-mcp-header``."""
    name = params.get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    props = ((tool or {}).get("inputSchema") or {}).get("properties") or {}
    args = params.get("arguments")
    args = args if isinstance(args, dict) else {}
    out = []
    for arg, schema in props.items():
        if isinstance(schema, dict) and isinstance(schema.get("x-mcp-header"), str) and arg in args:
            v = args[arg]
            out.append((f"Mcp-Param-{schema['x-mcp-header']}", header_value(v if isinstance(v, str) else orjson.dumps(v).decode())))
    return out
