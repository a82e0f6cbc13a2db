"""The replay runner (trio): drive a Plan against a live server and record it.

    Replayer(plan, link).run() -> ReplayResult

The Replayer sends each step's message in order, first waiting (up to
``timeout`` seconds from when it was sent) for the live responses of the steps
the original client had waited for; with its recorded JSON-RPC id (a fresh one
of its type once that id was sent); carried values (cursors, request state, task ids) are
taken from live answers; 2026-07-28 input rounds get ``inputResponses`` rebuilt
from the live ``inputRequests``; live server requests (sampling, elicitation,
roots, ping) are answered from the capture's AnswerBook.

A *link* moves JSON-RPC values and records them through a Recorder, so the new
session is itself a normal capture: ``stdio_link.StdioLink`` (spawn ``CMD``;
re-exported here) or ``http_client.HttpLink`` (Streamable HTTP). Link interface::

    await link.start(nursery, deliver, closed)  # deliver(value, session) async; closed() sync
    await link.send(value, session)             # one c2s message (never waits for its answer)
    await link.aclose()                         # end the session (stdin EOF / DELETE)
    link.written(value, at)                     # set by the runner: call once a message is written whole (at: when, or None)
    link.lost(ids, note)                        # set by the runner: these requests' answers cannot come any more
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import trio

from mcptap.errors import SpawnError
from mcptap.protocol.jsonrpc import id_key
from mcptap.replay.live import MISSING, Live, LiveServerRequest, ReplayResult, get_path, set_path
from mcptap.replay.peer_text import said
from mcptap.replay.plan import Plan, Step
from mcptap.replay.stdio_link import C2S, CHUNK, S2C, Deliver, StdioLink
from mcptap.replay.steps import copy_message, read_id, wire_id

#: the requests that begin a session: a later step of a session whose live handshake failed is not sent
HANDSHAKES = ("initialize", "server/discover")

__all__ = ["C2S", "S2C", "CHUNK", "Deliver", "Live", "LiveServerRequest", "ReplayResult", "Replayer", "StdioLink"]


class Replayer:
    """Run ``plan`` over ``link``. ``timeout``: seconds to wait for one answer.
    ``new_link(i)``: a fresh link for the plan's session ``i`` (i ≥ 1) —
    stdio targets get a fresh server process per recorded session. ``prepare``: the
    live server's request params as the capture would hold them (a scrubbed capture:
    redacted with its rules and key, ``redact.live``) before they are matched with the
    recorded requests."""

    def __init__(self, plan: Plan, link: Any, timeout: float = 30.0, new_link: Callable[[int], Any] | None = None,
                 prepare: Callable[[Any], Any] | None = None) -> None:
        self.plan = plan
        self.link = link
        self.prepare = prepare
        self.new_link = new_link
        self.timeout = timeout
        self.result = ReplayResult(plan)
        self._by_live_id: dict[Any, tuple[Live, Any]] = {}
        self._next_id = 0
        self._closed = False
        self._inherited: list[int] = []
        #: recorded session -> its live handshake (initialize, or 2026-07-28 server/discover) and the method
        self._handshakes: dict[Any, tuple[str, Live]] = {}
        self.stopped = 0                            # the signal that stopped the replay (``stop``), 0 if none
        self._steps = trio.CancelScope()            # sending the current part's steps and waiting for answers

    def stop(self, signum: int) -> None:
        """A host's stop signal (replay/stop.py): no more steps, no more waiting; the current
        link is still closed as at the end (stdio: stdin EOF, then SIGTERM, SIGKILL)."""
        self.stopped = self.stopped or signum
        self._steps.cancel()

    # -- ids and messages ---------------------------------------------------------------
    def _fresh(self, orig: Any) -> Any:
        while id_key(orig) in self._by_live_id:      # as recorded (null, 1.5, {…}) unless sent already
            self._next_id += 1
            orig = str(self._next_id) if isinstance(orig, str) else self._next_id
        return orig

    def _build(self, step: Step) -> Any:
        """The live message for ``step``, or None when it must not be sent (note set)."""
        notes = self.result.notes
        # a packed message parses into a fresh object each time (steps.pack, steps.literal: its
        # numbers orjson cannot write kept as fragments, which a copy would lose); one held as it is is copied
        msg = step.message if isinstance(step.packed_message, bytes) else copy_message(step.message)
        if msg is None:
            # orjson encodes at most 254 levels of nesting; the recorded bytes stay in the capture
            notes[step.index] = "not sent: the request nests deeper than the JSON encoder handles (254 levels)"
            return None
        if step.dropped and isinstance(msg, list):
            # a batch without its tool calls that may have side effects (builder.PlanBuilder._policy)
            msg = [item for i, item in enumerate(msg) if i not in step.dropped]
        for c in step.carry:
            src = self.result.live.get(c.source)
            live_val = get_path(src.response, c.source_path) if src is not None and src.response is not None else MISSING
            if live_val is MISSING:
                notes[step.index] = f"live answer of #{self.plan.steps[c.source].seq} has no {'.'.join(map(str, c.source_path))}; original value sent"
            else:
                set_path(msg, c.path, live_val)
        if step.retry_of is not None and not self._retry(step, msg):
            return None
        if step.cancel_of is not None:
            target = self.result.live.get(step.cancel_of)
            if target is None:
                notes[step.index] = "cancels a request that was not sent"
                return None
            msg["params"]["requestId"] = wire_id(target.live_id)
        return msg

    def _retry(self, step: Step, msg: dict[str, Any]) -> bool:
        prev = self.result.live.get(step.retry_of) if step.retry_of is not None else None
        result = prev.response.get("result") if prev is not None and isinstance(prev.response, dict) else None
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            self.result.notes[step.index] = "not sent: the live server did not ask for input in the previous round"
            return False
        params = msg.setdefault("params", {})
        asked = result.get("inputRequests")
        if isinstance(asked, dict):
            answers = {}
            for key, req in asked.items():
                if not isinstance(req, dict):
                    continue
                ans, how = self.plan.answers.take(str(req.get("method")), req.get("params"))
                self.result.server_requests.append(LiveServerRequest(str(req.get("method")), req.get("params"), how))
                if ans is not None and "result" in ans:
                    answers[key] = ans["result"]
            params["inputResponses"] = answers
        else:
            params.pop("inputResponses", None)
        if "requestState" in result:
            params["requestState"] = result["requestState"]
        else:
            params.pop("requestState", None)
        return True

    # -- incoming ------------------------------------------------------------------------
    async def deliver(self, value: Any, session: Any = None) -> None:
        """One s2c JSON value from the link (a message or a batch)."""
        for v in value if isinstance(value, list) else (value,):
            if not isinstance(v, dict):
                continue
            if "method" in v:
                if "id" in v:
                    await self._server_request(v, session)
                continue
            if "id" in v and ("result" in v or "error" in v):
                self._response(v)

    def _response(self, v: dict[str, Any]) -> None:
        entry = self._by_live_id.get(id_key(v.get("id")))
        if entry is None:
            return
        live, member = entry
        now = trio.current_time()
        if live.done.is_set() or now > live.sent_at + self.timeout:
            # The verdict's deadline has passed (or the step is settled): a late
            # answer never becomes the verdict; often it is the server's reply to
            # replay closing the session ('Connection closed'), not its answer.
            self._late(live, now)
            return
        if member is None:
            live.response = v
            live.latency_us = int((now - live.sent_at) * 1e6)
            live.done.set()
            return
        # batch member: keep the answer under its original id; done when all are in
        assert live.parts is not None and live.batch is not None
        live.parts[id_key(member)] = {**v, "id": member}
        if len(live.parts) == len(live.batch) and not live.done.is_set():
            live.response = [live.parts[id_key(o)] for o in live.batch]
            live.latency_us = int((now - live.sent_at) * 1e6)
            live.done.set()

    def _late(self, live: Live, now: float) -> None:
        """An answer after ``live``'s deadline: settle the step as unanswered
        (if not yet) and say when the answer came; its response stays unset."""
        if live.response is not None:
            return                          # a duplicate answer: the protocol checker flags it
        if not live.done.is_set():
            live.note = f"no answer within {self.timeout:g} s"
            live.done.set()
        if live.note is not None and "answered late" not in live.note:
            live.note += f" (answered late, after {(now - live.sent_at) * 1000:.0f} ms)"

    async def _server_request(self, v: dict[str, Any], session: Any) -> None:
        method = str(v.get("method"))
        params = v.get("params") if self.prepare is None else self.prepare(v.get("params"))
        ans, how = self.plan.answers.take(method, params)
        self.result.server_requests.append(LiveServerRequest(method, params, how))
        if ans is None:
            ans = {"error": {"code": -32601, "message": f"mcptap replay: the capture has no answer to {method}"}}
        await self.link.send({"jsonrpc": "2.0", "id": v.get("id"), **ans}, session)

    def written(self, value: Any, at: float | None = None) -> None:
        """The link wrote ``value`` out whole: its requests' answer times count from
        ``at`` (trio clock, s: the instant the new capture's record of it was stamped,
        right before its last byte was written) or, None, from now."""
        sent_at = trio.current_time() if at is None else at
        for v in value if isinstance(value, list) else (value,):
            live = self._by_live_id.get(id_key(read_id(v.get("id"))), (None,))[0] if isinstance(v, dict) and "method" in v else None
            if live is not None and not live.done.is_set():
                live.sent_at = sent_at

    def lost(self, ids: list[Any], note: str) -> None:
        """The link can no longer get the answers to the requests it sent with
        these ids (a legacy HTTP+SSE stream the server ended): each is settled
        unanswered, with ``note`` (a batch, at its first such member)."""
        for i in ids:
            live = self._by_live_id.get(id_key(i), (None,))[0]
            if live is not None and not live.done.is_set():
                live.note = note
                live.done.set()

    def closed(self) -> None:
        """The link ended (server exited, connection lost): nothing more will come."""
        self._closed = True
        for live in self.result.live.values():
            if not live.done.is_set():
                live.note = live.note or "the server closed the connection before answering"
                live.done.set()

    # -- driving -------------------------------------------------------------------------
    async def _wait(self, live: Live) -> None:
        if live.done.is_set():
            return
        with trio.move_on_at(live.sent_at + self.timeout):
            await live.done.wait()
        if not live.done.is_set():
            live.note = f"no answer within {self.timeout:g} s"
            live.done.set()

    async def _send(self, step: Step) -> None:
        # a step not sent passes its waits on: what it waited for, the next one must too
        waits = self._inherited + step.waits
        if step.skip:
            self.result.notes[step.index] = step.skip
            self._inherited = waits
            return
        self._inherited = []
        for w in waits:
            live = self.result.live.get(w)
            if live is not None:
                await self._wait(live)
        if self._closed:
            self.result.notes.setdefault(step.index, "not sent: the server had closed the connection")
            return
        failed = await self._handshake_failed(step)
        if failed:
            # what follows a failed handshake would only pile up findings about a session that never began
            self.result.notes.setdefault(step.index, f"not sent: {failed[0]} failed ({failed[1]})")
            return
        msg = self._build(step)
        if msg is None:
            return
        live = None
        if step.kind == "request":
            live = Live(step.index, self._fresh(step.orig_id), trio.current_time())
            msg["id"] = _sent_id(msg["id"], live.live_id, step.orig_id)
            if live.live_id is not None:        # an answer with id null answers no request (as in the capture)
                self._by_live_id[id_key(live.live_id)] = (live, None)
        elif step.kind == "batch" and isinstance(msg, list):
            batch: list[Any] = []
            live = Live(step.index, None, trio.current_time(), batch=batch, parts={})
            for item in msg:
                if isinstance(item, dict) and "method" in item and "id" in item:
                    orig = read_id(item["id"])
                    item["id"] = _sent_id(item["id"], fresh := self._fresh(orig), orig)
                    if fresh is not None:
                        self._by_live_id[id_key(fresh)] = (live, orig)
                        batch.append(orig)
            if not live.batch:
                live.done.set()
        if live is not None:
            self.result.live[step.index] = live
            if step.method in HANDSHAKES and step.kind == "request":
                recorded = step.response
                if isinstance(recorded, dict) and isinstance(recorded.get("result"), dict):
                    self._handshakes[step.session] = (step.method, live)
                else:
                    # the original client went on after this one failed too (the SDK falls back
                    # from server/discover to initialize): what follows is sent as it was
                    self._handshakes.pop(step.session, None)
        await self.link.send(msg, step.session)

    async def _handshake_failed(self, step: Step) -> tuple[str, str] | None:
        """(method, why) when the live handshake of ``step``'s session
        (``initialize``, or 2026-07-28 ``server/discover``) failed where the
        recorded one succeeded (an error or no answer); None when it
        succeeded, there is none before ``step``, or ``step`` is a handshake."""
        entry = self._handshakes.get(step.session)
        if entry is None or step.method in HANDSHAKES:
            return None
        method, live = entry
        await self._wait(live)
        r = live.response
        if isinstance(r, dict) and isinstance(r.get("result"), dict):
            return None
        err = r.get("error") if isinstance(r, dict) else None
        if isinstance(err, dict):
            # the live server's words, redacted and escaped before they are cut (replay/peer_text.py)
            return method, f"error {said(str(err.get('code')), 40)} '{said(str(err.get('message')), 80)}'"
        return method, live.note or "no answer"

    def _parts(self) -> list[list[Step]]:
        """The steps in sessions of their own (each on a fresh link) when
        ``new_link`` is given and the plan has several sessions; else all at once."""
        if self.new_link is None or len(self.plan.sessions) <= 1:
            return [self.plan.steps]
        parts: list[list[Step]] = [[] for _ in self.plan.sessions]
        for step in self.plan.steps:
            parts[step.part].append(step)
        return parts

    async def _run_part(self, steps: list[Step]) -> bool:
        """Start the link, replay ``steps``, wait for their answers, end the
        link. False when the link could not start (``result.error`` set)."""
        async with trio.open_nursery() as nursery:
            try:
                self.link.written = self.written
                self.link.lost = self.lost
                await self.link.start(nursery, self.deliver, self.closed)
            except SpawnError as exc:
                self.result.error = str(exc)
                return False
            except OSError as exc:
                self.result.error = f"cannot reach the server: {exc.strerror or exc}"
                return False
            with self._steps:
                for step in steps:
                    await self._send(step)
                for step in steps:
                    live = self.result.live.get(step.index)
                    if live is not None and step.answered:
                        await self._wait(live)
            await self.link.aclose()
            nursery.cancel_scope.cancel()
        code = getattr(self.link, "exit_code", None)
        if code or self.result.exit_code is None:
            if not self.result.exit_code:
                self.result.exit_code, self.result.ended_by = code, getattr(self.link, "ended_by", None)
        self.result.error = self.result.error or getattr(self.link, "error", None)
        return True

    async def run(self) -> ReplayResult:
        """Replay every step (session by session on fresh links when
        ``new_link`` is given), wait for outstanding answers, end the session(s)."""
        t0 = trio.current_time()
        for i, steps in enumerate(self._parts()):
            if self.stopped:
                break
            self._steps = trio.CancelScope()
            if i > 0:
                assert self.new_link is not None
                self.link = self.new_link(i)
                self._closed = False
                self._inherited = []
                self._handshakes = {}
                self._by_live_id = {}           # a fresh server: the recorded ids are free again
            if not await self._run_part(steps):
                break
        self.result.duration_s = trio.current_time() - t0
        for idx, live in self.result.live.items():
            if live.note and idx not in self.result.notes:
                self.result.notes[idx] = live.note
        return self.result


def _sent_id(recorded: Any, live_id: Any, orig: Any) -> Any:
    """The id to send: the recorded literal (a fragment, ``steps.literal``) when the
    request goes with its recorded id, else ``live_id`` as ``wire_id`` writes it."""
    return recorded if live_id is orig and isinstance(recorded, orjson.Fragment) else wire_id(live_id)
