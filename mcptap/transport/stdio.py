"""The stdio tap (trio): spawn the server, relay bytes both ways, record a copy.

    host stdin  ──► [c2s pump] ──► server stdin        then rec.stdio_bytes(C2S, chunk)
    host stdout ◄── [s2c pump] ◄── server stdout       then rec.stdio_bytes(S2C, chunk)
    host stderr ◄── [bounded buffer] ◄── server stderr  rec.stderr(chunk) on read

Forwarding comes first: a pump writes each chunk (up to ``CHUNK`` bytes, as read)
on before the Recorder sees it, and never waits for a full line, a parse or a
disk write. The Recorder is called synchronously after forwarding; if it raises
(a bug in mcptap), recording stops and the relay goes on (design principles 1-3).

Process handling (spec basic/transports stdio, lifecycle Shutdown):

* the server starts in a new session / process group, so a terminal's Ctrl-C
  reaches it once, forwarded by us; SIGINT, SIGTERM and SIGHUP received by
  mcptap are sent to that process group; on Linux the child also gets
  ``PR_SET_PDEATHSIG=SIGTERM`` so a SIGKILLed mcptap leaves no server behind;
* host stdin EOF → close the server's stdin; after ``grace`` s SIGTERM to the
  group; after another ``grace`` s SIGKILL;
* the server exited → its remaining stdout is delivered, then our stdout is
  closed, then the tap returns the exit code (128+N for signal N);
* a command that cannot start → ``exit_code`` 127 (not found) or 126 (found but
  not executable), like a shell.

Host fds: see ``stdio_os`` (FdStream on pipes; blocking I/O in a worker thread
for a tty and for fd 2, so O_NONBLOCK never leaks onto a shared terminal). A
bounded buffer (``STDERR_BUFFER``) decouples the server's stderr from the host's:
a host that stops draining stderr can never block the server (cases/B24);
overflow is dropped for the terminal, still recorded, and reported as
``process.stderr_backpressure``.
"""

from __future__ import annotations

import collections
import errno
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from mcptap.model import Direction
from mcptap.protocol.codes import finding
from mcptap.transport.stdio_os import CHUNK, detach_fd, ensure_std_fds, host_stream, quiet_close, signame, spawn, spawn_exit_code, wait_exit

STDERR_BUFFER = 1 << 20        # bytes of server stderr held for a slow host stderr
ORPHAN_WAIT = 1.0              # s to wait for stdout EOF after the server exited
STDERR_FLUSH_WAIT = 1.0        # s to wait for stderr EOF / delivery at the end
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


@dataclass(slots=True)
class TapResult:
    """Outcome of one stdio tap. ``exit_code``: what mcptap should exit with
    (server code, 128+N if killed by signal N, 127/126 spawn failure);
    ``signal``: N or None; ``spawn_error``: one-line reason or None;
    ``recorder_error``: set when the Recorder raised and recording stopped;
    ``stderr_dropped``: server stderr bytes not shown on the host's stderr."""

    exit_code: int
    signal: int | None = None
    spawn_error: str | None = None
    recorder_error: str | None = None
    stderr_dropped: int = 0


