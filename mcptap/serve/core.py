"""The serving core (pure, sans-IO, level 3): client messages in, the
recorded server's messages out.

    core = ServeCore(script, strict=False, latency=False, speed=1.0)
    live = core.open()                       # one live session (a stdio connection, an HTTP session)
    outs = core.receive(live, value)         # value: one parsed JSON-RPC message or a batch
    for out in outs: ...                     # send out.value after out.delay_s, on out.via

A live request is matched (``compare.match.Matcher``: method and normalised
params, FIFO among equals, the live session's recorded session first) to a
recorded one; its recorded answer gets the live id, its progress
notifications the live progress token, and everything else the server sent
because of it (log messages, server requests, list_changed) comes out in
recorded order. A live answer to a replayed server request releases what the
server sent after the recorded answer. A request whose recorded answers are used up
gets the last again (not ``strict``), without the logs and other notifications it
was sent with the first time. ``initialize`` and ``server/discover``
are answered with the recorded result whatever client info arrives, and bind
the live session to that recorded session; when the client's protocol revision is
not the one those answers were recorded in, ``say`` is told once (a stderr line).

A scrubbed capture's requests hold placeholders where the live ones hold secrets: ``prepare``
(``redact.live.live_redaction``) redacts live params the same way before they are matched.

An invalid request (``serve/wire.py``) gets -32600 (params an array -32602), an invalid
notification nothing, unless the recorded server answered a request invalid that way.

A request with no recorded answer gets an error: -32601 when the capture has
no request of that method, -32602 saying the recorded answers are used up when
(``strict``) each recorded one was given already, -32602 naming the method otherwise (``ping`` is
always answered ``{}``); its :class:`Out` carries a ``serve.no_recorded_answer``
finding for the mock's own capture.

A server line that is not a message (a banner, a blank line) comes out at its place as its
recorded bytes (``Out.raw``); a server's batch with the live ids of the requests it answers.

Timing: ``delay_s`` is 0 unless ``latency`` (then the recorded delay after the
triggering client message, divided by ``speed``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mcptap.compare.mask import Masker
from mcptap.compare.match import HANDSHAKE_METHODS, REUSED, Matcher
from mcptap.escape import escape_controls
from mcptap.protocol.lifecycle import META_VERSION
from mcptap.serve.live import LiveSession, Out
from mcptap.serve.script_http import STREAM_END
from mcptap.serve.script_model import Emission, Recorded, Script
from mcptap.serve.unanswered import no_answer
from mcptap.serve.wire import ID_BEYOND, defect, hkey, rejection


def _meta_version(params: Any) -> Any:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_VERSION) if isinstance(meta, dict) else None


class ServeCore:
    """Play ``script``'s server side (see module docstring)."""

    def __init__(self, script: Script, strict: bool = False, latency: bool = False, speed: float = 1.0,
                 masker: Masker | None = None, prepare: Callable[[Any], Any] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.script = script
        #: told once (a line for stderr) when a client's protocol revision is not the capture's
        self.say = say
        self._told_revision = False
        #: live params as the capture would hold them (a scrubbed capture: redacted with its rules and key,
        #: ``redact.live``), for matching only
        self.prepare = prepare
        self.latency = latency
        #: end a request's event stream where the recorded server ended it without the answer
        #: (``Out.ends``): set by the HTTP mock, the one transport with such streams
        self.stream_ends = False
        self.speed = speed if speed > 0 else 1.0
        self.requests: Matcher[Recorded] = Matcher(masker, strict=strict)
        self.notifications: Matcher[Recorded] = Matcher(masker, strict=strict)
        self.lives: list[LiveSession] = []
        for s in script.sessions:
            for r in s.items:
                if r.kind == "request" and r.method is not None:
                    self.requests.add(r.method, r.params, r, s.index)
                elif r.kind == "notification" and r.method is not None:
                    self.notifications.add(r.method, r.params, r, s.index)
        self._batch_members(script)

    def _batch_members(self, script: Script) -> None:
        # a recorded batch: each member request is answered by the member of the recorded answer batch
        for s in script.sessions:
            for r in s.items:
                if r.kind != "batch" or not isinstance(r.value, list):
                    continue
                answers = {hkey(v.get("id")): v for e in r.emits if isinstance(e.value, list) for v in e.value if isinstance(v, dict)}
                for item in r.value:
                    if isinstance(item, dict) and isinstance(item.get("method"), str) and "id" in item:
                        ans = answers.get(hkey(item["id"]))
                        sub = Recorded(r.seq, "request", item["method"], item, s.index, r.t_us, status=r.status, mode=r.mode, ending=r.ending)
                        if ans is not None:
                            sub.emits.append(Emission(r.seq, ans, "response", 0, pair=r.seq))
                        self.requests.add(item["method"], item.get("params"), sub, s.index)

    def open(self) -> LiveSession:
        """A new live session; server messages recorded before the first client
        message are emitted when it arrives (``opening``)."""
        live = LiveSession()
        self.lives.append(live)
        return live

    @property
    def unanswered(self) -> list[str]:
        """The requests of every live session so far that had no recorded answer (one line
        each, the session's order: ``asked(...)`` and why), for the end-of-session summary."""
        return [u for live in self.lives for u in live.unanswered]

    def opening(self, live: LiveSession, index: int = 0) -> list[Out]:
        """Server messages recorded before any client message of session ``index``."""
        if index >= len(self.script.sessions):
            return []
        return self._expand(self.script.sessions[index].opening, live, None)

    # -- incoming ---------------------------------------------------------------------
    def receive(self, live: LiveSession, value: Any) -> list[Out]:
        """One parsed client message (or a batch: its members one by one); ``live.matched``
        then holds the recorded client messages it was matched with."""
        live.matched = []
        return self._receive(live, value)

    def _receive(self, live: LiveSession, value: Any) -> list[Out]:
        if isinstance(value, list):
            out: list[Out] = []
            for v in value:
                out.extend(self._receive(live, v))
            return out
        bad = self.invalid(value)
        if bad is not None or not isinstance(value, dict):
            return bad or []
        method = value.get("method")
        if isinstance(method, str):
            if "id" in value:
                return self._request(live, method, value)
            return self._notification(live, method, value)
        if "id" in value and ("result" in value or "error" in value):
            seq, context, again = live.waiting.pop(hkey(value["id"]), (None, None, False))
            answer = self.script.answer_to.get(seq) if seq is not None else None
            if answer is not None:
                live.matched.append(answer)
            # what the server sent after the answer continues the request the server request
            # was sent for (a tool asking twice in a row): its stream, as a real server relates it
            return self._expand(answer.emits, live, context, again, answer.seq) if answer is not None else []
        return []

    def invalid(self, value: Any) -> list[Out] | None:
        """None when ``value`` (one message, not a batch) is a valid request, notification or
        answer, or is invalid in a way the recorded server answered (``Script.answered_defects``:
        the mock does as it did); else its error (``wire.rejection``), or [] for a notification."""
        why = defect(value)
        if why is None or why in self.script.answered_defects:
            return None
        err = rejection(value, why)
        return [] if err is None else [Out(err, answers=err["id"], request=err["id"], rejected=True)]

    def _request(self, live: LiveSession, method: str, msg: dict[str, Any]) -> list[Out]:
        lid = msg["id"]
        if type(lid) is float and not math.isfinite(lid):
            # an id such as 1e400 (read as infinity): no answer could carry it back, whatever the capture shows
            return [Out({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": ID_BEYOND}}, rejected=True)]
        params = msg.get("params")
        item, how = self.requests.take(method, self.prepare(params) if self.prepare else params, live.group)
        if item is None:
            return [no_answer(self.requests, live, method, lid, self.prepare(params) if self.prepare else params)]
        live.matched.append(item)
        if live.group is None or method in HANDSHAKE_METHODS:
            live.group = item.group
        live.live_ids[item.seq] = lid
        if not self._told_revision:
            self._revisions(method, params, item)
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            live.tokens[item.seq] = meta["progressToken"]
        else:
            live.tokens.pop(item.seq, None)
        out = self._expand(item.emits, live, lid, how == REUSED, item.seq)
        for o in out:
            if o.answers == lid:
                o.mode, o.status = item.mode, item.status
        return out

    def _revisions(self, method: str, params: Any, item: Recorded) -> None:
        """Say once when the client's protocol revision (``initialize``'s offer, else a
        2026-07-28 request's ``_meta``) is not the one the capture's answers were given in
        (the recorded ``initialize`` answer's, else the recorded request's ``_meta``)."""
        mine = theirs = None
        if method == "initialize" and isinstance(params, dict):
            mine = params.get("protocolVersion")
            answer = next((e.value for e in item.emits if e.pair == item.seq and isinstance(e.value, dict)), None)
            result = answer.get("result") if isinstance(answer, dict) else None
            theirs = result.get("protocolVersion") if isinstance(result, dict) else None
        else:
            mine = _meta_version(params)
            theirs = _meta_version(item.params) if mine is not None else None
        if not isinstance(mine, str) or not isinstance(theirs, str):
            return
        self._told_revision = True
        if mine != theirs and self.say is not None:
            self.say(f"the capture's protocol revision is {escape_controls(theirs)}, the client's is {escape_controls(mine)}: "
                     f"it gets the answers recorded in {escape_controls(theirs)}")

    def _notification(self, live: LiveSession, method: str, msg: dict[str, Any]) -> list[Out]:
        params = msg.get("params")
        if method == "notifications/cancelled" and isinstance(params, dict) and "requestId" in params:
            live.cancelled.add(hkey(params["requestId"]))
            released = self._cancelled(live, params["requestId"])
            if released is not None:
                return released
        item, how = self.notifications.take(method, self.prepare(params) if self.prepare else params, live.group)
        if item is not None:
            live.matched.append(item)
        if item is None or how == "reused" or item.cancels is not None:
            return []                                 # only the recorded ones trigger what followed them
        return self._expand(item.emits, live, None, cause=item.seq)

    def _cancelled(self, live: LiveSession, lid: Any) -> list[Out] | None:
        """What followed the recorded cancel of the request live id ``lid`` stands for
        (matched by that request, as the cancel names the live id, not the recorded
        one); None when the recording has no cancel of it."""
        key = hkey(lid)
        seqs = [s for s, v in live.live_ids.items() if hkey(v) == key]
        cancel = self.script.cancel_of.get(max(seqs)) if seqs else None
        if cancel is None:
            return None
        if cancel.seq in live.released:
            return []
        live.released.add(cancel.seq)
        out = self._expand(cancel.emits, live, None, cause=cancel.seq)
        for o in out:
            o.request = None                          # sent because of the cancel: not dropped by it
        return out

    # -- outgoing ---------------------------------------------------------------------
    def _expand(self, emits: list[Emission], live: LiveSession, trigger: Any, again: bool = False, cause: int | None = None) -> list[Out]:
        """The live form of ``emits`` (sent because of the client message whose live id, if a
        request, is ``trigger``, and whose recorded seq is ``cause``). ``again``: the request's recorded answer was given before
        (the recorded ones are used up): its answer, its own progress and the server requests
        it needs answered, but not the logs and other notifications the client was told already."""
        out = []
        answered: set[Any] = set()                   # live ids whose response is already in ``out``
        for e in emits:
            if again and e.kind == "notification" and e.link is None:
                continue
            if e.kind == STREAM_END and e.stream == "get":
                if self.stream_ends:             # the GET stream this message made the recorded server end (via None)
                    out.append(Out(None, e.delay_us / 1e6 / self.speed if self.latency else 0.0, None, seq=e.seq, cause=cause, ends=e.how))
                continue
            if e.kind == STREAM_END:
                via = live.live_ids.get(e.opener) if e.opener is not None and self.stream_ends else None
                if via is not None:              # only the stream of a request the live client sent ends
                    delay = e.delay_us / 1e6 / self.speed if self.latency else 0.0
                    out.append(Out(None, delay, via, seq=e.seq, cause=cause, ends=e.how))
                continue
            value = e.value
            answers = request = None
            if e.members and isinstance(value, list):
                value, answers = _batch(value, e.members, live)
                if not value:
                    continue                          # the live client sent none of the requests it answers
                request = answers
            elif e.pair is not None and isinstance(value, dict):
                if e.pair not in live.live_ids:
                    continue                          # the live client never sent that request
                answers = request = live.live_ids[e.pair]
                value = {**value, "id": answers}
            elif e.link is not None and isinstance(value, dict):
                if value.get("method") == "notifications/progress":
                    token = live.tokens.get(e.link)
                    if token is None:
                        continue                      # the live request asked for no progress
                    value = {**value, "params": {**(value.get("params") or {}), "progressToken": token}}
                request = live.live_ids.get(e.link)
            via = None
            if e.stream != "get":
                via = live.live_ids.get(e.opener) if e.opener is not None else None
                if via is None:
                    # not recorded over HTTP: the request it was sent for (a server request answered
                    # by the client continues it); once that request's response is out, its stream has
                    # ended and what the server sent later goes to the standalone one
                    via = request if request is not None else trigger
                    if via is not None and answers is None and hkey(via) in answered:
                        via = None
            if answers is not None:
                answered.add(hkey(answers))
            if isinstance(value, dict) and "method" in value and "id" in value:
                live.waiting[hkey(value["id"])] = (e.seq, via, again)
            delay = e.delay_us / 1e6 / self.speed if self.latency else 0.0
            out.append(Out(value, delay, via, answers, request, raw=e.raw, seq=e.seq, cause=cause, event_id=e.event_id))
        return out


def _batch(value: list[Any], members: dict[int, int], live: LiveSession) -> tuple[list[Any], Any]:
    """A recorded batch of the server's: each member that answers a request with the live id,
    those answering a request the live client never sent left out; and the first live id answered."""
    out, first = [], None
    for i, m in enumerate(value):
        seq = members.get(i)
        if seq is not None and isinstance(m, dict):
            if seq not in live.live_ids:
                continue
            m = {**m, "id": live.live_ids[seq]}
            first = m["id"] if first is None else first
        out.append(m)
    return out, first
