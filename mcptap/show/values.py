"""How ``mcptap show`` reads and words a record's values (level 3): ids,
methods and tool names as the peer wrote them (a number beyond any double, a
lone surrogate: exact from the raw bytes), durations, cut and escaped text, and
whether a response is a tool's error. Used by the timeline, the summary and the
HTML report (show/render.py, show/summary.py, show/html.py).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

from mcptap.capture.fields import message_json, message_text, tool_of
from mcptap.escape import escape_controls
from mcptap.filters.exact import exact_field, exact_tool
from mcptap.protocol.excerpt import clip
from mcptap.protocol.jsonrpc import show_id
from mcptap.records.message import exact_id

#: ``style(text, role)``: text styled for its role (a terminal's colours; ``plain``: as it is)
Style = Callable[[str, str], str]
_SURROGATE = re.compile("[\ud800-\udfff]")


def plain(text: str, role: str) -> str:
    return text


def fmt_us(us: int | float | None) -> str:
    """A duration in µs as ``850µs``, ``35.0ms`` or ``2.40s``."""
    if us is None:
        return "?"
    if us < 1000:
        return f"{int(us)}µs"
    if us < 1_000_000:
        return f"{us / 1000:.1f}ms"
    return f"{us / 1e6:.2f}s"


def shorten(s: str, n: int) -> str:
    """``s`` with its control characters escaped (mcptap.escape), cut to ``n`` characters."""
    s = escape_controls(s)
    return s if len(s) <= n else clip(s, n - 1) + "…"


def id_text(v: Any) -> str:
    """An id as JSON text, as finding messages show it (``jsonrpc.show_id``)."""
    return show_id(v)


def record_id(rec: dict[str, Any]) -> Any:
    """The id of a message record as the peer wrote it: a number beyond any
    double (``1e400``) is null in the record's ``id``, ±infinity in its raw
    text (``message_json``); a lone surrogate is U+FFFD there, exact in the
    raw text (``records.message.exact_id``)."""
    v = rec.get("id")
    if type(rec.get("exact")) is dict:          # a batch member's view (filters.members)
        return exact_field(rec, "id")
    if (v is None or type(v) is str and "\ufffd" in v) and "raw" in rec:
        m = message_json(rec)
        if isinstance(m, dict):
            return m.get("id") if v is None else exact_id(v, m)
    return v


def method_of(rec: dict[str, Any]) -> Any:
    """A message record's method as the peer wrote it: one with a lone surrogate
    (``tools/x\\ud800``) is U+FFFD in the record, exact in its raw bytes
    (``records.message.exact_payload``) or a batch member view's ``exact``
    (``filters.exact``); views escape it (``\\ud800``)."""
    return exact_field(rec, "method")


def lossy(v: Any) -> Any:
    """``v`` with each lone surrogate as U+FFFD (a record's form of a string, which strict JSON readers take)."""
    return _SURROGATE.sub("\ufffd", v) if type(v) is str and not v.isprintable() else v


def tool_name(rec: dict[str, Any]) -> str | None:
    """``tool_of(rec)``, a lone surrogate in it exact (as ``method_of``)."""
    return exact_tool(rec, tool_of(rec))


def is_tool_error(rec: dict[str, Any], is_tool: bool) -> bool:
    """Whether ``rec`` is a tool's error: a response (``is_tool``: to a ``tools/call``) whose result has ``isError: true``."""
    if not is_tool or rec.get("kind") != "response":
        return False
    v = message_json(rec)
    res = v.get("result") if isinstance(v, dict) else None
    return isinstance(res, dict) and res.get("isError") is True


#: a byte that is not UTF-8 in repr() of text decoded with ``surrogateescape`` (``\\udcff``),
#: not preceded by an escaped backslash (a peer's literal ``\\udcff`` text reads ``\\\\udcff``)
_BYTE_IN_REPR = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")


def bytes_repr(rec: dict[str, Any], strip: str = "\r\n") -> str:
    """repr() of a record's payload text (a non-JSON line, stderr) with each byte that is
    not UTF-8 written ``\\xff``, as every other byte the view escapes (``\\x1b``), where
    ``message_text``'s U+FFFD lost it; ``strip``: the line end taken off first. Pure."""
    for k in ("raw_b64", "data_b64"):
        if k in rec and "raw" not in rec and "data" not in rec:
            try:
                text = base64.b64decode(rec[k]).decode("utf-8", "surrogateescape")
            except ValueError:
                break
            return _BYTE_IN_REPR.sub(r"\1\\x\2", repr(text.rstrip(strip)))
    return repr(message_text(rec).rstrip(strip))