class StdioTap:
    """One run of the stdio tap. ``rec``: the Recorder (see docs/internals.md);
    ``argv``: the command; ``shown_argv``: argv as recorded (secrets scrubbed);
    ``grace``: seconds between stdin EOF, SIGTERM and SIGKILL; ``say``: called
    with mcptap's own one-line messages (no "mcptap: " prefix) before the relay
    starts; during the relay they go through the stderr buffer."""

    def __init__(self, argv: Sequence[str], rec: Any, *, grace: float = 5.0,
                 shown_argv: Sequence[str] | None = None, say: Callable[[str], None] | None = None) -> None:
        self.argv = list(argv)
        self.shown_argv = list(shown_argv if shown_argv is not None else argv)
        self.rec = rec
        self.grace = grace
        self._say_direct = say or (lambda line: sys.stderr.write(f"mcptap: {line}\n"))
        self.result = TapResult(exit_code=0)
        self._pgid = 0
        self._queue: collections.deque[list[Any]] = collections.deque()
        self._exited = trio.Event()
        self._stdout_done = trio.Event()
        self._stderr_read_done = trio.Event()
        self._stdin_eof_at: float | None = None
        self._exit_fields: dict[str, Any] = {}
        self._err_send, self._err_recv = trio.open_memory_channel[bytes](float("inf"))
        self._err_buffered = 0
        self._err_overflowing = False
        self._relay_started = False

    # -- recorder guard ------------------------------------------------------

    # Recording order. The relay writes a chunk on, then records it; a write
    # may yield to the other direction's task, which could then record the
    # server's answer before the request it answers. So each forwarded chunk
    # is queued (an O(1) append) BEFORE it is written, and the queue is drained
    # in order after: the capture keeps causal order and forwarding waits for
    # no analysis.
    def _observe(self, method: str, *args: Any, **fields: Any) -> list[Any]:
        item = [method, args, fields]
        self._queue.append(item)
        return item

    def _withdraw(self, item: list[Any]) -> bool:
        """Take a queued chunk back (its write failed); False if already recorded."""
        for i, x in enumerate(self._queue):
            if x is item:
                del self._queue[i]
                return True
        return False

    def _drain(self) -> None:
        q = self._queue
        while q:
            method, args, fields = q.popleft()
            self._rec_now(method, *args, **fields)

    def _rec(self, method: str, *args: Any, **fields: Any) -> None:
        self._observe(method, *args, **fields)
        self._drain()

    def _rec_now(self, method: str, *args: Any, **fields: Any) -> None:
        if self.result.recorder_error is not None:
            return
        try:
            getattr(self.rec, method)(*args, **fields)
        except Exception as exc:  # noqa: BLE001 - a recorder bug must not kill the relay
            self.result.recorder_error = f"{type(exc).__name__}: {exc}"
            self.say(f"recording stopped ({self.result.recorder_error}); the relay continues")
            try:
                self.rec.record("gap", reason=f"recorder failed: {self.result.recorder_error}")
            except Exception:  # noqa: BLE001
                pass

    def say(self, line: str) -> None:
        """One mcptap message line on stderr (through the stderr buffer once relaying)."""
        if self._relay_started:
            self._stderr_out(f"mcptap: {line}\n".encode("utf-8", "replace"))
        else:
            self._say_direct(line)

    # -- entry ---------------------------------------------------------------

    async def run(self) -> TapResult:
        """Spawn, relay until the server exited and its output is delivered;
        returns the TapResult. Never raises for peer behaviour."""
        ensure_std_fds()
        with trio.open_signal_receiver(*FORWARDED_SIGNALS) as signals:
            try:
                popen, in_w, out_r, err_r = spawn(self.argv)
            except (OSError, ValueError) as exc:          # ValueError: NUL byte in argv
                errnum = getattr(exc, "errno", None) or 0
                reason = getattr(exc, "strerror", None) or str(exc)
                self.result.exit_code = spawn_exit_code(exc) if isinstance(exc, OSError) else 126
                self.result.spawn_error = f"cannot run {self.argv[0]!r}: {reason}"
                self._rec("process", "spawn_failed", argv=self.shown_argv, error=reason,
                          errno=errno.errorcode.get(errnum, str(errnum)), exit_code=self.result.exit_code,
                          findings=[finding("process.spawn_failed", self.result.spawn_error,
                                            {"exit_code": self.result.exit_code})])
                self.say(self.result.spawn_error)
                return self.result
            self._pgid = popen.pid
            self._rec("process", "spawn", pid=popen.pid, argv=self.shown_argv)
            child_in = trio.lowlevel.FdStream(in_w)
            child_out = trio.lowlevel.FdStream(out_r)
            child_err = trio.lowlevel.FdStream(err_r)
            host_in, host_out = host_stream(0), host_stream(1)
            host_err = host_stream(2, threaded=True)
            self._relay_started = True
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._forward_signals, signals, nursery)
                    nursery.start_soon(self._c2s, host_in, child_in, nursery)
                    nursery.start_soon(self._s2c, child_out, host_out)
                    nursery.start_soon(self._stderr_reader, child_err)
                    nursery.start_soon(self._stderr_writer, host_err)
                    await self._wait_exit(popen)
                    await self._finish(host_out)
                    nursery.cancel_scope.cancel()
            finally:
                self._relay_started = False
                for stream in (child_in, child_out, child_err, host_in, host_out, host_err):
                    await quiet_close(stream)
        return self.result

    # -- process -------------------------------------------------------------

    async def _wait_exit(self, popen: subprocess.Popen[bytes]) -> None:
        pid = popen.pid
        code = await wait_exit(popen)
        fields: dict[str, Any] = {"pid": pid}
        if code < 0:
            self.result.signal = -code
            self.result.exit_code = 128 - code
            fields["signal"] = -code
            fields["signal_name"] = signame(-code)
        else:
            self.result.exit_code = code
            fields["code"] = code
        if self._stdin_eof_at is not None:
            fields["since_stdin_eof_s"] = round(trio.current_time() - self._stdin_eof_at, 3)
        self._exit_fields = fields
        self._exited.set()

    def _signal_group(self, signum: int, reason: str) -> None:
        try:
            os.killpg(self._pgid, signum)
            delivered = True
        except (ProcessLookupError, PermissionError):     # group already gone
            delivered = False
        fs = []
        if reason == "forwarded":
            fs.append(finding("process.signal_forwarded", f"mcptap received {signame(signum)} and forwarded it to the server's process group",
                              {"signal": signame(signum)}))
        self._rec("process", "signal", signal=signame(signum), reason=reason, pgid=self._pgid, delivered=delivered, findings=fs)

    async def _forward_signals(self, signals: Any, nursery: trio.Nursery) -> None:
        """Forward SIGINT/SIGTERM/SIGHUP to the server's group. A server may
        ignore them (or wait for stdin EOF that a host never sends), so a
        second signal escalates: SIGTERM, then SIGKILL after --grace; a third
        kills at once. The first is always only forwarded (the server decides)."""
        received = 0
        async for signum in signals:
            received += 1
            self._signal_group(signum, "forwarded")
            if received == 2:
                self.say(f"{signame(signum)} again: stopping the server (SIGTERM, SIGKILL after {self.grace:g} s)")
                nursery.start_soon(self._escalate)
            elif received >= 3:
                self._signal_group(signal.SIGKILL, "escalation")

    async def _escalate(self) -> None:
        self._signal_group(signal.SIGTERM, "escalation")
        with trio.move_on_after(self.grace):
            await self._exited.wait()
            return
        self._signal_group(signal.SIGKILL, "escalation")

    async def _after_stdin_eof(self) -> None:
        """Shutdown sequence of the spec: stdin closed → grace → SIGTERM → grace → SIGKILL
        (to the process group; continues if an orphan still holds stdout)."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(self.grace):
                await self._exited.wait()
                await self._stdout_done.wait()
                return
            if signum == signal.SIGTERM:
                self._rec("process", "no_exit_after_stdin_eof", seconds=self.grace, findings=[finding(
                    "process.no_exit_after_stdin_eof", f"server still running {self.grace:g} s after its stdin was closed: sending SIGTERM",
                    {"seconds": self.grace})])
            self._signal_group(signum, "shutdown")

    async def _finish(self, host_out: trio.abc.Stream) -> None:
        with trio.move_on_after(ORPHAN_WAIT):
            await self._stdout_done.wait()
        if not self._stdout_done.is_set():
            self._rec("process", "exited_but_stdout_open", pid=self._pgid, findings=[finding(
                "process.exited_but_stdout_open", "the server exited but its stdout is still open (a descendant holds it); relaying on")])
            await self._stdout_done.wait()
        await quiet_close(host_out)
        detach_fd(1)
        with trio.move_on_after(STDERR_FLUSH_WAIT):
            await self._stderr_read_done.wait()
        fields = dict(self._exit_fields)
        if self.result.stderr_dropped:
            fields["stderr_dropped"] = self.result.stderr_dropped
        self._rec("exit", **fields)
        self._err_send.close()
        with trio.move_on_after(STDERR_FLUSH_WAIT):
            while self._err_buffered and not self._host_err_broken:
                await trio.sleep(0.01)

    # -- pumps ---------------------------------------------------------------

    async def _c2s(self, host_in: Any, child_in: Any, nursery: trio.Nursery) -> None:
        while True:
            try:
                data = await host_in.receive_some(CHUNK)
            except _BROKEN:
                data = b""
            if not data:
                break
            item = self._observe("stdio_bytes", Direction.C2S, data)
            try:
                await child_in.send_all(data)
            except _BROKEN:
                # the server closed its stdin: stop reading, so the host gets
                # EPIPE on its next write, as it would talking to the server directly
                recorded = not self._withdraw(item)
                self._rec("process", "stdin_closed_by_server", undelivered_bytes=len(data), recorded_anyway=recorded)
                self._rec("stdio_eof", Direction.C2S)
                await quiet_close(host_in)
                detach_fd(0)
                return
            self._drain()
        await quiet_close(child_in)
        self._stdin_eof_at = trio.current_time()
        self._rec("stdio_eof", Direction.C2S)
        nursery.start_soon(self._after_stdin_eof)

    async def _s2c(self, child_out: Any, host_out: Any) -> None:
        try:
            while True:
                try:
                    data = await child_out.receive_some(CHUNK)
                except _BROKEN:
                    data = b""
                if not data:
                    self._rec("stdio_eof", Direction.S2C)
                    return
                item = self._observe("stdio_bytes", Direction.S2C, data)
                try:
                    await host_out.send_all(data)
                except _BROKEN:
                    # the host closed our stdout: close the server's, so it gets
                    # EPIPE/SIGPIPE like a direct pipe would give it
                    recorded = not self._withdraw(item)
                    self._rec("process", "stdout_closed_by_host", undelivered_bytes=len(data), recorded_anyway=recorded)
                    await quiet_close(child_out)
                    return
                self._drain()
        finally:
            self._stdout_done.set()

    async def _stderr_reader(self, child_err: Any) -> None:
        try:
            while True:
                try:
                    data = await child_err.receive_some(CHUNK)
                except _BROKEN:
                    data = b""
                if not data:
                    return
                self._rec("stderr", data)
                self._stderr_out(data)
        finally:
            self._stderr_read_done.set()

    _host_err_broken = False

    def _stderr_out(self, data: bytes) -> None:
        """Queue bytes for the host's stderr; never blocks."""
        if self._host_err_broken:
            return
        if self._err_buffered + len(data) > STDERR_BUFFER:
            self.result.stderr_dropped += len(data)
            if not self._err_overflowing:
                self._err_overflowing = True
                self._rec("process", "stderr_backpressure", state="dropping", buffered_bytes=self._err_buffered, findings=[finding(
                    "process.stderr_backpressure", f"the host is not draining mcptap's stderr: {self._err_buffered} bytes buffered, "
                    "further server stderr is recorded but not shown until it drains")])
            return
        try:
            self._err_send.send_nowait(data)
        except (trio.ClosedResourceError, trio.WouldBlock):
            return
        self._err_buffered += len(data)

    async def _stderr_writer(self, host_err: Any) -> None:
        async for data in self._err_recv:
            parts, size = [data], len(data)
            while size < CHUNK:                     # coalesce a flood into fewer writes
                try:
                    more = self._err_recv.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                parts.append(more)
                size += len(more)
            if not self._host_err_broken:
                try:
                    await host_err.send_all(b"".join(parts) if len(parts) > 1 else data)
                except _BROKEN:
                    self._host_err_broken = True
            self._err_buffered -= size
            if self._err_overflowing and self._err_buffered <= STDERR_BUFFER // 2:
                self._err_overflowing = False
                self._rec("process", "stderr_backpressure", state="recovered", dropped_bytes=self.result.stderr_dropped)


async def run_stdio_tap(argv: Sequence[str], rec: Any, *, grace: float = 5.0,
                        shown_argv: Sequence[str] | None = None,
                        say: Callable[[str], None] | None = None) -> TapResult:
    """Run the stdio tap on this process's fds 0/1/2 (see the module docstring)."""
    return await StdioTap(argv, rec, grace=grace, shown_argv=shown_argv, say=say).run()
