"""Requests a client sent again after the HTTP layer answered them (pure, level 3):
what ``replay`` does not send and ``diff`` does not compare.

Over HTTP a POST can be answered without a JSON-RPC response: refused (401/403/407
before the client re-authorises, OAuth step-up's 403 ``insufficient_scope``, 408,
429…: ``http.request_refused``) or redirected (``http.redirected``). A client then
sends the same request again, same id and method, and that re-send is the exchange
the server answered. The first one is not an exchange of the session: replaying it
runs the call twice against a server that behaves as recorded (the live server,
given the token the client ended with, answers both), and a diff against a replay
that sent it once reports it missing.

    book = Resends()
    for how, seqs in answered_at_http(end_record): …      # what an ``end`` record says
    book.held(key, rid, method, session, how)            # such a request (key: the caller's)
    for key, how in book.resent(rid, method, session): … # a later request: whom it re-sends

A re-send is the next request of the same method and id in the same session, or in
any session when the first had none yet (an ``initialize`` refused 401: its re-send
gets the session). The tap's own refusals never reached the server: their ``end.how``
is one of ``records.events.TAP_REFUSED`` (the one list of them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: finding code -> the word for how the HTTP layer answered the request
_ANSWERED = {"http.request_refused": "refused", "http.redirected": "redirected"}


def answered_at_http(rec: dict[str, Any]) -> Iterator[tuple[str, list[int]]]:
    """For an ``http`` ``end`` record: (how, request seqs) for each finding saying its
    POST's requests were answered at HTTP level (``"refused 403"``, ``"redirected 307"``)."""
    for f in rec.get("findings") or ():
        code = f.get("code") if isinstance(f, dict) else None
        word = _ANSWERED.get(code) if isinstance(code, str) else None
        data = f.get("data") if word is not None else None
        if word is None or not isinstance(data, dict):
            continue
        seqs = [s for s in data.get("requests") or () if type(s) is int]
        status = data.get("status")
        if seqs:
            yield (f"{word} {status}" if type(status) is int else word), seqs


def _hid(v: Any) -> Any:
    return v if isinstance(v, (int, str)) else repr(v)


class Resends:
    """Requests answered at HTTP level, waiting for their re-send (module docstring).
    Memory: one entry per such request not yet re-sent."""

    def __init__(self) -> None:
        self._held: dict[tuple[Any, Any], list[tuple[Any, Any, str]]] = {}

    def held(self, key: Any, rid: Any, method: Any, session: Any, how: str) -> None:
        """Request ``key`` (the caller's name for it: a step, an exchange index), id
        ``rid``, was answered at HTTP level ``how``."""
        self._held.setdefault((_hid(rid), method), []).append((key, session, how))

    def resent(self, rid: Any, method: Any, session: Any) -> list[tuple[Any, str]]:
        """A request just sent: the (key, how) of each held request it sends again
        (removed from the book)."""
        waiting = self._held.get((_hid(rid), method)) if self._held else None
        if not waiting:
            return []
        out = [(k, how) for k, s, how in waiting if s is None or s == session]
        if out:
            left = [w for w in waiting if not (w[1] is None or w[1] == session)]
            if left:
                self._held[(_hid(rid), method)] = left
            else:
                del self._held[(_hid(rid), method)]
        return out
