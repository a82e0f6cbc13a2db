"""The serve script (pure, level 3): a capture's server side, ready to play.

``build_script(header, records) -> Script``; ``script_from_path(path)``
streams a capture file (raises CaptureReadError).

Each recorded session (HTTP ``Mcp-Session-Id``; on stdio a new segment starts
at every ``initialize`` after the first) becomes a :class:`SessionScript`: its
client messages in order (:class:`Recorded`), each with the server messages
(:class:`Emission`) the recording shows the server sent *because of* it, with
the recorded delay after it. The anchor of a server message is:

* for a response (or a progress / cancel notification) to request R: R, or the
  client's latest answer to a server request if that came after R (a tool that
  asked the client for sampling answered once it had the answer), or the
  client's ``notifications/cancelled`` of R if that came before it (an answer
  the server gave only once the client had cancelled waits for the live cancel);
* for anything else (log messages, list_changed, server requests): the request
  it most plausibly belongs to — over HTTP the still-open request whose POST
  stream carried it; else, when the latest client message before it was a
  request, the latest-opened request that was still open then and does real
  work (not ``ping``, a ``*/list``, the handshake or a subscription: a log
  written while ``tools/call`` runs is that call's, not the ``tools/list`` an
  SDK client sends between calls), with the same later-answer and cancel rules
  as its response; else the latest client message before it (an answer to a
  server request, a notification);
* nothing (``SessionScript.opening``): server messages before the client's first.

HTTP facts kept per client message: the recorded status of its POST,
whether the answer came as JSON or as an SSE stream, and how the POST ended when it
carried no JSON-RPC answer (``Recorded.ending``: serve/script_http.py); per server message the
stream it travelled on (the POST of which recorded request, or the GET
stream). ``Script`` also says whether sessions had ids, whether GET streams
were served, and whether the capture is the legacy HTTP+SSE transport (those from the ``http``
records: serve/script_facts.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.capture.fields import message_value
from mcptap.capture.reader import CaptureStream
from mcptap.model import UNPARSED
from mcptap.reannotate_views import annotated
from mcptap.records.message import message_bytes
from mcptap.records.refusals import mark_refusals, needs_marking, refused_how
from mcptap.serve.script_facts import ExchangeFacts
from mcptap.serve.script_fields import NOT_MESSAGES, batch_members, chore, dict_field, id_key, int_field, key_field
from mcptap.serve.script_model import Emission, Recorded, Script, SessionScript
from mcptap.serve.wire import defect


class _Session:
    __slots__ = ("script", "by_seq", "by_id", "cancelled", "last_c2s", "last_answer", "open", "opening_t")

    def __init__(self, script: SessionScript) -> None:
        self.script = script
        self.by_seq: dict[int, Recorded] = {}
        self.by_id: dict[Any, Recorded] = {}         # recorded client id -> its latest request
        self.cancelled: dict[int, Recorded] = {}     # request seq -> the client's cancel of it
        self.last_c2s: Recorded | None = None
        self.last_answer: Recorded | None = None
        self.open: dict[int, Recorded] = {}          # requests not answered yet, in the order they came
        self.opening_t = 0                           # t_us of the first server message before any client message


class _Builder(ExchangeFacts):
    def __init__(self, header: dict[str, Any]) -> None:
        super().__init__(header)
        self.sessions: dict[Any, _Session] = {}
        self.stdio_current: _Session | None = None
        self.stdio_initialized = False

    def _new(self, key: Any) -> _Session:
        s = _Session(SessionScript(len(self.script.sessions), key))
        self.script.sessions.append(s.script)
        return s

    def _session(self, rec: dict[str, Any], value: Any) -> _Session:
        if self.script.transport != "stdio":
            key = rec.get("session")
            s = self.sessions.get(key)
            if s is None:
                s = self.sessions[key] = self._new(key)
            return s
        starts = rec.get("dir") == "c2s" and isinstance(value, dict) and value.get("method") == "initialize" and "id" in value
        if self.stdio_current is None or (starts and self.stdio_initialized):
            self.stdio_current = self._new(None)
            self.stdio_initialized = False
        if starts:
            self.stdio_initialized = True
        return self.stdio_current

    def message(self, rec: dict[str, Any]) -> None:
        value = message_value(rec)
        raw = None
        if rec.get("dir") != "c2s" and (value is UNPARSED or rec.get("kind") in NOT_MESSAGES):
            # what the server wrote that is not a message is replayed byte for byte (a test
            # double reproduces the fault the capture caught); a cut last line gets its newline
            raw = message_bytes(rec)
            if not raw:
                return
            raw, value = raw if raw.endswith(b"\n") else raw + b"\n", None
        elif value is None:
            return
        facts = self.exchanges.get(key_field(dict_field(rec.get("transport")).get("exchange")), {})
        if rec.get("dir") != "c2s" and facts.get("method") in ("GET", "DELETE") and facts.get("ctype") != "text/event-stream":
            # a GET's or DELETE's JSON body (an SDK server's 400 error object): its answer's body, sent with it
            # (Script.kind_answers), no message of the session
            facts["body"] = facts.get("body", b"") + (message_bytes(rec) or b"")
            return
        s = self._session(rec, value)
        if rec.get("dir") == "c2s":
            self._c2s(s, rec, value)
        else:
            self._s2c(s, rec, value, raw)

    def _c2s(self, s: _Session, rec: dict[str, Any], value: Any) -> None:
        kind = rec.get("kind")
        tr = dict_field(rec.get("transport"))
        exchange = key_field(tr.get("exchange"))
        if kind in ("response", "error"):
            r = Recorded(rec["seq"], "answer", None, value, s.script.index, rec.get("t_us", 0), answers=int_field(rec.get("pair")), exchange=exchange)
            if r.answers is not None:
                self.script.answer_to[r.answers] = r
            s.last_answer = r
        elif kind in ("request", "notification", "batch"):
            method = rec.get("method") if isinstance(rec.get("method"), str) else None
            r = Recorded(rec["seq"], kind, method, value, s.script.index, rec.get("t_us", 0), exchange=exchange)
            if kind == "request":
                s.by_seq[r.seq] = r
                s.open[r.seq] = r
                if isinstance(value, dict) and id_key(value.get("id")) is not None:
                    s.by_id[id_key(value.get("id"))] = r
                if exchange is not None:
                    self.openers.setdefault(exchange, r.seq)
            elif method == "notifications/cancelled":
                self._cancel(s, r)
        else:
            return                                   # stray client bytes: nothing to answer
        if exchange is not None:
            self.by_exchange.setdefault(exchange, []).append(r)
        s.script.items.append(r)
        s.last_c2s = r

    def _cancel(self, s: _Session, r: Recorded) -> None:
        params = r.params
        key = id_key(params.get("requestId")) if isinstance(params, dict) else None
        target = s.by_id.get(key) if key is not None else None
        if target is not None and target.seq not in s.cancelled:
            r.cancels = target.seq
            s.cancelled[target.seq] = r
            self.script.cancel_of[target.seq] = r

    def _s2c(self, s: _Session, rec: dict[str, Any], value: Any, raw: bytes | None = None) -> None:
        kind = rec.get("kind", "")
        tr = dict_field(rec.get("transport"))
        pair, link = int_field(rec.get("pair")), int_field(rec.get("link"))
        members = batch_members(rec)
        ref = pair if kind in ("response", "error") else min(members.values()) if members else link
        own = s.by_seq.get(ref) if isinstance(ref, int) else None
        exchange = key_field(tr.get("exchange"))
        if exchange is not None:
            facts = self.exchanges.setdefault(exchange, {})
            facts["messages"] = facts.get("messages", 0) + 1
            facts["last"] = rec["seq"]
            if kind in ("response", "error") or members:
                facts["answered"] = True
        if kind in ("response", "error") or members:
            for p in (pair, *members.values()):
                if isinstance(p, int):
                    s.open.pop(p, None)
                    asked = s.by_seq.get(p)
                    if asked is not None and (why := defect(asked.value)) is not None:
                        self.script.answered_defects.add(why)
        elif own is None:
            own = self._owner(s, self.openers.get(exchange) if tr.get("stream") != "get" else None)
        anchor = s.last_c2s
        if own is not None:
            anchor = own
            if s.last_answer is not None and s.last_answer.seq > own.seq:
                anchor = s.last_answer
            cancel = s.cancelled.get(own.seq)
            if cancel is not None and cancel.seq > anchor.seq:
                anchor = cancel
        stream = tr.get("stream") if isinstance(tr.get("stream"), str) else None
        stream = stream or ("post" if exchange is not None and self.script.transport != "stdio" else None)
        e = Emission(rec["seq"], value, kind, 0, pair if kind in ("response", "error") else None,
                     link if kind == "notification" else None, stream, self.openers.get(exchange), raw, members)
        event_id = dict_field(tr.get("sse")).get("id")
        e.event_id = event_id if isinstance(event_id, str) and "\n" not in event_id and "\r" not in event_id else None
        t = rec.get("t_us", 0)
        if anchor is None:
            # after the first of them (the mock's start is its): what the server wrote at start keeps its spacing
            if not s.script.opening:
                s.opening_t = t
            e.delay_us = max(0, t - s.opening_t)
            where = s.script.opening
        else:
            e.delay_us = max(0, t - anchor.t_us)
            where = anchor.emits
        where.append(e)
        if exchange is not None and tr.get("stream") != "get":
            self.last_on[exchange] = (e, where, t)
        if raw is not None and exchange is not None and self.script.transport != "stdio":
            self.bodies.setdefault(exchange, []).append((message_bytes(rec) or b"", e, where))

    @staticmethod
    def _owner(s: _Session, opener: int | None) -> Recorded | None:
        """The open request an unlinked server message (a log, list_changed, a server request)
        belongs to (module docstring), or None for the latest client message."""
        if opener is not None and opener in s.open:
            return s.open[opener]
        if s.last_c2s is None or s.last_c2s.kind != "request":
            return None                              # after an answer or a notification: that is its cause
        for r in reversed(s.open.values()):
            if r.method is not None and not chore(r.method):
                return r
        return None


def build_script(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> Script:
    """The server side of a capture (its header and the records after it). A request
    the recording tap refused itself (403 rebinding, 401 not fronted: records.refusals)
    never reached the server: it is no part of the script, so a live request is never
    matched with it (and left unanswered as it was)."""
    b = _Builder(header)
    if needs_marking(header):
        records = mark_refusals(records)        # a capture from before the marker
    for r in records:
        if refused_how(r) is not None:
            continue
        typ = r.get("type")
        if typ == "message":
            b.message(r)
        elif typ == "http":
            b.http(r)
    return b.finish()


def script_from_path(path: str) -> Script:
    """The server side of the capture at ``path``. Raises CaptureReadError."""
    stream = CaptureStream(path)
    return build_script(stream.header, annotated(stream))
