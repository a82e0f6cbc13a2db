"""Planning one record at a time (pure, level 3): ``PlanBuilder`` turns a
capture's message records, in order, into the steps of a :class:`Plan`
(``replay/plan.py``'s ``build_plan`` drives it and says what a step holds):
``c2s(rec, value, exact)`` / ``s2c(rec, value, exact)`` for each message,
``refused`` for the exchanges the tap answered itself, ``http_answered(end)``
for an HTTP ``end`` record (a request refused or redirected at HTTP level and
later sent again is not replayed: ``compare/resent.py``), then ``finish()``
once the records have ended (the tool policy and what depends on skipped steps).

Also here: ``CARRY_KEYS`` (values a server mints and a client echoes back) and
``tool_is_safe`` (the side-effect policy of one tool's annotations).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.capture.format import decode_bytes
from mcptap.compare.mask import Masker
from mcptap.compare.resent import Resends, answered_at_http
from mcptap.diff.notified import notified
from mcptap.replay.in_flight import InFlightLog
from mcptap.replay.steps import UNSEEN, AnswerBook, Carry, Notified, Plan, ServerRequest, Step, literal, pack, unpack

#: Keys of values a server mints that a client echoes back later.
CARRY_KEYS = frozenset({"nextCursor", "requestState", "taskId"})


def tool_is_safe(annotations: Any) -> bool:
    """Replay may call a tool only when it is declared read-only and not destructive."""
    if not isinstance(annotations, dict):
        return False
    return annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") is not True


def _label(method: str | None, params: Any) -> str:
    if method in ("tools/call", "prompts/get") and isinstance(params, dict) and isinstance(params.get("name"), str):
        return f"{method} {params['name']}"
    if method == "resources/read" and isinstance(params, dict) and isinstance(params.get("uri"), str):
        return f"{method} {params['uri']}"
    return method or "?"


def _walk(value: Any, path: tuple[Any, ...], depth: int = 0) -> Iterable[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every string leaf (bounded depth)."""
    if depth > 8:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "_meta":
                continue
            yield from _walk(v, path + (k,), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, path + (i,), depth + 1)
    elif isinstance(value, str) and value:
        yield path, value


def _minted(value: Any, path: tuple[Any, ...], depth: int = 0) -> Iterable[tuple[tuple[Any, ...], Any]]:
    """(path, value) of CARRY_KEYS string values in a response."""
    if depth > 6:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if k in CARRY_KEYS and isinstance(v, (str, int)) and not isinstance(v, bool):
                yield path + (k,), v
            elif isinstance(v, (dict, list)) and k != "_meta":
                yield from _minted(v, path + (k,), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value[:100]):
            yield from _minted(v, path + (i,), depth + 1)


