"""What a capture record holds, read the same way by filters, show and check
(pure, level 1): a record dict in (docs/capture-format.md), a value out.

``message_text(r)``: payload as text; ``message_json(r)``: parsed JSON;
``message_value(r)``: parsed JSON as replay/serve/diff want it (UNPARSED kept);
``tool_of(r)``: the tool of a ``tools/call``; ``record_findings(r)``.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.format import decode_bytes
from mcptap.model import UNPARSED
from mcptap.protocol.jsonparse import exact_json


def message_text(r: dict[str, Any]) -> str:
    """The record's payload as text: a message's exact bytes (decoded with
    replacement), a stderr record's data; "" for other records."""
    if "raw" in r:
        raw: str = r["raw"]
        return raw
    if "json" in r:
        return dumps(r["json"]).decode()
    if "data" in r and isinstance(r["data"], str):
        return r["data"]
    for k in ("raw_b64", "data_b64"):
        if k in r:
            return base64.b64decode(r[k]).decode("utf-8", "replace")
    return ""


def data_size(r: dict[str, Any]) -> int:
    """How many bytes a stderr record holds, as its end record counts them: ``data`` in
    UTF-8 or ``data_b64`` decoded (not the text ``message_text`` gives, where each
    undecodable byte became a 3-byte U+FFFD); 0 when it has neither or they are unreadable."""
    data = r.get("data")
    if isinstance(data, str):
        return len(data.encode("utf-8", "surrogatepass"))
    b64 = r.get("data_b64")
    if isinstance(b64, str):
        try:
            return len(base64.b64decode(b64))
        except ValueError:
            return 0
    return 0


#: an integer literal a recorded ``json`` may hold as a float (beyond 64 bits), or
#: an exponent a double cannot hold (``1e400``: null in a recorded ``json``)
_LONG_DIGITS = re.compile(r"[0-9]{19}|[0-9][eE][+-]?[0-9]{3}")


def message_value(r: dict[str, Any]) -> Any:
    """The JSON value of a message record with every integer exact: its
    ``json`` when that is the whole truth, else its raw bytes parsed
    (``jsonparse.exact_json``: an id or number beyond 64 bits, which orjson and
    hence a recorded ``json`` hold as a float, is read as the peer wrote it, a
    number beyond any double as ±infinity, which a recorded ``json`` holds as null).
    UNPARSED when the bytes are not JSON; None when the record has no payload."""
    raw = r.get("raw")
    if "json" in r and not (isinstance(raw, str) and _LONG_DIGITS.search(raw)):
        return r["json"]
    data = decode_bytes(r, "raw")
    if data is None:
        return r.get("json")
    return exact_json(data)


def message_json(r: dict[str, Any]) -> Any:
    """The parsed JSON of a message record (``message_value``), or None."""
    if "json" not in r and r.get("type") != "message":
        return None
    v = message_value(r)
    return None if v is UNPARSED else v


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
