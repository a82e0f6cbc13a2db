"""Classify one parsed payload as a JSON-RPC 2.0 message (pure; never raises).

Source: JSON-RPC 2.0 §4-§6 as MCP constrains it (spec basic/index "Messages"):
``jsonrpc`` is exactly "2.0"; request ids are strings or integers (never null,
bool or float); a response has exactly one of ``result`` / ``error``; params and
results are objects; an error has an integer ``code`` and a string ``message``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from mcptap.model import UNPARSED, Finding, Kind
from mcptap.protocol.codes import finding
from mcptap.protocol.excerpt import cut
from mcptap.protocol.jsonparse import LONE_SURROGATE, NON_FINITE, parse_exact

#: JSON-RPC predefined codes plus the ranges MCP uses (basic/index error codes).
STANDARD_ERROR_CODES = frozenset({-32700, -32600, -32601, -32602, -32603})
#: integers every JSON parser reads exactly (IEEE 754 doubles: ±(2^53−1))
MAX_SAFE_INTEGER = (1 << 53) - 1
_SURROGATE = re.compile("[\ud800-\udfff]")
# (module constants: reading a member off its Enum class costs ~10x a global on Python 3.11, see protocol/annotate.py)
_REQUEST, _NOTIFICATION, _RESPONSE, _ERROR, _INVALID = Kind.REQUEST, Kind.NOTIFICATION, Kind.RESPONSE, Kind.ERROR, Kind.INVALID


@dataclass(slots=True)
class Classified:
    """Result of ``classify``: ``kind``; ``id`` (any JSON value) and ``has_id``
    (to tell a missing id from ``null``); ``method``; envelope ``findings``."""

    kind: Kind
    id: Any = None
    has_id: bool = False
    method: str | None = None
    findings: list[Finding] = field(default_factory=list)


def valid_request_id(v: Any) -> bool:
    """MCP request ids: string or integer (bool is not an integer here)."""
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def show_id(v: Any) -> str:
    """An id (or progress token) as JSON text, for finding messages and the
    timeline alike: ``null``, ``true``, ``7``, ``1.5``, ``"a\\u001bb"`` (JSON string
    escapes, so no control character goes out raw), ``[1]``. A number beyond
    any double (``1e400``: read as ±infinity, which JSON cannot write) shows as
    ``1e400`` / ``-1e400``, whatever digits the peer wrote; a lone surrogate
    (an id kept exact: ``jsonparse.parse_exact``) as its escape, ``"\\ud800"``."""
    t = type(v)
    if t is int:
        try:
            return str(v)
        except ValueError:          # beyond Python's int-to-text digit limit
            return "an integer of more than 4300 digits"
    if t is float:
        if math.isinf(v):
            return "1e400" if v > 0 else "-1e400"
        return repr(v) if not math.isnan(v) else "NaN"
    text = json.dumps(v, ensure_ascii=False, default=repr)
    return text if _SURROGATE.search(text) is None else _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_type(v: Any) -> str:
    """The JSON type name of a parsed value: null, boolean, number, string, array, object."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object" if isinstance(v, dict) else type(v).__name__


def _bad_id(what: str, mid: Any) -> Finding:
    typed = f" ({json_type(mid)})" if mid is not None else ""
    return finding("jsonrpc.invalid_id", f"{what} id {show_id(mid)}{typed} must be a string or an integer")


def id_key(v: Any) -> Any:
    """Exact pairing key of an id (hashable): ``"1"`` ≠ ``1``, ``1`` = ``1.0``,
    ``true`` ≠ ``1``. Integers and strings are their own keys (the common
    case: no allocation); other values a tagged tuple."""
    t = type(v)
    if t is int or t is str:
        return v
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return int(v) if v.is_integer() else ("f", v)
    if isinstance(v, str):
        return str(v)
    return ("o", repr(v))


