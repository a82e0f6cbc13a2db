"""The stdio replay link (trio, level 4): spawn the server and talk
newline-delimited JSON-RPC to it, recording every byte.

``StdioLink(argv, rec, grace=2.0, shown_argv=None)`` implements the runner's link
interface (see runner.py)::

    await link.start(nursery, deliver, closed)  # deliver(value, session) async; closed() sync
    await link.send(value, session)             # one c2s message (never waits for its answer)
    await link.aclose()                         # stdin EOF, then SIGTERM / SIGKILL after ``grace`` s

The process is spawned like ``mcptap record`` does it (``transport.stdio.spawn``:
new session, PDEATHSIG); ``exit_code`` (128+N for signal N), ``ended_by`` (N
when that signal was replay's own, ``aclose``: the server outlived its stdin)
and ``error`` are set for the runner once the session ends. Recording is off the write and read
paths (``replay/offpath.py``): a request is written as soon as it is sent, an
answer handed to the runner as soon as it is read (framed and parsed here, once:
the Recorder is given that parse),
and the Recorder annotates both on a worker thread, in the order they happened.
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
from mcptap.model import UNPARSED, Direction, Frame
from mcptap.protocol.framing import NewlineFramer, Parses
from mcptap.protocol.jsonparse import exact_value
from mcptap.recorder import Recorder
from mcptap.replay.offpath import OffPath
from mcptap.replay.steps import read_id

C2S, S2C = Direction.C2S, Direction.S2C
CHUNK = 64 * 1024
#: why a request the server never read is unanswered
STDIN_NOTE = "not delivered: the server had closed its stdin"
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
        #: the signal replay itself sent to end a server that outlived its stdin (``aclose``), when that ended it
        self.ended_by: int | None = None
        self.error: str | None = None
        self._send_ch, self._recv_ch = trio.open_memory_channel[tuple[bytes, Any]](float("inf"))
        #: the runner's: ``written(value, at)`` once a message is written whole; its answer's latency
        #: counts from ``at`` (trio clock, s: when it was stamped, right before its one write) or from now (None)
        self.written: Callable[[Any, float | None], None] | None = None
        #: the runner's: ``lost(ids, note)`` settles the requests with these ids as unanswered
        self.lost: Callable[[list[Any], str], None] | None = None
        self._exited = trio.Event()
        self._out_done = trio.Event()
        self._popen: subprocess.Popen[bytes] | None = None
        self._signal: int | None = None     # the signal that ended the server, if one did
        self.off = OffPath(rec)

    async def start(self, nursery: trio.Nursery, deliver: Deliver, closed: Callable[[], None]) -> None:
        from mcptap.transport.stdio_os import drain, spawn, spawn_exit_code, spawn_problem

        try:
            popen, in_w, out_r, err_r = spawn(self.argv)
        except OSError as exc:
            self.rec.process("spawn_failed", argv=self.shown, error=exc.strerror or str(exc),
                             errno=errno.errorcode.get(exc.errno or 0, str(exc.errno)), exit_code=spawn_exit_code(exc))
            raise SpawnError(f"cannot run {self.argv[0]!r}: {spawn_problem(self.argv[0], exc)}") from None
        self._popen = popen
        self.rec.process("spawn", pid=popen.pid, argv=self.shown)
        nursery.start_soon(self.off.run)
        nursery.start_soon(self._writer, trio.lowlevel.FdStream(in_w))
        nursery.start_soon(self._reader, trio.lowlevel.FdStream(out_r), deliver, closed)
        nursery.start_soon(drain, trio.lowlevel.FdStream(err_r), self._stderr)
        nursery.start_soon(self._wait_exit, popen)

    async def send(self, value: Any, session: Any = None) -> None:
        try:
            self._send_ch.send_nowait((dumps(value) + b"\n", value))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            # the server's stdin is already closed (the replayed client side is done, or
            # the server closed it): an answer to a late server request cannot arrive;
            # the new capture shows that request unanswered; a request is said unanswered now
            self._undelivered(value)

    def _undelivered(self, value: Any) -> None:
        """``value`` was never written: the requests in it are settled unanswered at once (not
        after the timeout: the server cannot answer what it never read)."""
        ids = [read_id(v["id"]) for v in (value if isinstance(value, list) else (value,)) if isinstance(v, dict) and "method" in v and "id" in v]
        if ids and self.lost is not None:
            self.lost(ids, STDIN_NOTE)

    async def _writer(self, stdin: trio.lowlevel.FdStream) -> None:
        async with stdin:
            async for line, value in self._recv_ch:
                # its place and time taken right before it is written (the answer, read meanwhile,
                # is queued after it), its analysis made after (off this path); the runner times
                # the answer from that same instant (``at``), not from when this task gets the
                # thread back after the write (late under load: the answer may be in by then)
                at: float | None = trio.current_time()
                self.off.call(self.rec.stdio_bytes, C2S, line, size=len(line))
                try:
                    with self.off.writing():
                        done = _write_now(stdin, line)
                        if done < len(line):
                            # the pipe is full (a big request, a server slow to read): timed from its
                            # last byte, so the time the server takes to read it does not count
                            await stdin.send_all(memoryview(line)[done:])
                            at = None
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    self.off.call(self.rec.process, "stdin_closed_by_server", undelivered_bytes=len(line), recorded_anyway=True)
                    # this message and those queued behind it never reach the server, nor do later ones (send)
                    self._undelivered(value)
                    while True:
                        try:
                            self._undelivered(self._recv_ch.receive_nowait()[1])
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    self._recv_ch.close()
                    break
                if self.written is not None:
                    self.written(value, at)
        self.off.call(self.rec.stdio_eof, C2S)

    async def _reader(self, stdout: trio.lowlevel.FdStream, deliver: Deliver, closed: Callable[[], None]) -> None:
        # framed here as the Recorder frames it (the same bytes cut the same frames), so an
        # answer reaches the runner without waiting for the analysis of what came before;
        # parsed once, here: the Recorder's framer takes each line's parse from ``parsed``,
        # filled right after the call is stamped and queued (its time stays the read's) and
        # before the worker can take it (it takes calls only while this task awaits)
        framer = NewlineFramer()
        async with stdout:
            while True:
                try:
                    chunk = await stdout.receive_some(CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    chunk = b""
                if not chunk:
                    break
                parsed: Parses = []
                framer.parses = parsed
                self.off.call(self.rec.stdio_bytes, S2C, chunk, size=len(chunk), parsed=parsed)
                frames = framer.receive_data(chunk)
                await _deliver(frames, deliver)
                await self.off.room()
        framer.parses = parsed = []     # (the unterminated last line's)
        self.off.call(self.rec.stdio_eof, S2C, parsed=parsed)
        frames = framer.receive_data(b"")
        await _deliver(frames, deliver)
        self._out_done.set()
        closed()

    def _stderr(self, chunk: bytes | bytearray) -> None:
        self.off.call(self.rec.stderr, chunk, size=len(chunk))

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
            self._signal = -code
            self.off.call(self.rec.exit, signal=-code, pid=popen.pid)
        else:
            self.off.call(self.rec.exit, code=code, pid=popen.pid)
        self._exited.set()

    def signal(self, signum: int, reason: str = "forwarded") -> None:
        """Send ``signum`` to the server's process group now (a host's signal passed on,
        ``replay/stop.py``; an escalation), recorded; nothing once it has exited."""
        if self._popen is None or self._exited.is_set():
            return
        try:
            os.killpg(self._popen.pid, signum)
        except (ProcessLookupError, PermissionError):
            return
        self.off.call(self.rec.process, "signal", signal=int(signum), reason=reason)

    async def aclose(self) -> None:
        """Close the server's stdin, wait ``grace`` s, SIGTERM its group, then SIGKILL."""
        self._send_ch.close()
        sent: set[int] = set()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(self.grace):
                await self._exited.wait()
            if self._exited.is_set() or self._popen is None:
                break
            try:
                os.killpg(self._popen.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            self.off.call(self.rec.process, "signal", signal=int(sig), reason="replay finished")
            sent.add(int(sig))
        with trio.move_on_after(self.grace):
            await self._exited.wait()
        if self._signal in sent:
            self.ended_by = self._signal    # its status (128+N) is replay's doing, not the server's
        with trio.move_on_after(1.0):
            await self._out_done.wait()
        await self.off.drain()


def _write_now(stdin: trio.lowlevel.FdStream, line: bytes) -> int:
    """Write what the (non-blocking) pipe takes of ``line`` now, without yielding
    to another task between the stamp and the write; bytes written (0: the pipe is
    full). Raises OSError (EPIPE: the server closed its stdin)."""
    try:
        return os.write(stdin.fileno(), line)
    except BlockingIOError:
        return 0


async def _deliver(frames: list[Frame], deliver: Deliver) -> None:
    for f in frames:
        if f.value is not UNPARSED:
            await deliver(exact_value(f.value, f.raw), None)
