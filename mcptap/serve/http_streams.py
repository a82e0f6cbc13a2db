"""Where the HTTP mock's answers go (trio, level 4): live HTTP sessions and
their open response streams.

A :class:`MockSession` is one live session (one ``Mcp-Session-Id``, one
legacy SSE connection, or all stateless traffic). Each POST that carries
requests opens a :class:`ResponseStream` registered under the live ids of its
requests; the core's outputs (:class:`~mcptap.serve.core.Out`) are routed by
``out.via`` to that stream, else to the session's standalone stream (the GET
stream, or the legacy SSE connection), and wait in a backlog while none is
open (``on_backlog`` is told of each, so the mock can say so). A GET resuming a request's
stream (``open_resumption``) is that request's response stream, never a standalone one. When the
recorded server offered no GET stream (``get_stream`` False: a capture made
over stdio), no GET stream will ever open: such an output goes on the latest
SSE response stream still open instead (a log the tool wrote after the
request it belongs to was answered reaches the client on another request's
stream rather than never), and waits only when none is. What is still
in a response stream when it ends (sent for its request after the response,
or not an answer on a JSON-mode POST) is routed again, never dropped. Outputs
with a delay are routed by one task per triggering message at their time, in
order; a cancelled request's delayed answers are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from mcptap.serve.live import LiveSession, Out
from mcptap.serve.order import InOrder
from mcptap.serve.wire import hkey


class ResponseStream:
    """The response of one POST with requests: outputs arrive on ``receive``;
    ``ids``: live ids (hkey) still to be answered; ``sse``: the response is an
    event stream (it can carry more than its own answers)."""

    def __init__(self, ids: set[Any]) -> None:
        self.ids = ids
        self.sse = False
        self.taking = True
        self._send, self._recv = trio.open_memory_channel[Out](float("inf"))

    def put(self, out: Out) -> None:
        try:
            self._send.send_nowait(out)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def receive(self) -> Out:
        return await self._recv.receive()

    def close(self) -> list[Out]:
        """Stop taking outputs; returns those not received yet, in order (a stream's end left out)."""
        self.taking = False
        self._send.close()
        left = []
        while True:
            try:
                out = self._recv.receive_nowait()
                if out.ends is None:
                    left.append(out)
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return left


@dataclass(eq=False)
class MockSession:
    """One live HTTP session of the mock (see module docstring)."""

    live: LiveSession
    sid: str | None = None
    #: the session as the mock's capture names it: ``sid``, but a legacy session id (a credential, the
    #: one thing authorising its POSTs) as its keyed placeholder, as the tap records it (relay/http/sessions.py)
    key: str | None = None
    streams: dict[Any, ResponseStream] = field(default_factory=dict)
    #: the open GET streams, the latest last: it takes what is not a request's (see ``open_standalone``)
    gets: list[ResponseStream] = field(default_factory=list)
    backlog: list[Out] = field(default_factory=list)
    closed: bool = False
    on_backlog: Callable[[MockSession, Out], None] | None = None
    order: InOrder = field(default_factory=InOrder)
    get_stream: bool = True             # the recorded server offered a GET stream (the client may open one)
    opened: bool = False                # what the recorded server wrote before any client message is out
    #: request kind -> its recorded session's answers given (``Answering._turn``)
    turns: dict[str, int] = field(default_factory=dict)
    #: live id (hkey) -> the answer routed for it (a resumption of its stream gets it again: ``open_resumption``)
    answered: dict[Any, Out] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.key is None:
            self.key = self.sid

    def open_post(self, ids: list[Any]) -> ResponseStream:
        st = ResponseStream({hkey(i) for i in ids})
        for i in ids:
            self.streams[hkey(i)] = st
        return st

    def close_post(self, st: ResponseStream) -> None:
        for k in [k for k, v in self.streams.items() if v is st]:
            del self.streams[k]
        for out in st.close():
            self.route(out)

    def open_resumption(self, lid: Any) -> ResponseStream:
        """A GET with ``Last-Event-ID`` resuming the event stream of live request ``lid``: it carries that
        request's messages and answer (never another's: a client takes a resumed stream's answer for its
        request's, whatever its id), then ends; the answer again when it was sent already (the client
        resumed as it came on another stream; a server replays a stream's stored events). ``close_post`` it."""
        st = ResponseStream({hkey(lid)})
        st.sse = True
        prev = self.answered.get(hkey(lid))
        if prev is not None:
            st.put(prev)
        else:
            self.streams[hkey(lid)] = st
        return st

    @property
    def standalone(self) -> ResponseStream | None:
        """The GET stream what belongs to no request goes on: the latest one open, or None."""
        return self.gets[-1] if self.gets else None

    def open_standalone(self) -> ResponseStream:
        """A new GET stream, which takes what waited for one. The earlier ones stay open (a client's
        resumptions with Last-Event-ID beside its GET stream: ending one as the next opens made the
        client resume it again, which ended the other, for ever) and take over again when it ends."""
        st = ResponseStream(set())
        self.gets.append(st)
        for out in self.backlog:
            st.put(out)
        self.backlog.clear()
        return st

    def close_standalone(self, st: ResponseStream) -> None:
        if st in self.gets:
            self.gets.remove(st)
        left = st.close()
        if self.gets:
            for out in left:
                self.gets[-1].put(out)            # the GET stream still open
        else:
            self.backlog[:0] = left               # for the client's next GET stream

    def end(self) -> None:
        """The session is over (a DELETE): its GET streams end, as a server ends them with the session."""
        self.closed = True
        for st in self.gets:
            self.backlog[:0] = st.close()

    def route(self, out: Out) -> None:
        """Send ``out`` where it belongs (see module docstring)."""
        target = self.streams.get(hkey(out.via)) if out.via is not None else None
        if out.ends is not None:
            if target is not None:
                target.put(out)          # the end of that request's stream; a stream already over has nothing to end
            elif out.via is None and self.standalone is not None:
                self.standalone.put(out)     # the end of the GET stream (none open: nothing to end)
            return
        if out.answers is not None:
            self.answered[hkey(out.answers)] = out
        if target is None and out.answers is not None:
            target = self.streams.get(hkey(out.answers))
        if target is None:
            self.aside(out)
        else:
            target.put(out)

    def aside(self, out: Out) -> None:
        """Send ``out`` on the standalone stream, or keep it for the next one."""
        if out.ends is not None:
            return                              # the end of a request's stream is no message for another
        if self.standalone is not None:
            self.standalone.put(out)
            return
        if not self.get_stream:
            # a stream that has answered all it was opened for is about to end (close_post routes what
            # it still holds): the latest open one that still waits for an answer of its own
            other = next((st for st in reversed(self.streams.values()) if st.sse and st.taking and st.ids), None)
            if other is not None:
                other.put(out)
                return
        self.backlog.append(out)
        if self.on_backlog is not None:
            self.on_backlog(self, out)

    def dispatch(self, outs: list[Out], nursery: trio.Nursery) -> None:
        """Route ``outs`` now, or (any delay) from a task at their times, each after the
        earlier ones for the same client request (serve/order.py)."""
        if all(o.delay_s <= 0 for o in outs) and not self.order.waiting(outs):
            for o in outs:
                self.route(o)
        elif outs:
            nursery.start_soon(self._later, outs, self.order.plan(outs), trio.current_time())

    async def _later(self, outs: list[Out], plan: list[tuple[list[trio.Event], trio.Event]], t0: float) -> None:
        try:
            for o, (before, done) in zip(outs, plan, strict=True):
                await trio.sleep_until(t0 + o.delay_s)
                await InOrder.turn(before)
                if o.request is None or hkey(o.request) not in self.live.cancelled:
                    self.route(o)
                self.order.release(o, done)
        finally:
            for o, (_, done) in zip(outs, plan, strict=True):
                self.order.release(o, done)


def unsent_line(v: dict[str, Any], sid: str | None, waits: float | None, get_status: int) -> str:
    """The line saying why server message ``v`` (its JSON object, or {}) has
    not reached the client: ``waits`` s it waited for a GET stream the recorded
    server offered, or None when it offered none (the mock answers GET ``get_status``)."""
    what = (f"server request {v['method']} (id {v.get('id')})" if "id" in v else f"notification {v['method']}") \
        if isinstance(v.get("method"), str) else f"answer to id {v.get('id')}"
    where = f"session {sid}: " if sid else ""
    if waits is not None:
        why = f"no open client request it belongs to, and no GET stream after {waits:g} s: it waits for one"
    else:
        why = (f"no open client request it belongs to, and no GET stream (the recorded server offered none, so the mock "
               f"answers GET {get_status}): the client never gets it")
    return f"{where}{what} has {why}"


def unsent_more_line(more: dict[str, int], show: int = 5) -> str:
    """The end-of-session line for the notifications not sent after the first of their
    method in their session was said (``more``: method to count, in first-seen order):
    the count, then the first ``show`` methods (the caller escapes the line)."""
    parts = [f"{m} ×{n}" for m, n in list(more.items())[:show]]
    if len(more) > show:
        parts.append(f"… and {len(more) - show} more method(s)")
    return (f"{sum(more.values())} more notification(s) did not reach the client, as said above for the first of "
            f"their method ({', '.join(parts)}; the -o capture's serve notes list each)")
