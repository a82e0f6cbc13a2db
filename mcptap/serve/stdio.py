"""``mcptap serve CAPTURE`` over stdio (trio, level 4): the mock is the server command.

    result = await serve_stdio(core, rec)      # reads fd 0, writes fd 1 until stdin EOF

Newline-delimited JSON-RPC in on stdin; each parsed message goes to the
:class:`~mcptap.serve.core.ServeCore`, whose answers are written to stdout
(nothing else ever is). With a Recorder (``-o``), both directions are recorded
as a normal stdio capture, each message recorded before it is written (so an
answer is never recorded before its request); the mock's own findings
(``serve.no_recorded_answer``) ride on the error responses.

Outputs with a delay (``--latency recorded``) are written by one task per
triggering message, in order, at their time; a cancelled request's delayed
answer and progress are dropped. At stdin EOF the mock stops: answers still
waiting for their time are not sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import trio

from mcptap.model import UNPARSED, Direction
from mcptap.protocol.framing import NewlineFramer
from mcptap.serve.core import LiveSession, Out, ServeCore, hkey
from mcptap.transport.stdio_os import host_stream, quiet_close

C2S, S2C = Direction.C2S, Direction.S2C
CHUNK = 64 * 1024


@dataclass
class ServeResult:
    """What the mock saw: client messages, answers written, the requests it
    could not answer (one line each)."""

    received: int = 0
    sent: int = 0
    unanswered: list[str] = field(default_factory=list)


class StdioServer:
    """One stdio session of the mock (see module docstring). ``rec``: a
    Recorder or None; ``stdin_fd``/``stdout_fd``: the host's pipes."""

    def __init__(self, core: ServeCore, rec: Any = None, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self.core = core
        self.rec = rec
        self.stdin_fd, self.stdout_fd = stdin_fd, stdout_fd
        self.live: LiveSession = core.open()
        self.result = ServeResult()
        self._send, self._recv = trio.open_memory_channel[tuple[bytes, Any]](float("inf"))
        self._framer = NewlineFramer()
        self._written = trio.Event()

    def _values(self, chunk: bytes) -> list[Any]:
        if self.rec is not None:
            msgs = self.rec.stdio_bytes(C2S, chunk) if chunk else self.rec.stdio_eof(C2S)
            return [m.value for m in msgs if m.value is not UNPARSED]
        return [f.value for f in self._framer.receive_data(chunk) if f.value is not UNPARSED]

    def _queue(self, outs: list[Out], nursery: trio.Nursery) -> None:
        now = [o for o in outs if o.delay_s <= 0]
        if len(now) == len(outs):
            for o in outs:
                self._send.send_nowait((orjson.dumps(o.value) + b"\n", o.finding))
            return
        nursery.start_soon(self._later, outs, trio.current_time())

    async def _later(self, outs: list[Out], t0: float) -> None:
        for o in outs:
            await trio.sleep_until(t0 + o.delay_s)
            if o.request is not None and hkey(o.request) in self.live.cancelled:
                continue
            try:
                self._send.send_nowait((orjson.dumps(o.value) + b"\n", o.finding))
            except trio.ClosedResourceError:
                return

    async def _writer(self, out: trio.abc.SendStream) -> None:
        try:
            await self._write_all(out)
        finally:
            self._written.set()

    async def _write_all(self, out: trio.abc.SendStream) -> None:
        async for line, fnd in self._recv:
            if self.rec is not None:
                self.rec.stdio_bytes(S2C, line, extra=(fnd,) if fnd is not None else ())
            try:
                await out.send_all(line)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            self.result.sent += 1

    async def run(self) -> ServeResult:
        """Serve until stdin EOF (or stdout is closed by the host)."""
        host_in = host_stream(self.stdin_fd)
        host_out = host_stream(self.stdout_fd)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, host_out)
                self._queue(self.core.opening(self.live), nursery)
                while True:
                    try:
                        chunk = await host_in.receive_some(CHUNK)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        chunk = b""
                    for value in self._values(bytes(chunk)):
                        self.result.received += 1
                        self._queue(self.core.receive(self.live, value), nursery)
                    if not chunk:
                        break
                # let the writer drain what is due now; delayed answers are abandoned
                self._send.close()
                with trio.move_on_after(5):
                    await self._written.wait()
                nursery.cancel_scope.cancel()
        finally:
            await quiet_close(host_in)
            await quiet_close(host_out)
            if self.rec is not None:
                self.rec.stdio_eof(S2C)
        self.result.unanswered = list(self.live.unanswered)
        return self.result


async def serve_stdio(core: ServeCore, rec: Any = None) -> ServeResult:
    """Serve one stdio session on fds 0/1 (see StdioServer)."""
    return await StdioServer(core, rec).run()