class PlanBuilder:
    def __init__(self, header: dict[str, Any], allow_side_effects: bool, masker: Masker) -> None:
        self.plan = Plan(header, answers=AnswerBook(masker), transport=header.get("transport", "stdio"))
        self.allow = allow_side_effects
        self.by_seq: dict[Any, int] = {}            # original request seq (, id) -> step index
        self.answered: list[int] = []               # answered since the last step was planned
        self.minted: dict[Any, tuple[int, tuple[Any, ...]]] = {}
        self.srv_by_seq: dict[Any, ServerRequest] = {}
        self.in_flight = InFlightLog()              # what may have caused each server request
        self.input_required: dict[tuple[Any, str], int] = {}   # (session, label) -> step with input_required
        self.last_id: dict[tuple[Any, Any], int] = {}
        self.group = 0
        self.stdio_sessions = 0
        self.listed: dict[str, Any] = {}            # tools by name, from the tools/list answers so far
        self.defined: dict[str, Any] = {}           # tools by name with an inputSchema, from any answer (the last)
        self.refused: dict[int, str] = {}           # HTTP exchanges the tap answered itself: never forwarded
        self.texts: dict[str, str] = {}
        self.resends = Resends()                    # requests answered at HTTP level, until sent again
        self.moved = False                          # a skipped first send took its re-send's session
        self.rev_agreed = False                     # plan.revision is the negotiated one, not a probe's
        self.notes: dict[tuple[Any, Any], int] = {}  # (session, method) -> index in plan.notified

    def c2s(self, rec: dict[str, Any], value: Any, exact: bool) -> None:
        """A c2s message record and its JSON value (``exact``: orjson read it, see ``pack``).
        What is sent again keeps each number orjson would write as another one as recorded
        (``steps.literal``: ``1e400`` was sent as null)."""
        kind = rec.get("kind")
        held = literal(decode_bytes(rec, "raw")) if "raw" in rec or "raw_b64" in rec else None
        sent = value if held is None else unpack(held)
        if kind in ("response", "error"):
            srv = self.srv_by_seq.pop(rec.get("pair"), None)
            if srv is not None and isinstance(sent, dict):
                srv.answer = {"error": sent["error"]} if "error" in sent else {"result": sent.get("result")}
                self.plan.answers.add(srv.method, srv.params, srv.answer)
            return
        if kind not in ("request", "notification", "batch"):
            return                                   # stray client bytes are not replayed
        plan = self.plan
        method = rec.get("method")
        params = value.get("params") if isinstance(value, dict) else None
        session = rec.get("session")
        if plan.transport == "stdio":
            # a second initialize on stdio: the recorded client started a new session
            # (its server was restarted); replay gives it a session key of its own
            if method == "initialize" and kind == "request":
                self.stdio_sessions += 1
            session = None if self.stdio_sessions <= 1 else f"stdio-session-{self.stdio_sessions}"
        step = Step(len(plan.steps), rec["seq"], kind, method, pack(value, exact) if held is None else held, session,
                    value.get("id") if kind == "request" and isinstance(value, dict) else None,
                    rec.get("t_us", 0), label=self._shared(_label(method, params) if kind != "batch" else "batch"))
        # every message that would call a tool is judged by the policy: a request, one without an id
        # (a server may run it all the same), each member of a batch
        calls = _tool_calls(value, kind)
        if calls:
            step.tool = [(i, name, self.listed.get(name, UNSEEN) if isinstance(name, str) else None) for i, name in calls]
        if self.answered:
            step.waits = self.answered
            self.answered = []
            self.group += 1
        step.group = self.group
        if step.session not in plan.sessions:
            plan.sessions.append(step.session)
        step.part = plan.sessions.index(step.session)
        if kind == "request":
            self.by_seq[step.seq] = step.index
            self.in_flight.sent(step.index)
            self.last_id[(step.session, _hid(step.orig_id))] = step.index
            for idx, how in self.resends.resent(step.orig_id, method, step.session):
                # the client sent it again (re-authorised, followed the redirect): that one is the exchange
                first = plan.steps[idx]
                first.skip = f"{how} in the recording; re-sent as #{step.seq}"
                if first.session != step.session:
                    first.session = step.session    # (an initialize refused before it had one): shown with its re-send
                    self.moved = True
            self._retry(step, params, sent.get("params") if isinstance(sent, dict) else None)
        elif kind == "batch" and isinstance(value, list):
            for m in rec.get("members") or []:
                item = value[m["index"]] if m.get("index", 0) < len(value) else None
                if m.get("kind") == "request" and isinstance(item, dict):
                    self.by_seq[(step.seq, _hid(item.get("id")))] = step.index
                    self.in_flight.sent(step.index)
        elif method == "notifications/cancelled" and isinstance(params, dict):
            step.cancel_of = self.last_id.get((step.session, _hid(params.get("requestId"))))
        if rec.get("rev") and not self.rev_agreed:
            plan.revision = rec["rev"]
            # a request before the handshake (a dual-era client's server/discover probe) only
            # offers its revision: a handshake-era server refuses it and initialize agrees on
            # another, which every later message carries
            self.rev_agreed = rec.get("phase") != "before_initialize"
        if plan.era is None and method == "initialize":
            plan.era = "legacy"
        elif plan.era is None and rec.get("phase") == "stateless":
            plan.era = "modern"
        if self.minted and kind != "batch":
            for path, v in _walk(params, ("params",)):
                src = self.minted.get(v)
                if src is not None:
                    step.carry.append(Carry(path, src[0], src[1], v))
        plan.steps.append(step)

    def http_answered(self, rec: dict[str, Any]) -> None:
        """An HTTP ``end`` record: the requests its findings say were answered at HTTP
        level (refused, redirected) wait for their re-send, which skips them."""
        for how, seqs in answered_at_http(rec):
            for seq in seqs:
                idx = self.by_seq.pop(seq, None)        # (a batch's members are keyed by (seq, id): sent as they are)
                if idx is None:
                    continue
                self.in_flight.answered(idx)
                step = self.plan.steps[idx]
                self.resends.held(idx, step.orig_id, step.method, step.session, self._shared(how))

    def _retry(self, step: Step, params: Any, sent: Any) -> None:
        key = (step.session, step.label)
        prev = self.input_required.pop(key, None)
        if prev is not None and isinstance(params, dict) and ("inputResponses" in params or "requestState" in params):
            step.retry_of = prev
            responses = sent.get("inputResponses") if isinstance(sent, dict) else None      # (as sent again: steps.literal)
            asked = self.plan.steps[prev].response["result"].get("inputRequests")
            if isinstance(responses, dict) and isinstance(asked, dict):
                for k, req in asked.items():
                    if isinstance(req, dict) and k in responses:
                        self.plan.answers.add(str(req.get("method")), req.get("params"), {"result": responses[k]})

    def finish(self) -> None:
        """Judge, in order, what depends on the whole capture: the tool policy
        (a call of a tool listed before it by its listing then, else by the
        capture's last definition of it) and the rounds and cancels of steps
        not sent. A step the tap refused keeps that reason."""
        steps = self.plan.steps
        if self.moved:
            # sessions in recorded order again, without one that only held a refused first send
            parts = {key: i for i, key in enumerate(dict.fromkeys(s.session for s in steps))}
            self.plan.sessions = list(parts)
            for step in steps:
                step.part = parts[step.session]
        if self.refused:
            for step in steps:
                how = self.refused.get(step.exchange) if step.exchange is not None else None
                if how is not None:
                    step.skip = f"the tap refused it ({how}): it never reached the server"
        for step in steps:
            tool, step.tool = step.tool, None       # (judged here: the listing it held is not needed after)
            if step.skip:
                continue
            if step.retry_of is not None and steps[step.retry_of].skip:
                step.skip = "answers a request that is not replayed"
            elif tool is not None and not self.allow:
                self._policy(step, tool)
            elif step.cancel_of is not None and steps[step.cancel_of].skip:
                step.skip = "cancels a request that is not replayed"
        self.plan.tools = {**self.defined, **self.listed}
        self.in_flight.resolve(steps, self.plan.server_requests, by_session=self.plan.transport != "stdio", notes=self.plan.notified)

    def _policy(self, step: Step, calls: list[tuple[int | None, Any, Any]]) -> None:
        """Skip ``step`` when it calls a tool that may have side effects; a batch
        is sent without such members (``Step.dropped``), or not at all when none is left."""
        dropped: dict[int, str] = {}
        for member, name, seen in calls:
            why = self._unsafe(name, seen)
            if why is None:
                continue
            if member is None:
                step.skip = why
                return
            dropped[member] = why
        if not dropped:
            return
        step.dropped = dropped
        message = step.message
        if len(dropped) >= (len(message) if isinstance(message, list) else 0):
            step.skip = self._shared("not sent: every member of the batch is a tool call that may have side effects (--allow-side-effects)")

    def _unsafe(self, name: Any, seen: Any) -> str | None:
        """Why a call of tool ``name`` (its listing when called: ``seen``) is not replayed; None when it may be."""
        tool = None if not isinstance(name, str) else self.defined.get(name) if seen is UNSEEN else seen
        if tool is None:
            return self._shared(f"tool {name!r} has no recorded annotations (may have side effects; --allow-side-effects)")
        if not tool_is_safe(tool.get("annotations")):
            return self._shared(f"tool {name!r} is not declared read-only or is destructive (--allow-side-effects)")
        return None

    def _shared(self, text: str) -> str:
        """One str object for every equal label or reason (100,000 calls of a few tools: a few strings)."""
        return self.texts.setdefault(text, text)

    def s2c(self, rec: dict[str, Any], value: Any, exact: bool) -> None:
        """An s2c message record and its JSON value (``exact``: orjson read it, see ``pack``)."""
        kind = rec.get("kind")
        plan = self.plan
        if kind in ("notification", "batch"):
            for _, method in notified(rec):             # counted as diff counts them
                key = (rec.get("session"), method)
                k = self.notes.get(key)
                if k is None:
                    k = self.notes[key] = len(plan.notified)
                    plan.notified.append(Notified(method, key[0]))
                self.in_flight.notified(k)
        if isinstance(value, dict) and isinstance(value.get("result"), dict):
            for t in value["result"].get("tools") or []:
                if isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("inputSchema"), dict):
                    self.defined[t["name"]] = t
        if kind == "request" and isinstance(value, dict):
            srv = ServerRequest(rec["seq"], rec.get("method") or "", value.get("params"), session=rec.get("session"))
            self.in_flight.asked(len(plan.server_requests))
            plan.server_requests.append(srv)
            self.srv_by_seq[rec["seq"]] = srv
            return
        if kind == "batch" and isinstance(value, list):
            for m in rec.get("members") or []:
                item = value[m["index"]] if m.get("index", 0) < len(value) else None
                if m.get("kind") in ("response", "error") and isinstance(item, dict):
                    self._response(rec, m.get("pair"), item, m.get("latency_us"), exact)
            return
        if kind in ("response", "error") and isinstance(value, dict):
            self._response(rec, rec.get("pair"), value, rec.get("latency_us"), exact)

    def _response(self, rec: dict[str, Any], pair: Any, value: dict[str, Any], latency: Any, exact: bool) -> None:
        idx = self.by_seq.pop(pair, None)
        if idx is None:
            idx = self.by_seq.pop((pair, _hid(value.get("id"))), None)
        if idx is None:
            return
        self.in_flight.answered(idx)
        step = self.plan.steps[idx]
        result = value.get("result")
        if step.method == "initialize" and isinstance(result, dict) and isinstance(result.get("protocolVersion"), str) \
                and not self.rev_agreed:
            self.plan.revision, self.rev_agreed = result["protocolVersion"], True    # the handshake's answer
        if step.kind == "batch":
            held = step.packed_response
            # a batch's answers may come one by one (few batches): the list so far, packed again with each
            step.packed_response = pack([*(unpack(held) or ()), value], exact and (held is None or type(held) is bytes))
        else:
            step.packed_response = pack(value, exact)
            step.latency_us = latency
        step.response_seq = rec["seq"]
        if idx not in self.answered:
            self.answered.append(idx)
        result = value.get("result")
        if isinstance(result, dict):
            if step.method == "tools/list":
                for t in result.get("tools") or []:
                    if isinstance(t, dict) and isinstance(t.get("name"), str):
                        self.listed[t["name"]] = t
            for path, v in _minted(result, ("result",)):
                self.minted[v] = (idx, path)
            if result.get("resultType") == "input_required":
                self.input_required[(step.session, step.label)] = idx


def _tool_calls(value: Any, kind: Any) -> list[tuple[int | None, Any]]:
    """(batch member index, or None for the message itself; tool name) of each
    ``tools/call`` in a c2s message, with an id or without (a notification-shaped
    call is still a call), judged by the message itself, not by its record's kind."""
    items: Iterable[tuple[int | None, Any]]
    if kind == "batch" and isinstance(value, list):
        items = enumerate(value)
    elif isinstance(value, dict):
        items = ((None, value),)
    else:
        return []
    out: list[tuple[int | None, Any]] = []
    for i, item in items:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            out.append((i, params.get("name") if isinstance(params, dict) else None))
    return out


def _hid(v: Any) -> Any:
    return v if isinstance(v, (int, str)) else repr(v)
