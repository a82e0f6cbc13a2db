"""Live Message → a small capture-record dict holding only what spans read
(``mcptap.export.spans.SpanBuilder``): what the recorder's live export hands
to its export process (mcptap/otel/). Pure; tests check that digests give the
very spans whole records give."""

from __future__ import annotations

import re
from typing import Any

from mcptap.capture.format import annotation_record
from mcptap.model import Message

_SURROGATE = re.compile("[\ud800-\udfff]")
_PARAM_KEYS = ("name", "uri", "requestId", "progress", "total", "message", "reason")


def _slim(v: Any) -> Any:
    """The parts of a message value spans read (params' name/uri/progress…,
    error code and message, a tool result's isError)."""
    if isinstance(v, list):
        return [_slim(x) for x in v]
    if not isinstance(v, dict):
        return None
    out: dict[str, Any] = {}
    jv = v.get("jsonrpc")
    if isinstance(jv, str) and jv != "2.0":
        out["jsonrpc"] = jv
    p = v.get("params")
    if isinstance(p, dict):
        # a lone surrogate (a cancel's requestId "\udfff", kept exact by the parse) as U+FFFD, as the
        # record's id holds it: the export process reads digests with orjson, which refused the line
        out["params"] = {k: _SURROGATE.sub("\ufffd", p[k]) if isinstance(p[k], str) else p[k]
                         for k in _PARAM_KEYS if k in p and (p[k] is None or isinstance(p[k], (str, int, float, bool)))}
    e = v.get("error")
    if isinstance(e, dict):
        out["error"] = {k: e[k] for k in ("code", "message") if k in e and isinstance(e[k], (str, int, float, bool))}
    r = v.get("result")
    if isinstance(r, dict) and r.get("isError") is True:
        out["result"] = {"isError": True}
    return out


def digest(msg: Message) -> dict[str, Any]:
    """A small record holding what spans need of a live Message (the payload
    reduced by ``_slim``): what the recorder hands to the export process."""
    rec = annotation_record(msg, findings=True)
    rec["json"] = _slim(msg.value)
    if msg.revision is not None:
        rec["rev"] = msg.revision
    if msg.link is not None:
        rec["link"] = msg.link
    ex = (msg.transport or {}).get("exchange")
    if ex is not None:
        rec["transport"] = {"exchange": ex}
    if msg.members is not None:
        rec["members"] = [{"index": m.index, "kind": m.kind._value_, "id": _SURROGATE.sub("\ufffd", m.id) if isinstance(m.id, str) else m.id,
                           "method": m.method, "pair": m.pair} for m in msg.members]
    return rec
