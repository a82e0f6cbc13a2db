"""The HTTP exchanges of a capture, for the serve script (pure, level 3; the base of
``serve.script._Builder``, which reads the ``message`` records).

Per exchange (``exchanges``): its method, target, status, content type, headers, a body
that is no message, its priming events, how it ended; ``finish`` turns them into the
script's HTTP facts: each GET / DELETE kind's recorded answers in order
(``Script.kind_answers``), whether GET streams were served, the POST path, and on each
recorded client message how its POST ended (``Recorded.ending``: serve/script_http.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from mcptap.capture.format import decode_bytes
from mcptap.serve.script_auth import AuthFacts
from mcptap.serve.script_fields import int_field, key_field, status_field
from mcptap.serve.script_http import SERVER_ENDED, STREAM_END, ending_of, kind_answer, priming, refusal_key, replayed_headers, sse_bytes, stream_ended
from mcptap.serve.script_model import Emission, Recorded, Script


class ExchangeFacts:
    """What the ``http`` records of a capture say (see module docstring)."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.script = Script(header, transport=header.get("transport", "stdio"))
        target = header.get("target")
        #: the OAuth side: URLs the tap pointed at itself, discovery documents (serve/script_auth.py)
        self.auth = AuthFacts(target.get("url") if isinstance(target, dict) else None)
        self.exchanges: dict[Any, dict[str, Any]] = {}
        self.openers: dict[Any, int] = {}            # HTTP exchange -> seq of the first client request on it
        self.by_exchange: dict[Any, list[Recorded]] = {}
        self.last_request: dict[Any, int] = {}       # HTTP session -> seq of its latest request record
        #: HTTP exchange -> the latest server message on its POST stream: (its emission, the list it is in, its t_us)
        self.last_on: dict[Any, tuple[Emission, list[Emission], int]] = {}
        #: HTTP exchange -> its response body's lines that are not messages: (their bytes, the emission, its list)
        self.bodies: dict[Any, list[tuple[bytes, Emission, list[Emission]]]] = {}
        self.groups: dict[Any, int] = {}
        self.last_method: dict[Any, Any] = {}         # HTTP session -> the method of its latest request record

    def http(self, rec: dict[str, Any]) -> None:
        if self.auth.record(rec):
            return                                   # an OAuth exchange's: no MCP exchange's fact
        ev = rec.get("event")
        ex = key_field(rec.get("exchange"))
        facts = self.exchanges.setdefault(ex, {}) if ex is not None else {}
        if ev == "request":
            facts["method"] = rec.get("method")
            facts["session"] = key_field(rec.get("session"))
            self.last_method[facts["session"]] = rec.get("method")
            self.last_request[key_field(rec.get("session"))] = int_field(rec.get("seq")) or 0
            facts["target"] = rec.get("target")
            headers = rec.get("headers")
            facts["resumes"] = next((str(h[1]) for h in (headers if isinstance(headers, list) else ())
                                     if isinstance(h, list) and len(h) == 2 and str(h[0]).lower() == "last-event-id"), None)
            facts["sid_sent"] = any(isinstance(h, list) and h and str(h[0]).lower() == "mcp-session-id"
                                    for h in (headers if isinstance(headers, list) else ()))
        elif ev == "response" and not rec.get("informational"):
            facts["status"] = rec.get("status")
            facts["started"] = int_field(rec.get("seq")) or 0
            headers = rec.get("headers")
            for pair in headers if isinstance(headers, list) else ():
                if not (isinstance(pair, list) and len(pair) == 2):
                    continue
                name, val = pair
                low = str(name).lower()
                if low == "content-type":
                    facts["ctype"] = str(val).split(";")[0].strip().lower()
                elif low == "mcp-session-id":
                    self.script.stateful = True
            facts["headers"] = headers
        elif ev == "response_body" and rec.get("undecoded") is None and rec.get("auth") is None:
            # a body that is no message (a 401's text, an HTML 403): the tap keeps it decoded (docs/http-tap.md)
            try:
                facts["body"] = facts.get("body", b"") + (decode_bytes(rec, "body") or b"")
            except ValueError:
                pass                                 # not base64: a hand-edited record holds nothing to send
        elif ev == "end":
            facts["end"] = (int_field(rec.get("seq")) or 0, int_field(rec.get("t_us")) or 0)
            facts["how"] = rec.get("how")
            # the server ended it by itself: no request of its session came since its last message (or its start);
            # an end a later request caused (a DELETE ends the session's GET stream) is the mock's to make then
            since = max(int_field(facts.get("last")) or 0, int_field(facts.get("started")) or 0)
            facts["by_itself"] = self.last_request.get(key_field(rec.get("session")), 0) < since
            facts["after"] = self.last_method.get(key_field(rec.get("session")))      # the method of that later request
            facts["sent_502"] = rec.get("sent_502") is True
            facts["cut"] = any(rec.get(k) for k in ("gap", "undecoded", "response_cut", "request_cut"))
        elif ev == "sse" and isinstance(rec.get("endpoint"), dict):
            self.script.legacy_sse = True
            data = rec["endpoint"].get("data")
            if isinstance(data, str):
                self.script.endpoint_path = urlsplit(data).path or "/messages/"
        elif ev == "sse" and not facts.get("messages") and (prime := priming(rec.get("sse"))) is not None:
            # an event before any message on the stream (a priming event: its id lets the client resume)
            facts.setdefault("priming", []).append(prime)

    def _keep_answer(self, key: str, ex: Any, facts: dict[str, Any], generic: str | None) -> None:
        """The recorded answer of ``ex`` after the earlier ones of its ``key`` (serve/script_http.refusal_key),
        and the first of its method under ``generic`` ("get", "delete"; their default status when it has none)."""
        sc = self.script
        default = 200 if generic == "delete" else 405
        answer = kind_answer(facts, self.auth.headers(ex, replayed_headers(facts.get("headers"))), default)
        if status_field(facts.get("status")) is not None:
            sc.kind_answers.setdefault(key, []).append(answer)
            group = self.groups.get(facts.get("session")) if facts.get("session") is not None else None
            if group is not None:
                sc.session_answers.setdefault(group, {}).setdefault(key, []).append(answer)
        if generic is not None:
            sc.kind_answers.setdefault(generic, [answer])

    def finish(self) -> Script:
        sc = self.script
        self.groups = {s.key: s.index for s in sc.sessions if s.key is not None}     # recorded session -> its index
        post_path = None
        for ex, facts in self.exchanges.items():
            method, target = facts.get("method"), facts.get("target")
            path = urlsplit(target).path if isinstance(target, str) else None
            if method in ("GET", "DELETE") or method == "POST" and sc.legacy_sse and (status_field(facts.get("status")) or 0) >= 400:
                # each request kind's own, in recorded order (a 401, then the stream)
                self._keep_answer(refusal_key(method, str(target or ""), facts.get("sid_sent") is True), ex, facts,
                                  method.lower() if method != "POST" and path else None)
            if method == "GET" and path:
                if facts.get("status") == 200 and facts.get("ctype") == "text/event-stream":
                    sc.get_stream = True
                    if sc.legacy_sse:
                        sc.sse_path = path
            elif method == "POST" and path and post_path is None:
                post_path = path
            ending = ending_of(facts, b"".join(b for b, _, _ in self.bodies.get(ex, ())) or facts.get("body", b"")
                               or b"".join(sse_bytes(p) for p in facts.get("priming", ())))
            if ending is not None and ending.status is not None:
                ending = replace(ending, headers=self.auth.headers(ex, ending.headers))     # URLs on the mock's origin
            self._stream_end(ex, facts)
            self._get_end(facts)
            if ending is not None:
                for _, e, where in self.bodies.get(ex, ()):
                    where[:] = [x for x in where if x is not e]     # the response body it was: sent as that, not as a line
            for r in self.by_exchange.get(ex, ()):
                r.ending = ending
                r.status = status_field(facts.get("status"))
                r.mode = "sse" if facts.get("ctype") == "text/event-stream" else "json" if facts.get("ctype") == "application/json" else None
                r.priming = tuple(facts.get("priming", ())) if r.mode == "sse" else ()
        self._resumptions()
        if post_path and not sc.legacy_sse:
            sc.post_path = post_path
        sc.auth_docs, sc.auth_paths, sc.auth_notes = self.auth.finish()
        return sc


    def _resumptions(self) -> None:
        """``Script.resume_of``: the recorded request whose POST event stream each event id was sent on (its
        messages' and priming events'), and a resumption GET's (``Last-Event-ID``) priming events' ids that
        request's too, so a live GET resuming after one resumes that request's stream."""
        sc = self.script
        for s in sc.sessions:
            for e in (x for r in s.items for x in r.emits):
                if e.event_id is not None and e.opener is not None and e.stream == "post":
                    sc.resume_of.setdefault(e.event_id, e.opener)
        for ex, facts in self.exchanges.items():
            opener = self.openers.get(ex) if facts.get("method") == "POST" else sc.resume_of.get(facts.get("resumes") or "")
            if opener is None:
                continue
            for p in facts.get("priming", ()):
                if isinstance(p.get("id"), str):
                    sc.resume_of.setdefault(p["id"], opener)

    def _get_end(self, facts: dict[str, Any]) -> None:
        """A GET event stream the server ended because of a later request of its session (not by itself:
        ``script_http.kind_answer`` ends those; not a DELETE, whose end of the session the mock makes): a
        ``stream_end`` emission on the GET stream after the latest client message of that session before
        the end, at the recorded delay, so the live session's GET stream ends when the live one comes."""
        if (facts.get("method") != "GET" or facts.get("status") != 200 or facts.get("ctype") != "text/event-stream"
                or facts.get("cut") or facts.get("how") not in SERVER_ENDED or facts.get("by_itself") is not False
                or facts.get("after") == "DELETE"):
            return
        group = self.groups.get(facts.get("session"))
        if group is None:
            return
        seq, t_end = facts.get("end", (0, 0))
        cause = next((r for r in reversed(self.script.sessions[group].items) if r.seq < seq), None)
        if cause is None:
            return
        mark = Emission(seq, None, STREAM_END, max(0, t_end - cause.t_us), stream="get",
                        how="complete" if facts.get("how") == "complete" else "closed")
        cause.emits.insert(next((i for i, e in enumerate(cause.emits) if e.seq > seq), len(cause.emits)), mark)

    def _stream_end(self, ex: Any, facts: dict[str, Any]) -> None:
        """An event stream that carried messages but not the answer, ended by the server: a ``stream_end``
        emission right after its last message (anchored as that one is), so the live stream ends there too."""
        how = stream_ended(facts)
        last = self.last_on.get(ex)
        if how is None or last is None:
            return
        e, where, t = last
        seq, t_end = facts.get("end", (0, t))
        mark = Emission(seq or e.seq, None, STREAM_END, e.delay_us + max(0, t_end - t), stream="post", opener=e.opener, how=how)
        where.insert(next(i for i, x in enumerate(where) if x is e) + 1, mark)
