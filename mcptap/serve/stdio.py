"""``mcptap serve CAPTURE`` over stdio (trio, level 4): the mock is the server command.

    result = await serve_stdio(core, rec)      # reads fd 0, writes fd 1 until stdin EOF

Newline-delimited JSON-RPC in on stdin; each parsed message goes to the
:class:`~mcptap.serve.core.ServeCore`, whose answers are written to stdout
(nothing else ever is), the recorded server lines that are not messages (a
banner, a blank line) byte for byte as the real server wrote them. With a Recorder (``-o``), both directions are recorded
as a normal stdio capture, each message recorded before it is written (so an
answer is never recorded before its request); the mock's own findings
(``serve.no_recorded_answer``) ride on the error responses.

With ``fallback`` (``--extend -- CMD``), requests the capture has no answer
for go to the real server instead (serve/fallback.py), and its answers to the client;
so do the client's notifications about them (a cancel). The handshake
(``initialize``, ``server/discover``) is never forwarded: the capture's era is the
session's, and a handshake of the other era gets the mock's own error (-32601), on
which an SDK client in auto mode falls back to the capture's. The real server's
stderr and process start and exit go into the Recorder as a tap records them.

SIGTERM (a host stopping its server; the SDK's stdio client sends it 2 s after
closing stdin), SIGINT (Ctrl-C), SIGHUP and SIGQUIT end the session as stdin EOF
does, without waiting for answers still due: ``ServeResult.signal`` says which, and
the caller finishes the capture (``--extend``: merges the session). A real server
running is shut down as at stdin EOF, only sooner; a second stop signal sends it
SIGTERM, a third SIGKILL. SIGUSR1, SIGUSR2 and SIGALRM go on to its process group
and change nothing else (without one the caller ignores those). The receiver is in place
before stdin is read, so no forwarded exchange precedes it; what came before it
(``early``, the caller's SignalLatch) is handled as if it came then.

JSON-RPC 2.0 as the HTTP mock answers it: the answers to a batch's requests go
out as one array (when the last of them is due), an invalid request (a member
that is not a message too) gets ``-32600 Invalid Request`` (serve/wire.py), an
empty batch one such error, and a line that is not JSON ``-32700 Parse error`` (id null).

Outputs with a delay (``--latency recorded``) are written by one task per
triggering message, in order, at their time, each after the earlier ones for
the same client request (serve/order.py); a cancelled request's delayed
answer and progress are dropped. At stdin EOF the answers still waiting for
their time are given (for up to a minute), then the mock ends.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import trio

from mcptap.compare.match import HANDSHAKE_METHODS
from mcptap.errors import SpawnError
from mcptap.model import UNPARSED, Direction
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.jsonparse import exact_value
from mcptap.recorder import Recorder
from mcptap.serve.core import ServeCore
from mcptap.serve.fallback import Fallback
from mcptap.serve.live import LiveSession, Out, line_of
from mcptap.serve.order import InOrder
from mcptap.serve.unanswered import asked
from mcptap.serve.wire import hkey
from mcptap.transport.signal_latch import FORWARDED_SIGNALS, PASSED_ON_SIGNALS, STOP_SIGNALS, SignalLatch, open_receiver
from mcptap.transport.stdio_os import host_stream, quiet_close

C2S, S2C = Direction.C2S, Direction.S2C
CHUNK = 64 * 1024
#: seconds the mock keeps giving delayed answers after stdin EOF
DELAYED_AT_EOF = 60.0


@dataclass
class ServeResult:
    """What the mock saw: client messages, answers written, the requests it
    could not answer (one line each)."""

    received: int = 0
    sent: int = 0
    forwarded: int = 0                 # --extend: requests sent to the real server
    answered: int = 0                  # --extend: of those, answered by it
    errors: int = 0                    # --extend: of those answers, JSON-RPC errors
    lost: int = 0                      # --extend: forwarded, never answered: the real server exited first (the mock's error given)
    signal: int = 0                    # the signal that ended the session (SIGTERM, SIGINT), 0 for stdin EOF
    unanswered: list[str] = field(default_factory=list)
    #: with a Recorder: the seqs of the notifications it recorded that the mock replayed from
    #: the capture (``--extend`` does not add them to the capture again: they are in it already)
    replayed: set[int] = field(default_factory=set)


class StdioServer:
    """One stdio session of the mock (see module docstring). ``rec``: a
    Recorder or None; ``stdin_fd``/``stdout_fd``: the host's pipes."""

    def __init__(self, core: ServeCore, rec: Recorder | None = None, stdin_fd: int = 0, stdout_fd: int = 1,
                 fallback: Sequence[str] | None = None, early: SignalLatch | None = None) -> None:
        self.core = core
        self.early = early                      # the caller's latch: signals that came before ours
        self.rec = rec
        self.stdin_fd, self.stdout_fd = stdin_fd, stdout_fd
        self.live: LiveSession = core.open()
        self.result = ServeResult()
        self._send, self._recv = trio.open_memory_channel[tuple[bytes, tuple[Any, ...], bool]](float("inf"))
        self._framer = NewlineFramer()
        self._written = trio.Event()
        self._delayed = 0                       # tasks still holding answers for their recorded time
        self._order = InOrder()
        self.fallback = Fallback(fallback, self._raw_to_client, on_stderr=self._server_stderr,
                                 on_process=self._server_process, on_lost=self._lost) if fallback else None
        self._asked: dict[Any, tuple[Out, Any]] = {}    # forwarded requests: the mock's own error, the request
        self._reading = trio.CancelScope()     # reading stdin: ended by SIGTERM
        self._waiting = trio.CancelScope()     # waiting for the real server's last answers: likewise
        self._handshake: list[dict[str, Any]] = []
        self._stops = 0                         # stop signals from the host so far

    def _values(self, chunk: bytes) -> list[Any]:
        if self.rec is not None:
            msgs = self.rec.stdio_bytes(C2S, chunk) if chunk else self.rec.stdio_eof(C2S)
            return [exact_value(m.value, m.raw) for m in msgs if m.value is not UNPARSED or m.raw.strip()]
        # a blank line is nothing to answer; any other line that is not JSON gets -32700
        return [exact_value(f.value, f.raw) for f in self._framer.receive_data(chunk) if f.value is not UNPARSED or f.raw.strip()]

    def _queue(self, outs: list[Out], nursery: trio.Nursery) -> None:
        if all(o.delay_s <= 0 for o in outs) and not self._order.waiting(outs):
            for o in outs:
                self._send.send_nowait((line_of(o), _found(o), _notification(o)))
            return
        self._delayed += 1
        nursery.start_soon(self._later, outs, self._order.plan(outs), trio.current_time())

    async def _later(self, outs: list[Out], plan: list[tuple[list[trio.Event], trio.Event]], t0: float) -> None:
        try:
            await self._at_their_time(outs, plan, t0)
        finally:
            self._delayed -= 1
            for o, (_, done) in zip(outs, plan, strict=True):
                self._order.release(o, done)

    async def _at_their_time(self, outs: list[Out], plan: list[tuple[list[trio.Event], trio.Event]], t0: float) -> None:
        for o, (before, done) in zip(outs, plan, strict=True):
            await trio.sleep_until(t0 + o.delay_s)
            await InOrder.turn(before)                 # the request's earlier messages first (serve/order.py)
            if o.request is None or hkey(o.request) not in self.live.cancelled:
                try:
                    self._send.send_nowait((line_of(o), _found(o), _notification(o)))
                except trio.ClosedResourceError:
                    return
            self._order.release(o, done)

    def _server_stderr(self, data: bytes) -> None:
        if self.rec is not None:
            self.rec.stderr(data)

    def _server_process(self, event: str, **fields: Any) -> None:
        if self.rec is None:
            return
        if event == "exit":
            self.rec.exit(**fields)
        else:
            self.rec.process(event, **fields)

    async def _on_signals(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if threading.current_thread() is not threading.main_thread():
            task_status.started()
            return          # embedded: the host's signals are its own business
        # SIGUSR1/SIGUSR2/SIGALRM only with a real server to pass them on to (else the caller's
        # SignalLatch ignores them: their default action would end the mock mid-session)
        with open_receiver(*(FORWARDED_SIGNALS if self.fallback is not None else STOP_SIGNALS)) as signals:
            task_status.started()
            for signum in self.early.take() if self.early is not None else ():     # before this receiver existed
                self._on_host_signal(signum)
            async for signum in signals:      # kept open to the end
                self._on_host_signal(int(signum))

    def _on_host_signal(self, signum: int) -> None:
        """A stop signal ends the session (the first one decides ``result.signal``). The mock
        is the host's server, not ``--extend``'s real one: that one is shut down as the spec
        says (stdin closed, then SIGTERM, SIGKILL: ``run``), so what it was answering still
        gets its answer or error; a repeated stop signal escalates there as under ``record``
        (transport/stdio_signals.py): SIGTERM, then SIGKILL. SIGUSR1/SIGUSR2/SIGALRM are the
        real server's own: passed on, never counted."""
        fb = self.fallback
        if signum in PASSED_ON_SIGNALS:
            if fb is not None:
                fb.signal(signum)
            return
        self._stops += 1
        self.result.signal = self.result.signal or signum
        self._reading.cancel()
        self._waiting.cancel()
        if fb is not None and self._stops > 1:
            fb.signal(signal.SIGTERM if self._stops == 2 else signal.SIGKILL, "escalation")

    def _raw_to_client(self, line: bytes) -> None:
        try:
            self._send.send_nowait((line, (), False))
        except trio.ClosedResourceError:
            pass

    async def _receive(self, value: Any, nursery: trio.Nursery) -> None:
        """One client message: to the core, or (``--extend``) to the real
        server when the capture has no answer for it."""
        fb = self.fallback
        if value is UNPARSED or value == []:
            self._queue([_error(-32700 if value is UNPARSED else -32600)], nursery)
            return
        if fb is None:
            if isinstance(value, list):
                self._batch(value, nursery)
            else:
                self._queue(self.core.receive(self.live, value), nursery)
            return
        if isinstance(value, dict) and value.get("method") in ("initialize", "notifications/initialized"):
            self._handshake.append(value)
        if fb.owns(value) or fb.concerns(value):
            await self._forward(value, nursery)
            return
        outs = self.core.receive(self.live, value)
        if len(outs) == 1 and outs[0].finding is not None and isinstance(value, dict) and value.get("method") not in HANDSHAKE_METHODS:
            self.live.unanswered.pop()
            self._asked[hkey(value.get("id"))] = (outs[0], value)
            if await self._forward(value, nursery):
                return
            self._asked.pop(hkey(value.get("id")), None)
            self.live.unanswered.append(f"{asked(str(value.get('method')), value.get('params'))}: the real server could not be asked")
        self._queue(outs, nursery)

    def _batch(self, batch: list[Any], nursery: trio.Nursery) -> None:
        """A batch: its members' other outputs as they come, the answers to its
        requests (and an error per member that is not a message) as one array."""
        outs = self.core.receive(self.live, batch)
        answers = [o for o in outs if o.answers is not None or o.rejected]      # an invalid member's error among them
        self._queue([o for o in outs if o.answers is None and not o.rejected], nursery)
        if answers:
            found = tuple(o.finding for o in answers if o.finding is not None)
            self._queue([Out([o.value for o in answers], max(o.delay_s for o in answers), finding=found[0] if found else None,
                             more=found[1:])], nursery)

    def _lost(self, lid: Any) -> None:
        """The real server exited without answering the forwarded request ``lid``: the
        client gets the mock's own error for it (the capture has no answer), saying so."""
        got = self._asked.pop(hkey(lid), None)
        if got is None or not isinstance(got[0].value, dict) or not isinstance(got[0].value.get("error"), dict):
            return
        out, value = got
        why = "the real server exited before answering"
        err = {**out.value["error"], "message": f"{out.value['error'].get('message')}; {why} (mcptap serve --extend)"}
        f = replace(out.finding, message=f"{out.finding.message}; {why}") if out.finding is not None else None
        self.live.unanswered.append(f"{asked(str(value.get('method')), value.get('params'))}: {why}")
        try:
            self._send.send_nowait((line_of(replace(out, value={**out.value, "error": err}, finding=f)), (f,) if f else (), False))
        except trio.ClosedResourceError:
            pass

    async def _forward(self, value: Any, nursery: trio.Nursery) -> bool:
        assert self.fallback is not None
        try:
            await self.fallback.forward(nursery, value, self._handshake)
        except SpawnError as exc:
            os.write(2, f"mcptap: {exc}\n".encode())
            return False
        return True

    async def _writer(self, out: trio.abc.SendStream) -> None:
        try:
            await self._write_all(out)
        finally:
            self._written.set()

    async def _write_all(self, out: trio.abc.SendStream) -> None:
        async for line, found, replayed in self._recv:
            if self.rec is not None:
                msgs = self.rec.stdio_bytes(S2C, line, extra=found)
                if replayed:
                    self.result.replayed.update(m.seq for m in msgs)
            try:
                await out.send_all(line)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            self.result.sent += 1

    async def _read(self, host_in: trio.abc.ReceiveStream, nursery: trio.Nursery) -> None:
        while True:
            try:
                chunk = await host_in.receive_some(CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                chunk = b""
            for value in self._values(bytes(chunk)):
                self.result.received += 1
                await self._receive(value, nursery)
            if not chunk:
                return

    async def run(self) -> ServeResult:
        """Serve until stdin EOF (or stdout is closed by the host)."""
        host_in = host_stream(self.stdin_fd)
        host_out = host_stream(self.stdout_fd)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, host_out)
                await nursery.start(self._on_signals)
                self._queue(self.core.opening(self.live), nursery)
                with self._reading:
                    await self._read(host_in, nursery)
                stopping = bool(self.result.signal)
                if self.fallback is not None:
                    # the real server's answers to what was forwarded last (not when stopped:
                    # the host kills us soon, and what was answered is to be kept)
                    with self._waiting:
                        await self.fallback.aclose(wait=not stopping)
                    if self.result.signal:
                        stopping = True
                        await self.fallback.aclose(grace=0.5, wait=False)
                    self._counts(self.fallback)
                # answers waiting for their recorded time are still given (the client may
                # have closed stdin right after its requests); then the writer drains
                with trio.move_on_after(0 if stopping else DELAYED_AT_EOF):
                    while self._delayed:
                        await trio.sleep(0.005)
                self._send.close()
                with trio.move_on_after(0.5 if stopping else 5):
                    await self._written.wait()
                nursery.cancel_scope.cancel()
        finally:
            await quiet_close(host_in)
            await quiet_close(host_out)
            if self.rec is not None:
                self.rec.stdio_eof(S2C)
            self.result.unanswered = list(self.live.unanswered)
            if self.fallback is not None:
                self._counts(self.fallback)
        return self.result

    def _counts(self, fb: Fallback) -> None:
        self.result.forwarded, self.result.answered, self.result.errors, self.result.lost = fb.forwarded, fb.answered, fb.errors, fb.lost


async def serve_stdio(core: ServeCore, rec: Recorder | None = None, fallback: Sequence[str] | None = None) -> ServeResult:
    """Serve one stdio session on fds 0/1 (see StdioServer)."""
    return await StdioServer(core, rec, fallback=fallback).run()


def _found(o: Out) -> tuple[Any, ...]:
    """The findings the line of ``o`` carries into the ``-o`` capture."""
    return ((o.finding,) if o.finding is not None else ()) + o.more


def _notification(o: Out) -> bool:
    """Whether ``o`` is a notification or a line that is not a message (the core sends only
    recorded ones: replayed, already in the capture)."""
    return o.raw is not None or isinstance(o.value, dict) and "method" in o.value and "id" not in o.value


def _error(code: int) -> Out:
    """A JSON-RPC error to a message that had no id to answer (JSON-RPC 2.0 §5.1)."""
    message = "Parse error" if code == -32700 else "Invalid Request"
    return Out({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, answers=None)