def loose_id_key(v: Any) -> str:
    """Type-blind key: ``"1"`` and ``1`` collide (jsonrpc.id_type_mismatch)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def nonstandard_error_code(code: int) -> bool:
    """True for codes outside JSON-RPC/MCP conventions: 0, or inside the
    JSON-RPC reserved range (-32768..-32100) without a predefined meaning.
    -32099..-32000 is the implementation-defined server range MCP uses
    (-32002, -32042, -32020..-32022)."""
    if code == 0:
        return True
    return -32768 <= code <= -32100 and code not in STANDARD_ERROR_CODES


def classify(value: Any) -> Classified:
    """Classify one parsed JSON value (not a batch member list: for a top-level
    array return Kind.BATCH and classify members separately)."""
    if type(value) is not dict:
        if value is UNPARSED:
            return Classified(Kind.NON_JSON)
        if isinstance(value, list):
            return Classified(Kind.BATCH)
        if not isinstance(value, dict):
            return Classified(_INVALID, findings=[finding("jsonrpc.invalid_message", f"JSON {type(value).__name__} is not a JSON-RPC message object")])
    out: list[Finding] = []
    has_id = "id" in value
    mid = value.get("id")
    method = value.get("method")
    if value.get("jsonrpc") != "2.0":
        out.append(finding("jsonrpc.invalid_version", f"jsonrpc member is {value.get('jsonrpc')!r}, must be \"2.0\""))
    if method is not None:
        if type(method) is not str and not isinstance(method, str):
            out.append(finding("jsonrpc.invalid_message", f"method is a {type(method).__name__}, must be a string"))
            return Classified(_INVALID, mid, has_id, None, out)
        if "params" in value and not isinstance(value["params"], dict):
            out.append(finding("jsonrpc.params_not_object", f"{method}: params is {type(value['params']).__name__}, MCP params are objects"))
        if "result" in value or "error" in value:
            out.append(finding("jsonrpc.invalid_message", f"{method}: a message with a method must not carry result/error"))
        if has_id:
            if type(mid) is int:
                if not -MAX_SAFE_INTEGER <= mid <= MAX_SAFE_INTEGER:
                    out.append(_unsafe(mid))
            elif type(mid) is not str and not valid_request_id(mid):
                out.append(_bad_id(f"{method}: request", mid))
            if method.startswith("notifications/"):
                out.append(finding("jsonrpc.notification_with_id", f"{method} is a notification but carries id {show_id(mid)}"))
            return Classified(_REQUEST, mid, True, method, out)
        return Classified(_NOTIFICATION, None, False, method, out)
    has_result = "result" in value
    has_error = "error" in value
    if not has_result and not has_error:
        if not has_id:
            out.append(finding("jsonrpc.invalid_message", "object has neither method nor result nor error"))
            return Classified(_INVALID, mid, has_id, None, out)
        # a response (it answers an id) missing its result/error member: paired, and flagged
        out.append(finding("jsonrpc.result_and_error", "response carries neither result nor error (exactly one is required)"))
        if mid is not None and not valid_request_id(mid):
            out.append(_bad_id("response", mid))
        return Classified(_RESPONSE, mid, has_id, None, out)
    if has_result and has_error:
        out.append(finding("jsonrpc.result_and_error", "response carries both result and error"))
    if has_error and not has_result:
        err = value["error"]
        if not isinstance(err, dict) or not (isinstance(err.get("code"), int) and not isinstance(err.get("code"), bool)) or not isinstance(err.get("message"),
                                                                                                                                           str):
            out.append(finding("jsonrpc.invalid_error_object", f"error member {_short(err)} needs an integer code and a string message"))
        elif nonstandard_error_code(err["code"]):
            out.append(finding("jsonrpc.nonstandard_error_code", f"error code {err['code']} is outside the JSON-RPC reserved and application conventions"))
        kind = _ERROR
    else:
        if not isinstance(value["result"], dict):
            out.append(finding("jsonrpc.result_not_object", f"result is {type(value['result']).__name__}, MCP results are objects"))
        kind = _RESPONSE
    if type(mid) is int:
        if not -MAX_SAFE_INTEGER <= mid <= MAX_SAFE_INTEGER:
            out.append(_unsafe(mid))
    elif has_id and mid is not None and type(mid) is not str and not valid_request_id(mid):
        out.append(_bad_id("response", mid))
    return Classified(kind, mid, has_id, None, out)


_NO_PARAMS: dict[str, Any] = {}


def classify_plain(value: Any) -> tuple[Kind, Any, bool, str | None] | None:
    """``classify(value)``'s (kind, id, has_id, method) for the well-formed
    message it finds nothing to say about (version "2.0", a string or safe
    integer id, object params or result: a request, notification or
    response), without building a Classified; None: ask ``classify``."""
    if type(value) is dict and value.get("jsonrpc") == "2.0":
        method = value.get("method")
        if type(method) is str:
            if "result" not in value and "error" not in value and type(value.get("params", _NO_PARAMS)) is dict:
                if "id" not in value:
                    return _NOTIFICATION, None, False, method
                mid = value["id"]
                if (type(mid) is str or type(mid) is int and -MAX_SAFE_INTEGER <= mid <= MAX_SAFE_INTEGER) and not method.startswith("notifications/"):
                    return _REQUEST, mid, True, method
        elif method is None and "result" in value and "error" not in value and "id" in value and type(value["result"]) is dict:
            mid = value["id"]
            if type(mid) is str or type(mid) is int and -MAX_SAFE_INTEGER <= mid <= MAX_SAFE_INTEGER:
                return _RESPONSE, mid, True, None
    return None


def _unsafe(mid: int) -> Finding:
    return finding("jsonrpc.id_unsafe_integer", f"id {mid} is outside ±(2^53−1): peers that read JSON numbers as doubles "
                   "(JavaScript, many JSON libraries) change it and never match the response")


def classify_exact(raw: bytes, value: Any, cls: Classified) -> tuple[Any, Classified]:
    """orjson reads integers beyond 64 bits as floats: when ``value`` (parsed
    from ``raw``) has a float id, or a batch member has one, parse ``raw``
    again with exact integers and classify that. Returns (value, Classified)."""
    if type(cls.id) is not float and not (cls.kind is Kind.BATCH and any(type(m) is dict and type(m.get("id")) is float for m in value)):
        return value, cls
    exact = parse_exact(raw)
    if exact is None:
        return value, cls
    return exact[0], classify(exact[0])


def oddity_findings(oddities: int, direction: str) -> list[Finding]:
    """The findings of ``parse_json_full``'s flags (``jsonparse.NON_FINITE``, ``LONE_SURROGATE``)."""
    out = []
    if oddities & NON_FINITE:
        out.append(finding("jsonrpc.non_finite_number", f"{direction} message holds a number beyond any double (e.g. 1e400): "
                           "most JSON parsers fail or read it as infinity"))
    if oddities & LONE_SURROGATE:
        out.append(finding("jsonrpc.lone_surrogate", f"{direction} message holds a lone UTF-16 surrogate escape (e.g. \"\\ud83d\": "
                           "text cut inside an emoji): valid JSON grammar but not Unicode text; strict parsers (the Python "
                           "SDK's pydantic, orjson, serde_json) refuse the whole message (shown here as U+FFFD; an id keeps it, shown escaped)"))
    return out


def _short(v: Any, n: int = 60) -> str:
    s = repr(v)
    return cut(s, n)
