"""JSON-RPC on the mock's wire (pure, level 3): messages as bytes, ids as keys, and what
JSON-RPC 2.0 and MCP reject in a client message, so the mock answers an invalid request
as a server must instead of with a recorded result.

    encode(value)           # compact JSON bytes, a client's id beyond 64 bits exact
    hkey(id)                # a hashable key that keeps 1 and "1" apart
    defect(msg)             # None, or what is wrong: "jsonrpc", "id", "method", "params", "params_array"
    rejection(msg, why)     # the error response, or None for a notification (it gets nothing)

JSON-RPC 2.0 §4: ``jsonrpc`` exactly ``"2.0"``; ``method`` a string; ``params``, when
present, an object or an array; an ``id`` a string or a number (MCP: not null). A message
without ``method`` is a request object only when it has an ``id`` and no ``result`` or
``error`` (else it is an answer). §5: an invalid request object is answered ``-32600
Invalid Request`` with its id when it is a request with a valid id (a wrong ``jsonrpc`` or
``params``), else null (no id could be read from it). MCP's params are an
object: an array is ``-32602 Invalid params`` (as the official SDK server answers it).
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from mcptap.capture.dumps import utf8_json

#: the JSON-RPC error of each defect: code and message
_ERRORS = {"jsonrpc": (-32600, "Invalid Request: jsonrpc must be \"2.0\""),
           "id": (-32600, "Invalid Request: the id must be a string or a number"),
           "method": (-32600, "Invalid Request: the method must be a string"),
           "params": (-32600, "Invalid Request: params must be an object or an array"),
           "params_array": (-32602, "Invalid params: MCP params are an object, not an array"),
           "value": (-32600, "Invalid Request: not a request object")}


ID_BEYOND = "Invalid Request: the id is a number beyond what JSON-RPC peers can read back"


def encode(value: Any) -> bytes:
    """A message as compact JSON bytes. An id the client sent with a number
    beyond 64 bits (parsed exactly) goes back exactly (stdlib json), as any
    echo of the client's own value must; so does a string id with a lone
    surrogate (``"\\ud800"``, kept exact by ``protocol.jsonparse``): as that escape."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return utf8_json(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def hkey(v: Any) -> Any:
    """A hashable key for a JSON-RPC id that keeps 1 and "1" apart."""
    return ("s", v) if isinstance(v, str) else ("i", v) if isinstance(v, int) and not isinstance(v, bool) else ("r", repr(v))


def valid_id(v: Any) -> bool:
    """Whether ``v`` is an id a response can carry back: a string or a finite number."""
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and (type(v) is int or math.isfinite(v)))


def defect(msg: Any) -> str | None:
    """What makes the client message ``msg`` (one parsed JSON value, not a batch) an invalid
    request or notification; None for a valid one or for an answer to a server request."""
    if not isinstance(msg, dict):
        return "value"
    if "method" not in msg:
        return "value" if "id" in msg and "result" not in msg and "error" not in msg else None
    if msg.get("jsonrpc") != "2.0":
        return "jsonrpc"
    if not isinstance(msg["method"], str):
        return "method"
    if "id" in msg and not valid_id(msg["id"]):
        return "id"
    params = msg.get("params", {})
    if isinstance(params, list):
        return "params_array"
    return None if isinstance(params, dict) else "params"


def rejection(msg: Any, why: str) -> dict[str, Any] | None:
    """The error response to the invalid message ``msg`` whose defect is ``why``; None when
    ``msg`` is a notification (it has a method and no id: nothing is answered)."""
    if isinstance(msg, dict) and "method" in msg and "id" not in msg:
        return None
    # the id of a request object invalid only in its jsonrpc or params; of one that is not a
    # request at all (no string method, an id no answer carries, not an object) no id was read
    lid = msg.get("id") if isinstance(msg, dict) and why in ("jsonrpc", "params", "params_array") else None
    code, message = _ERRORS[why]
    return {"jsonrpc": "2.0", "id": lid if valid_id(lid) else None, "error": {"code": code, "message": message}}
