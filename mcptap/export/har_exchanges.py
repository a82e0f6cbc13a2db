"""The HTTP exchanges of a capture, as export/har.py turns them into HAR entries.

:func:`exchanges_of` reads an HTTP capture's records (after its header) and
returns one :class:`Exchange` per exchange the tap relayed (``http`` records
with ``event: request``), in request order, holding its request, response and
end records, the request body (bytes, and the ``t_us`` it was complete), the
response body (JSON bytes, an OAuth exchange's ``response_body`` bytes, or SSE events as ``(offset, seq, text)``, exact
bytes where the capture kept them, else rebuilt in the SDK layout; a body
mcptap could not decode, its ``response_body`` record with ``undecoded``, as
``raw``: the bytes still encoded), the
JSON-RPC messages it carried (summaries), its findings and the ``capture.gap``
findings of gap records seen while it was open, and the ``auth_rewrite`` records
of an OAuth exchange (what the tap changed on the way). Records of no known exchange
are skipped. Pure; raises nothing for odd records (missing fields default).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.format import decode_bytes
from mcptap.protocol.gap_pending import gap_finding


def _t(rec: dict[str, Any]) -> int:
    t = rec.get("t_us")
    return t if isinstance(t, int) else 0


def _message_bytes(rec: dict[str, Any]) -> bytes:
    raw = decode_bytes(rec, "raw")
    if raw is not None:
        return raw
    return dumps(rec.get("json")) + str(rec.get("eol", "")).encode("ascii")


class Exchange:
    """One HTTP exchange as collected from its records (module doc)."""

    __slots__ = ("request", "response", "end", "body", "body_t", "events", "messages", "findings", "rebuilt", "resp_body", "crlf",
                 "last_t", "gap", "gaps", "raw", "req_raw", "rewrites", "resp_truncated")

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.response: dict[str, Any] | None = None
        self.end: dict[str, Any] | None = None
        self.body: bytes | None = None
        self.body_t: int | None = None
        self.events: list[tuple[int, int, str]] = []      # (offset, seq, event text)
        self.messages: list[dict[str, Any]] = []
        self.findings: list[dict[str, Any]] = []
        self.rebuilt = False
        self.resp_body: bytes | None = None
        self.crlf = False           # the stream's lines end in CR LF (sse.crlf, flagged once per stream)
        self.last_t = _t(request)   # its latest record: where it ends when no end record says
        self.gap = False            # a recording gap cut it (end ``gap: true``, ``sse.cut: "gap"``)
        self.gaps: list[dict[str, Any]] = []    # capture.gap findings of the gap records seen while it was open
        self.raw: dict[str, Any] | None = None  # the response_body record of a body mcptap could not decode
        self.req_raw: dict[str, Any] | None = None  # the request_body record of a POST body mcptap could not decode
        self.rewrites: list[dict[str, Any]] = []    # its ``auth_rewrite`` records (what the tap changed of an OAuth exchange)
        self.resp_truncated: int | None = None      # a ``response_body`` kept only in part: the body's full size

    def saw(self, rec: dict[str, Any]) -> None:
        self.last_t = max(self.last_t, _t(rec))

    @property
    def eol(self) -> str:
        return "\r\n" if self.crlf else "\n"


def _sse_text(info: dict[str, Any], data: str | None, comments: Iterable[str] = (), eol: str = "\n") -> tuple[str, bool]:
    """An SSE event's text: the recorded bytes, or rebuilt in the SDK layout
    with ``eol`` line ends. Returns (text, rebuilt)."""
    raw = info.get("raw")
    if isinstance(raw, str):
        return raw, False
    lines = [f": {c}" if c else ":" for c in comments]
    if info.get("id") is not None:
        lines.append(f"id: {info['id']}")
    if info.get("event"):
        lines.append(f"event: {info['event']}")
    if data is not None:
        lines.extend(f"data: {d}" for d in data.split("\n"))
    if info.get("retry") is not None:
        lines.append(f"retry: {info['retry']}")
    return eol.join(lines) + eol + eol, True


def _crlf(rec: dict[str, Any]) -> bool:
    return any(isinstance(f, dict) and f.get("code") == "sse.crlf" for f in rec.get("findings") or ())


def _summary(rec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: rec[k] for k in ("seq", "dir", "kind", "id", "method", "pair", "latency_us") if k in rec}
    if rec.get("findings"):
        out["findings"] = rec["findings"]
    return out


def exchanges_of(records: Iterable[dict[str, Any]]) -> list[Exchange]:
    """The exchanges of an HTTP capture's records (after its header), in request order."""
    exchanges: dict[int, Exchange] = {}
    order: list[Exchange] = []
    for rec in records:
        typ = rec.get("type")
        if typ == "gap":
            f = gap_finding(rec).to_json() if not rec.get("findings") else rec["findings"][0]
            for ex in exchanges.values():
                if ex.end is None:
                    ex.gaps.append(f)
            continue
        if typ == "http":
            ex_id = rec.get("exchange")
            ev = rec.get("event")
            if ev == "request" and isinstance(ex_id, int):
                ex = exchanges[ex_id] = Exchange(rec)
                order.append(ex)
                ex.findings += rec.get("findings") or ()
                continue
            found = exchanges.get(ex_id) if isinstance(ex_id, int) else None
            if found is None:
                continue
            ex = found
            ex.saw(rec)
            ex.findings += rec.get("findings") or ()
            if ev == "response" and not rec.get("informational"):
                ex.response = rec
            elif ev == "end":
                ex.end = rec
                ex.gap |= rec.get("gap") is True
            elif ev == "request_body":
                body = decode_bytes(rec, "body")
                if body is not None:
                    ex.body = (ex.body or b"") + body
                    ex.body_t = rec.get("t_us")
                if isinstance(rec.get("undecoded"), str):
                    ex.req_raw = rec
            elif ev == "response_body" and isinstance(rec.get("undecoded"), str):
                ex.raw = rec
            elif ev == "response_body":
                # an OAuth exchange's body (discovery, registration, token): HTTP, not JSON-RPC, so no message record
                body = decode_bytes(rec, "body")
                if body is not None:
                    ex.resp_body = (ex.resp_body or b"") + body
                if isinstance(rec.get("truncated_from"), int):
                    ex.resp_truncated = rec["truncated_from"]
            elif ev == "auth_rewrite":
                ex.rewrites.append(rec)
            elif ev == "sse":
                info = rec.get("sse") or {}
                endpoint = rec.get("endpoint") or {}
                ex.crlf |= _crlf(rec)
                ex.gap |= info.get("cut") == "gap"
                text, rebuilt = _sse_text(info, endpoint.get("data") if endpoint else None, info.get("comments") or (), ex.eol)
                ex.rebuilt |= rebuilt
                ex.events.append((info.get("offset", 0), rec.get("seq", 0), text))
        elif typ == "message":
            tr = rec.get("transport") or {}
            ex_no = tr.get("exchange")
            found = exchanges.get(ex_no) if isinstance(ex_no, int) else None
            if found is None:
                continue
            ex = found
            ex.saw(rec)
            ex.messages.append(_summary(rec))
            if rec.get("dir") == "c2s":
                ex.body = (ex.body or b"") + _message_bytes(rec)
                ex.body_t = rec.get("t_us")
            elif isinstance(tr.get("sse"), dict):
                data = _message_bytes(rec).decode("utf-8", "replace")
                ex.crlf |= _crlf(rec)
                text, rebuilt = _sse_text(tr["sse"], data, (), ex.eol)
                ex.rebuilt |= rebuilt
                ex.events.append((tr["sse"].get("offset", 0), rec.get("seq", 0), text))
            else:
                ex.resp_body = (ex.resp_body or b"") + _message_bytes(rec)
    return order
