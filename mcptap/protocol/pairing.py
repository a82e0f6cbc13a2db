"""Request/response correlation by (session, requester direction, id) — pure.

Sources: JSON-RPC 2.0 §5 (a response carries its request's id); spec basic/index
(ids unique per session in 2024-11-05 … 2025-11-25; in 2026-07-28 unique among
the sender's *outstanding* requests); basic/utilities/cancellation and progress.

Memory stays flat over long sessions: completed requests are remembered in a
bounded window (``DONE_WINDOW`` per table) for duplicate-response, late-cancel
and id-reuse detection; older ones are forgotten.
"""

from __future__ import annotations

from typing import Any

from mcptap.model import Direction, Finding, Severity
from mcptap.protocol.codes import finding
from mcptap.protocol.jsonrpc import id_key, json_type, loose_id_key, show_id
from mcptap.protocol.pending import DONE_WINDOW, SESSIONLESS, BoundedMap, Pending, report_once

__all__ = ["DONE_WINDOW", "SESSIONLESS", "BoundedMap", "Pairing", "Pending", "report_once"]

Key = tuple[Any, Direction, Any]
_PEER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


class Pairing:
    """The correlation table of one capture (all sessions).

    Every method returns findings (list[Finding]) and never raises on peer
    input. Directions are the *sender's* of the message being handled.
    """

    def __init__(self) -> None:
        self._pending: dict[Key, list[Pending]] = {}
        self._done = BoundedMap()
        self._tokens: dict[tuple[Any, Direction, Any], Pending] = {}
        self._done_tokens = BoundedMap()
        self._tasks: dict[tuple[Any, Any], Any] = {}
        #: stateless HTTP scopes (("exchange", n): see ``forget_scope``) -> their entries to forget, as (table, key, value)
        self._scoped = BoundedMap()
        #: the seq of the last request registered (-1: none)
        self.last_seq = -1

    # -- requests -------------------------------------------------------------
    def request(self, p: Pending, unique_per_session: bool) -> list[Finding]:
        """Register request ``p``. ``unique_per_session``: legacy revisions
        forbid reusing an id even after it was answered."""
        out: list[Finding] = []
        self.last_seq = p.seq
        i = p.id
        k = p.key = (p.session, p.direction, i if type(i) is int or type(i) is str else id_key(i))
        lst = self._pending.get(k)
        if lst:
            first = lst[0]
            out.append(finding("jsonrpc.duplicate_id_in_flight",
                               f"id {show_id(p.id)} already in flight from the {p.direction.sender} (request #{first.seq} {first.method})",
                               {"other_seq": first.seq}))
            lst.append(p)
        else:
            self._pending[k] = [p]
            if unique_per_session:
                prev = self._done.d.get(k)
                if prev is not None:
                    out.append(finding("jsonrpc.id_reused", f"id {show_id(p.id)} was already used by request #{prev.seq} ({prev.method}) in this session",
                                       {"other_seq": prev.seq}))
        if p.token is not None:
            tk = (p.session, p.direction, id_key(p.token))
            other = self._tokens.get(tk)
            if other is not None:
                out.append(finding("progress.duplicate_token", f"progress token {show_id(p.token)} is already used by active request #{other.seq}",
                                   {"other_seq": other.seq}))
            self._tokens[tk] = p
        return out

    def _remove(self, p: Pending, done: bool = True) -> None:
        k = p.key if p.key is not None and p.key[0] == p.session else (p.session, p.direction, id_key(p.id))
        lst = self._pending.get(k)
        if lst is not None:
            try:
                lst.remove(p)
            except ValueError:
                pass
            if not lst:
                del self._pending[k]
        if not done:
            if p.token is not None:
                tk = (p.session, p.direction, id_key(p.token))
                if self._tokens.get(tk) is p:
                    del self._tokens[tk]
            return
        self._done_add(self._done, k, p)
        if p.token is not None:
            self._token_done(p)

    def _done_add(self, table: BoundedMap, k: Key, p: Pending) -> None:
        table.add(k, p)
        if type(k[0]) is tuple:
            self._in_scope(k[0], table.d, k, p)

    def _in_scope(self, scope: Any, table: dict[Any, Any], k: Any, v: Any) -> None:
        held = self._scoped.get(scope)
        if held is None:
            self._scoped.add(scope, [(table, k, v)])
        else:
            held.append((table, k, v))

    def forget_session(self, session: Any) -> None:
        """The completed requests and progress tokens of ``session`` leave the
        done windows: a new session was given the same id (``lifecycle.start_over``),
        so its ids are not reuses. Open requests stay (reported at the end)."""
        for done in (self._done, self._done_tokens):
            for k in [k for k in done.d if k[0] == session]:
                del done.d[k]

    def forget_scope(self, scope: tuple[Any, ...]) -> None:
        """Stateless HTTP: the exchange whose ``scope`` (("exchange", n)) its
        requests were paired in has ended, so nothing can answer, cancel or
        reuse them any more: its completed requests and tokens leave the done
        windows (which then keep what sessions can still meet: a flood of
        stateless POSTs no longer pushes them out), and the progress tokens
        its answered task-creating requests kept alive (``keep_token``) expire.
        Open requests stay (reported at the end)."""
        for table, k, v in self._scoped.d.pop(scope, ()):
            if table.get(k) is v:
                del table[k]

    def _token_done(self, p: Pending) -> None:
        tk = (p.session, p.direction, id_key(p.token))
        if self._tokens.get(tk) is p:
            del self._tokens[tk]
        self._done_add(self._done_tokens, tk, p)

    def keep_token(self, p: Pending, task_id: str) -> None:
        """2025-11-25 tasks: the answered request ``p`` created task ``task_id``;
        its progress token stays valid until the task is terminal."""
        if p.token is None:
            return
        tk = (p.session, p.direction, id_key(p.token))
        self._tokens[tk] = p
        self._tasks[(p.session, task_id)] = tk
        if type(p.session) is tuple:
            self._in_scope(p.session, self._tokens, tk, p)
            self._in_scope(p.session, self._tasks, (p.session, task_id), tk)

    def release_task(self, session: Any, task_id: Any) -> None:
        """The task reached a terminal status: its progress token expires."""
        tk = self._tasks.pop((session, task_id), None)
        if tk is not None:
            p = self._tokens.pop(tk, None)
            if p is not None:
                self._done_add(self._done_tokens, tk, p)

    def complete(self, p: Pending) -> None:
        """Mark ``p`` answered (e.g. a batch rejected as a whole)."""
        self._remove(p)

    def withdraw(self, p: Pending) -> None:
        """``p`` never reached the receiver's JSON-RPC layer (HTTP redirected
        it): no longer pending, and neither its id nor its progress token count
        as used, so the client's re-send at the new URL is not a reuse."""
        self._remove(p, done=False)

    # -- responses ------------------------------------------------------------
    def response(self, session: Any, responder: Direction, rid: Any, exchange: Any = None) -> tuple[Pending | None, list[Finding]]:
        """Find and close the request answered by a response from ``responder``
        with id ``rid``. Returns (request or None, findings)."""
        requester = _PEER[responder]
        k = (session, requester, rid if type(rid) is int or type(rid) is str else id_key(rid))
        lst = self._pending.get(k)
        if lst:
            p = lst[0]
            if len(lst) == 1:
                # the common case, _remove inlined: p is stored under k (its session, direction and id key)
                del self._pending[k]
                if type(session) is tuple:
                    self._done_add(self._done, k, p)
                else:               # BoundedMap.add, inlined (once a response)
                    done = self._done.d
                    done.pop(k, None)       # (an id answered again: now the newest)
                    done[k] = p
                    if len(done) > self._done.limit:
                        done.popitem(last=False)
                if p.token is not None:
                    self._token_done(p)
                return p, []
            out: list[Finding] = []
            if len(lst) > 1:
                by_ex = [q for q in lst if exchange is not None and q.exchange == exchange]
                if by_ex:
                    p = by_ex[0]
                out.append(finding("jsonrpc.ambiguous_pairing",
                                   f"response id {show_id(rid)} while {len(lst)} requests with that id are in flight (#{', #'.join(str(q.seq) for q in lst)}); "
                                   f"paired with #{p.seq}"
                                   + (" by HTTP exchange" if by_ex else " (oldest)"),
                                   {"candidates": [q.seq for q in lst]}))
            self._remove(p)
            return p, out
        prev = self._done.get(k)
        if prev is not None:
            return None, [finding("jsonrpc.response_for_completed_id", f"request #{prev.seq} ({prev.method}) with id {show_id(rid)} was already answered",
                                  {"request_seq": prev.seq})]
        # rare path: "1" vs 1 — scan the open requests of that requester
        loose = loose_id_key(rid)
        ll = [q for (ses, d, _), lst in self._pending.items() if ses == session and d is requester
              for q in lst if loose_id_key(q.id) == loose]
        if ll:
            ll.sort(key=lambda q: q.seq)
            p = ll[0]
            self._remove(p)
            return p, [finding("jsonrpc.id_type_mismatch",
                               f"response id {show_id(rid)} ({json_type(rid)}) answers request #{p.seq} whose id is {show_id(p.id)} ({json_type(p.id)}): "
                               "ids must be identical; "
                               "strict clients never resolve this call",
                               {"request_id": p.id, "response_id": rid})]
        return None, [finding("jsonrpc.unmatched_response", f"response id {show_id(rid)} matches no request the {requester.sender} sent")]

    # -- cancellation and progress --------------------------------------------
    def is_open(self, session: Any, requester: Direction, rid: Any) -> bool:
        """Whether ``requester`` has a request with id ``rid`` open in ``session``."""
        return (session, requester, id_key(rid)) in self._pending

    def open_in_exchanges(self, requester: Direction, rid: Any) -> list[Pending]:
        """The open requests from ``requester`` with id ``rid`` in any stateless
        HTTP exchange scope (("exchange", n)), oldest first: a scan, for the
        rare message that names a request of another exchange."""
        k = id_key(rid)
        return sorted((p for (scope, d, i), lst in self._pending.items() if type(scope) is tuple and d is requester and i == k for p in lst),
                      key=lambda p: p.seq)

    def cancel(self, session: Any, sender: Direction, rid: Any) -> tuple[Pending | None, list[Finding]]:
        """notifications/cancelled from ``sender`` for its own request ``rid``."""
        k = (session, sender, id_key(rid))
        lst = self._pending.get(k)
        if lst:
            p = lst[0]
            if p.method == "initialize":
                return p, [finding("cancel.initialize_forbidden",
                                   f"notifications/cancelled targets initialize (request #{p.seq}): initialize MUST NOT be cancelled")]
            p.cancelled = True
            return p, [finding("cancel.request", f"request #{p.seq} ({p.method}) cancelled while in flight", {"request_seq": p.seq})]
        prev = self._done.get(k)
        if prev is not None:
            if prev.method == "initialize":
                return prev, [finding("cancel.initialize_forbidden",
                                      f"notifications/cancelled targets initialize (request #{prev.seq}): initialize MUST NOT be cancelled")]
            return prev, [finding("cancel.after_response", f"request #{prev.seq} ({prev.method}) was already answered (allowed race)",
                                  {"request_seq": prev.seq})]
        return None, [finding("cancel.unknown_request", f"no request with id {show_id(rid)} was issued by the {sender.sender}")]

    def progress(self, session: Any, sender: Direction, token: Any, value: Any) -> tuple[Pending | None, list[Finding]]:
        """notifications/progress from ``sender`` for a token its peer issued."""
        tk = (session, sender.peer, id_key(token))
        p = self._tokens.get(tk)
        if p is None:
            prev = self._done_tokens.get(tk)
            if prev is not None:
                return prev, [finding("progress.after_completion", f"progress for token {show_id(token)} after request #{prev.seq} ({prev.method}) completed")]
            return None, [finding("progress.unknown_token", f"progress token {show_id(token)} belongs to no active request from the {sender.peer.sender}")]
        out: list[Finding] = []
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if p.last_progress is not None and value <= p.last_progress:
                out.append(finding("progress.not_increasing", f"progress {value} after {p.last_progress} for token {show_id(token)}: MUST increase"))
            p.last_progress = value
        return p, out

    # -- inspection -------------------------------------------------------------
    def pending(self) -> list[Pending]:
        """All requests still awaiting a response, oldest first."""
        out = [p for lst in self._pending.values() for p in lst]
        out.sort(key=lambda p: p.seq)
        return out

    def lost_at_eof(self, session: Any) -> list[Finding]:
        """The server's stdout closed: requests of ``session`` the client is
        still waiting for will never be answered (each reported once; a
        cancelled request SHOULD stay unanswered, cancellation spec: not lost)."""
        lost = [p for p in self.pending() if p.direction is Direction.C2S and p.session == session and not p.reported and not p.cancelled
                and not p.in_gap and not p.deferred]
        return report_once(lost, "lifecycle.eof_with_pending_requests", f"server stdout closed with {len(lost)} request(s) unanswered: ")

    def never_answered(self, complete: bool) -> list[Finding]:
        """End of capture: every request still pending, not cancelled and not
        yet reported. ``complete=False`` (the capture was cut short): info, the
        answers may simply not have been recorded."""
        out = []
        for p in self.pending():
            if p.reported or p.cancelled or p.deferred:
                continue
            p.reported = True
            if complete:
                out.append(finding("jsonrpc.unanswered_request",
                                   f"request #{p.seq} {p.method} id={show_id(p.id)} from the {p.direction.sender} was never answered",
                                   p.describe()))
            else:
                out.append(finding("jsonrpc.unanswered_request",
                                   f"request #{p.seq} {p.method} id={show_id(p.id)} has no answer in the capture, which was cut short",
                                   p.describe(), severity=Severity.INFO))
        return out

    def rename_session(self, old: Any, new: Any) -> None:
        """Re-key every open entry of session ``old`` as ``new`` (HTTP: the
        Mcp-Session-Id is learnt from the initialize response)."""
        table = self._pending
        for k in [k for k in table if k[0] == old]:
            lst = table.pop(k)
            for p in lst:
                p.session = new
            table.setdefault((new,) + k[1:], []).extend(lst)
        for k in [k for k in self._tokens if k[0] == old]:
            self._tokens[(new,) + k[1:]] = self._tokens.pop(k)

