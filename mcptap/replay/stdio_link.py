"""The stdio replay link (trio, level 4): spawn the server and talk
newline-delimited JSON-RPC to it, recording every byte.

``StdioLink(argv, rec, grace=2.0, shown_argv=None)`` implements the runner's link
interface (see runner.py)::

    await link.start(nursery, deliver, closed)  # deliver(value, session) async; closed() sync
    await link.send(value, session)             # one c2s message (never waits for its answer)
    await link.aclose()                         # stdin EOF, then SIGTERM / SIGKILL after ``grace`` s

The process is spawned like ``mcptap record`` does it (``transport.stdio.spawn``:
new session, PDEATHSIG); ``exit_code`` (128+N for signal N) and ``error`` are
set for the runner once the session ends.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from mcptap.capture.dumps import dumps
from mcptap.errors import SpawnError
from mcptap.model import UNPARSED, Direction
from mcptap.protocol.jsonparse import exact_value
from mcptap.recorder import Recorder

C2S, S2C = Direction.C2S, Direction.S2C
CHUNK = 64 * 1024
#: The runner's callback for one s2c JSON value: ``await deliver(value, session)``.
Deliver = Callable[[Any, Any], Awaitable[None]]


class StdioLink:
    """Spawn ``argv`` (new session, PDEATHSIG, like ``mcptap record``) and talk
    newline-delimited JSON-RPC to it; every byte goes through ``rec``.
    ``grace``: seconds between stdin EOF, SIGTERM and SIGKILL at the end."""

    def __init__(self, argv: Sequence[str], rec: Recorder, grace: float = 2.0, shown_argv: Sequence[str] | None = None) -> None:
        self.argv = list(argv)
        self.shown = list(shown_argv or argv)
        self.rec = rec
        self.grace = grace
        self.exit_code: int | None = None
        self.error: str | None = None
        self._send_ch, self._recv_ch = trio.open_memory_channel[bytes](float("inf"))
        self._exited = trio.Event()
        self._out_done = trio.Event()
        self._popen: subprocess.Popen[bytes] | None = None

    async def start(self, nursery: trio.Nursery, deliver: Deliver, closed: Callable[[], None]) -> None:
        from mcptap.transport.stdio_os import spawn, spawn_exit_code, spawn_problem

        try:
            popen, in_w, out_r, err_r = spawn(self.argv)
        except OSError as exc:
            self.rec.process("spawn_failed", argv=self.shown, error=exc.strerror or str(exc),
                             errno=errno.errorcode.get(exc.errno or 0, str(exc.errno)), exit_code=spawn_exit_code(exc))
            raise SpawnError(f"cannot run {self.argv[0]!r}: {spawn_problem(self.argv[0], exc)}") from None
        self._popen = popen
        self.rec.process("spawn", pid=popen.pid, argv=self.shown)
        nursery.start_soon(self._writer, trio.lowlevel.FdStream(in_w))
        nursery.start_soon(self._reader, trio.lowlevel.FdStream(out_r), deliver, closed)
        nursery.start_soon(self._stderr, trio.lowlevel.FdStream(err_r))
        nursery.start_soon(self._wait_exit, popen)

    async def send(self, value: Any, session: Any = None) -> None:
        try:
            self._send_ch.send_nowait(dumps(value) + b"\n")
        except trio.ClosedResourceError:
            # the server's stdin is already closed (the replayed client side is done, or
            # the server closed it): an answer to a late server request cannot arrive;
            # the new capture shows that request unanswered
            pass

    async def _writer(self, stdin: trio.lowlevel.FdStream) -> None:
        async with stdin:
            async for line in self._recv_ch:
                # recorded before the write: the write may yield to the reader task,
                # which must not record the answer before its request
                self.rec.stdio_bytes(C2S, line)
                try:
                    await stdin.send_all(line)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    self.rec.process("stdin_closed_by_server", undelivered_bytes=len(line), recorded_anyway=True)
                    break
        self.rec.stdio_eof(C2S)

    async def _reader(self, stdout: trio.lowlevel.FdStream, deliver: Deliver, closed: Callable[[], None]) -> None:
        async with stdout:
            while True:
                try:
                    chunk = await stdout.receive_some(CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    chunk = b""
                if not chunk:
                    break
                for msg in self.rec.stdio_bytes(S2C, chunk):
                    if msg.value is not UNPARSED:
                        await deliver(exact_value(msg.value, msg.raw), None)
        for msg in self.rec.stdio_eof(S2C):
            if msg.value is not UNPARSED:
                await deliver(exact_value(msg.value, msg.raw), None)
        self._out_done.set()
        closed()

    async def _stderr(self, stream: trio.lowlevel.FdStream) -> None:
        async with stream:
            while True:
                try:
                    chunk = await stream.receive_some(CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    return
                if not chunk:
                    return
                self.rec.stderr(chunk)

    async def _wait_exit(self, popen: subprocess.Popen[bytes]) -> None:
        try:
            pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):
            pidfd = -1
        try:
            if pidfd >= 0:
                await trio.lowlevel.wait_readable(pidfd)
                _, status = os.waitpid(popen.pid, 0)
            else:
                _, status = await trio.to_thread.run_sync(os.waitpid, popen.pid, 0, abandon_on_cancel=True)
        finally:
            if pidfd >= 0:
                os.close(pidfd)
        code = os.waitstatus_to_exitcode(status)
        popen.returncode = code
        self.exit_code = code if code >= 0 else 128 - code
        if code < 0:
            self.rec.exit(signal=-code, pid=popen.pid)
        else:
            self.rec.exit(code=code, pid=popen.pid)
        self._exited.set()

    async def aclose(self) -> None:
        """Close the server's stdin, wait ``grace`` s, SIGTERM its group, then SIGKILL."""
        self._send_ch.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(self.grace):
                await self._exited.wait()
            if self._exited.is_set() or self._popen is None:
                break
            try:
                os.killpg(self._popen.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            self.rec.process("signal", signal=int(sig), reason="replay finished")
        with trio.move_on_after(self.grace):
            await self._exited.wait()
        with trio.move_on_after(1.0):
            await self._out_done.wait()
