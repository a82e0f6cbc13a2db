"""Cross-exchange HTTP findings (pure): retries after 405, stream resumption
(Last-Event-ID), requests sent before the acknowledgement of
``notifications/initialized``. ``HttpRules`` keeps, per session
(Mcp-Session-Id, or None), what earlier exchanges showed; the per-exchange
rules are ``http_rules.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.model import Finding
from mcptap.protocol.codes import finding
from mcptap.protocol.http_fields import header, shown
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.jsonrpc import show_id


@dataclass(slots=True)
class _SessionMemory:
    refused_get: set[str] = field(default_factory=set)    # paths answered 405 to a GET
    retried_flagged: bool = False
    broken: dict[int, dict[str, Any]] = field(default_factory=dict)   # exchange -> stream facts
    initialized_open: set[int] = field(default_factory=set)           # exchanges carrying notifications/initialized


class HttpRules:
    """Findings that need more than one exchange (retries, resumption, the
    initialized-ack race). Keyed by session (Mcp-Session-Id, or None)."""

    def __init__(self) -> None:
        self._s: dict[Any, _SessionMemory] = {}

    def _m(self, session: Any) -> _SessionMemory:
        m = self._s.get(session)
        if m is None:
            m = self._s[session] = _SessionMemory()
        return m

    def on_request(self, exchange: int, ex: Exchange) -> list[Finding]:
        m = self._m(ex.session)
        out: list[Finding] = []
        path = ex.target.split("?", 1)[0]
        if ex.method == "GET":
            if path in m.refused_get and not m.retried_flagged:
                m.retried_flagged = True
                out.append(finding("http.get_retried_after_405", f"GET {path} again after the server answered 405 (no GET stream is offered)"))
            last = header(ex.req_headers, "last-event-id")
            if last is not None:
                src = next((e for e, b in m.broken.items() if last in b["ids"]), None)
                out.append(finding("http.stream_resumed", f"GET with Last-Event-ID {shown(last, ex.clear)!r}"
                                   + (f" continues exchange {src}'s stream" if src is not None else ""),
                                   {"last_event_id": shown(last, ex.clear), **({"resumes_exchange": src} if src is not None else {})}))
                if src is not None:
                    m.broken.pop(src, None)
            elif m.broken:
                src, b = next(iter(m.broken.items()))
                pend = b.get("pending") or []
                out.append(finding("http.resume_without_last_event_id",
                                   f"reconnect after exchange {src}'s stream broke, without Last-Event-ID"
                                   + (f": request(s) {', '.join(show_id(p) for p in pend)} cannot be redelivered" if pend else ""),
                                   {"broken_exchange": src}))
                m.broken.clear()
        if ex.method == "POST" and "notifications/initialized" in ex.methods:
            m.initialized_open.add(exchange)
        elif ex.method == "POST" and ex.has_request and m.initialized_open:
            out.append(finding("lifecycle.request_before_initialized_ack",
                               f"request sent before the acknowledgement of notifications/initialized (exchange {min(m.initialized_open)}): "
                               "allowed, but the server may see it first"))
        return out

    def on_response(self, exchange: int, ex: Exchange) -> None:
        m = self._m(ex.session)
        m.initialized_open.discard(exchange)
        if ex.method == "GET" and ex.status == 405:
            m.refused_get.add(ex.target.split("?", 1)[0])

    def on_end(self, exchange: int, ex: Exchange) -> None:
        self._m(ex.session).initialized_open.discard(exchange)

    def stream_broken(self, exchange: int, session: Any, ids: list[str], pending: list[Any]) -> None:
        """An SSE stream lost its connection before it ended (resumable if it had ids)."""
        if ids:
            self._m(session).broken[exchange] = {"ids": set(ids), "pending": pending}

    def session_renamed(self, old: Any, new: Any) -> None:
        if old in self._s and new not in self._s:
            self._s[new] = self._s.pop(old)
