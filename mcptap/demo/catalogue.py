"""What the demo server offers: its tools, resources and prompts (stdlib only).

The descriptors the server lists (``TOOLS``, ``RESOURCES``, ``TEMPLATES``,
``PROMPTS``, in their 2025-11-25 shape) and the pure functions that answer
``tools/call`` (for ``echo``, ``add``, and ``slow_count``'s argument check),
``resources/read`` and ``prompts/get``. No I/O, no threads, no session state:
the negotiated protocol revision is passed in where the answer depends on it,
and :func:`for_revision` strips fields older revisions do not define.
:mod:`mcptap.demo.server` owns the session, the transport and the dispatch.

Errors: :class:`RpcError` (answered as a JSON-RPC error: ``INVALID_PARAMS``
-32602, ``RESOURCE_NOT_FOUND`` -32002 with ``data.uri``) and
:class:`ToolError` (answered as a tool result with ``isError: true``, 2025-11-25
server/tools "Error Handling").
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard
from urllib.parse import unquote

from mcptap import __version__
from mcptap.demo import PROTOCOL_VERSION

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
NAME = "mcptap-demo-server"


class RpcError(Exception):
    """A JSON-RPC error to answer a request with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class ToolError(Exception):
    """A tool execution error: answered as a result with ``isError: true``."""


def since(revision: str | None, first: str) -> bool:
    """True when the negotiated ``revision`` includes a feature added in ``first``
    (ISO dates compare as strings)."""
    return revision is not None and revision >= first


def text_content(text: str) -> dict[str, Any]:
    """A ``TextContent`` block: ``{"type": "text", "text": text}``."""
    return {"type": "text", "text": text}


def for_revision(item: dict[str, Any], revision: str | None) -> dict[str, Any]:
    """A listed descriptor as ``revision`` defines it: ``title`` and
    ``outputSchema`` exist from 2025-06-18 on."""
    if since(revision, "2025-06-18"):
        return item
    return {k: v for k, v in item.items() if k not in ("title", "outputSchema")}


# -- descriptors ---------------------------------------------------------------------

TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "title": "Echo", "description": "Return the given text unchanged.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo."}},
                     "required": ["text"], "additionalProperties": False}},
    {"name": "add", "title": "Add", "description": "Add two numbers; the sum comes back as structured content.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"], "additionalProperties": False},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}},
    {"name": "slow_count", "title": "Slow count",
     "description": "Count from 1 to count, one step every interval_ms milliseconds, reporting progress "
                    "when the request carries a progressToken. Honours notifications/cancelled.",
     "inputSchema": {"type": "object", "properties": {
         "count": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
         "interval_ms": {"type": "integer", "minimum": 0, "maximum": 5000, "default": 200}},
         "additionalProperties": False}},
    {"name": "fail", "title": "Fail", "description": "Always fails: returns a tool result with isError true.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "additionalProperties": False}},
]

RESOURCES: dict[str, tuple[dict[str, Any], str]] = {
    "demo://greeting": ({"uri": "demo://greeting", "name": "greeting", "title": "Greeting",
                         "description": "A short plain-text greeting.", "mimeType": "text/plain"},
                        "Hello from the mcptap demo server!"),
    "demo://about.json": ({"uri": "demo://about.json", "name": "about", "title": "About this server",
                           "description": "Name, version and protocol revision as JSON.", "mimeType": "application/json"},
                          json.dumps({"name": NAME, "version": __version__, "protocolVersion": PROTOCOL_VERSION})),
}
TEMPLATE_PREFIX = "demo://echo/"
TEMPLATES = [{"uriTemplate": TEMPLATE_PREFIX + "{text}", "name": "echo", "title": "Echo resource",
              "description": "A text resource whose content is the (percent-decoded) last URI segment.",
              "mimeType": "text/plain"}]

PROMPTS = [{"name": "greet", "title": "Greet someone", "description": "Ask the model to greet a person.",
            "arguments": [{"name": "name", "description": "Who to greet.", "required": True},
                          {"name": "style", "description": "How (e.g. formal, pirate).", "required": False}]}]


# -- resources and prompts -----------------------------------------------------------

def read_resource(params: dict[str, Any]) -> dict[str, Any]:
    """The ``resources/read`` result for ``params["uri"]``. Raises RpcError."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: uri must be a string")
    if uri in RESOURCES:
        meta, text = RESOURCES[uri]
    elif uri.startswith(TEMPLATE_PREFIX) and "/" not in uri[len(TEMPLATE_PREFIX):]:
        meta, text = {"mimeType": "text/plain"}, unquote(uri[len(TEMPLATE_PREFIX):])
    else:
        raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
    return {"contents": [{"uri": uri, "mimeType": meta["mimeType"], "text": text}]}


def get_prompt(params: dict[str, Any]) -> dict[str, Any]:
    """The ``prompts/get`` result for ``greet``. Raises RpcError."""
    if params.get("name") != "greet":
        raise RpcError(INVALID_PARAMS, f"Invalid params: unknown prompt {params.get('name')!r}")
    args = params.get("arguments") or {}
    if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
        raise RpcError(INVALID_PARAMS, "Invalid params: prompt arguments must be an object of strings")
    if not args.get("name"):
        raise RpcError(INVALID_PARAMS, "Invalid params: missing required argument 'name'")
    style = f" in a {args['style']} style" if args.get("style") else ""
    return {"description": "Greet someone",
            "messages": [{"role": "user", "content": text_content(f"Please greet {args['name']}{style}.")}]}


# -- tools ---------------------------------------------------------------------------

def echo(args: dict[str, Any]) -> dict[str, Any]:
    """The ``echo`` tool's result. Raises ToolError on bad arguments."""
    text = args.get("text")
    if not isinstance(text, str) or set(args) - {"text"}:
        raise ToolError("echo takes one argument: text (a string)")
    return {"content": [text_content(text)]}


def _number(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def add(args: dict[str, Any], revision: str | None) -> dict[str, Any]:
    """The ``add`` tool's result (``structuredContent`` from 2025-06-18 on).
    Raises ToolError on bad arguments."""
    a, b = args.get("a"), args.get("b")
    if set(args) - {"a", "b"} or not _number(a) or not _number(b):
        raise ToolError("add takes two numbers: a and b")
    total = a + b
    # With an outputSchema the structured result is required; the same JSON as
    # text keeps clients that only read content working (server/tools "Structured Content").
    result: dict[str, Any] = {"content": [text_content(json.dumps({"sum": total}))]}
    if since(revision, "2025-06-18"):
        result["structuredContent"] = {"sum": total}
    return result


def slow_count_args(args: dict[str, Any]) -> tuple[int, int]:
    """``(count, interval_ms)`` of a ``slow_count`` call, defaults applied.
    Raises ToolError on bad arguments."""
    count, interval = args.get("count", 5), args.get("interval_ms", 200)
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (count, interval))
    if set(args) - {"count", "interval_ms"} or not ok or not 1 <= count <= 100 or not 0 <= interval <= 5000:
        raise ToolError("slow_count takes count (1..100) and interval_ms (0..5000), both integers")
    return count, interval
