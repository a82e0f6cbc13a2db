"""The stdio tap: spawn the server, relay bytes both ways, record a copy.

    host stdin  ──► [relay process: c2s thread] ──► server stdin
    host stdout ◄── [relay process: s2c thread] ◄── server stdout
                         │ copy of each chunk, in read order
                         ▼
    copy reader thread ──► Handoff ──► recorder thread ──► Recorder
    host stderr ◄── [bounded buffer] ◄── server stderr   (trio; rec.stderr on read)

Forwarding comes first: the bytes move in a forked relay process
(``relay_child``) with one blocking pump thread per direction; between a read
and its write a pump only appends the chunk to an ordered queue whose copy
goes to this process through a pipe. So forwarding never waits for a parse,
an annotation, a disk write, trio's scheduler or this process's GIL. The
recorder thread feeds the Recorder in that order (causal order); when it falls
behind, chunks are stored unframed and annotated later (``handoff``). If the
Recorder raises (a bug in mcptap), recording stops and the relay goes on
(design principles 1-3).

Process handling (spec basic/transports stdio, lifecycle Shutdown):

* the server starts in a new session / process group, so a terminal's Ctrl-C
  reaches it once, forwarded by us; the signals received by mcptap that a host
  sends to stop a server (SIGINT, SIGTERM, SIGHUP, SIGQUIT) or meant for the
  server itself (SIGUSR1, SIGUSR2, SIGALRM) are sent to that process group; on Linux the child also gets
  ``PR_SET_PDEATHSIG=SIGTERM`` so a SIGKILLed mcptap leaves no server behind;
* host stdin EOF → close the server's stdin; after ``grace`` s SIGTERM to the
  group; after another ``grace`` s SIGKILL;
* the server exited → its remaining stdout is delivered, then our stdout is
  closed, then the tap returns the exit code (128+N for signal N);
* a command that cannot start → ``exit_code`` 127 (not found) or 126 (found but
  not executable), like a shell.

Host fds 0 and 1 are used only by the relay process, with blocking I/O
(O_NONBLOCK is never set on a host's fd; fd 2: see ``stdio_os``); this
process points its own fds 0/1 at /dev/null once the relay runs. A
bounded buffer (``STDERR_BUFFER``) decouples the server's stderr from the host's:
a host that stops draining stderr can never block the server (cases/B24);
overflow is dropped for the terminal, still recorded, and reported as
``process.stderr_backpressure``.
"""

from __future__ import annotations

import errno
import functools
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from mcptap.protocol.codes import finding
from mcptap.transport import http_trim, stdio_os
from mcptap.transport.copy_reader import read_copies
from mcptap.transport.forward import detach_fd
from mcptap.transport.handoff import Handoff
from mcptap.transport.relay_child import start_relay
from mcptap.transport.signal_latch import FORWARDED_SIGNALS, SignalLatch, open_receiver
from mcptap.transport.spill import Recorded, SpillFile, spill_path
from mcptap.transport.stdio_os import close_fd, ensure_std_fds, host_stream, quiet_close, signame, spawn, spawn_exit_code, spawn_problem, wait_exit
from mcptap.transport.stdio_signals import ProcessSignals
from mcptap.transport.stdio_stderr import StderrRelay
from mcptap.transport.tap_recorder import TapRecorder

ORPHAN_WAIT = 1.0              # s to wait for stdout EOF after the server exited
STDERR_FLUSH_WAIT = 1.0        # s to wait for stderr EOF / delivery at the end
HURRY_WAIT = 0.2               # s: the stderr waits once mcptap was signalled (hosts kill 2 s after SIGTERM)
RELAY_EXIT_WAIT = 5.0          # s without any copy moving before a lingering relay process is ended
#: s the recorder may take, once the session is over, to annotate what is still queued; then the
#: rest is stored unframed (chunk records, annotated by check/show): a flood of tiny lines
#: (`yes`: 164k messages in 320 KiB, below the 1 MiB that makes it spill) kept mcptap alive
#: 2.6 s (9 s on a loaded machine) after its server had died
CATCH_UP_WAIT = 0.25


@dataclass(slots=True)
class TapResult:
    """Outcome of one stdio tap. ``exit_code``: what mcptap should exit with
    (server code, 128+N if killed by signal N, 127/126 spawn failure);
    ``signal``: N or None; ``spawn_error``: one-line reason or None;
    ``recorder_error``: set when the Recorder raised and recording stopped;
    ``stderr_dropped``: server stderr bytes not shown on the host's stderr;
    ``lost_bytes``: forwarded bytes the capture could not hold (gap records)."""

    exit_code: int
    signal: int | None = None
    spawn_error: str | None = None
    recorder_error: str | None = None
    stderr_dropped: int = 0
    lost_bytes: int = 0


class StdioTap(StderrRelay, ProcessSignals):
    """One run of the stdio tap. ``rec``: the Recorder (see docs/internals.md);
    ``argv``: the command; ``shown_argv``: argv as recorded (secrets scrubbed);
    ``grace``: seconds between stdin EOF, SIGTERM and SIGKILL; ``say``: called
    with mcptap's own one-line messages (no "mcptap: " prefix) before the relay
    starts; during the relay they go through the stderr buffer; ``early``: the
    SignalLatch installed when the capture was created (its signals are
    forwarded once the server runs, as if they came then)."""

    def __init__(self, argv: Sequence[str], rec: TapRecorder, *, grace: float = 5.0,
                 shown_argv: Sequence[str] | None = None, say: Callable[[str], None] | None = None,
                 early: SignalLatch | None = None) -> None:
        self.argv = list(argv)
        self.shown_argv = list(shown_argv if shown_argv is not None else argv)
        self.rec = rec
        self.grace = grace
        self._early = early
        self._say_direct = say or (lambda line: sys.stderr.write(f"mcptap: {line}\n"))
        self.result: TapResult = TapResult(exit_code=0)
        self._pgid = 0
        self._handoff = Handoff(rec, self._recorder_failed)
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._spill: SpillFile | None = None
        self._exited = trio.Event()
        self._stdout_done = trio.Event()        # the copy stream reached the end of the server's stdout
        self._stdout_closed = trio.Event()      # the server's stdout ended (prompt, from the relay)
        self._stderr_read_done = trio.Event()
        self._stdin_eof_at: float | None = None
        self._late_exit_reported = False      # process.no_exit_after_stdin_eof written (by mcptap's grace or the host's signal)
        self._orphan_reported = False         # process.exited_but_stdout_open written
        self._exit_fields: dict[str, Any] = {}
        self._exit_at = 0.0
        self._err_send, self._err_recv = trio.open_memory_channel[bytes](float("inf"))
        self._err_buffered = 0
        self._err_overflowing = False
        self._relay_started = False
        self._relay_pid = -1
        self._relay_stopped: str | None = None   # why mcptap stopped the relay before the server's stdout ended

    # -- recorder hand-off ---------------------------------------------------

    # Every recorder call goes through the Handoff queue, in the order the
    # events happened (forwarded chunks are queued between read and write, so
    # a request precedes its answer), and runs on the recorder thread.
    def _rec(self, fn: Callable[..., object], *args: Any, **fields: Any) -> None:
        self._handoff.call(fn, *args, **fields)

    def _recorder_failed(self, reason: str) -> None:
        """From the recorder thread: recording stopped (a bug in mcptap)."""
        self.result.recorder_error = reason
        line = f"recording stopped ({reason}); the relay continues"
        try:
            if self._token is None:
                raise RuntimeError
            self._token.run_sync_soon(self.say, line)
        except (RuntimeError, trio.RunFinishedError):
            self._say_direct(line)

    def say(self, line: str) -> None:
        """One mcptap message line on stderr (through the stderr buffer once relaying)."""
        if self._relay_started:
            self._stderr_out(f"mcptap: {line}\n".encode("utf-8", "replace"))
        else:
            self._say_direct(line)

    # -- entry ---------------------------------------------------------------

    async def run(self) -> TapResult:
        """Spawn, relay until the server exited and its output is delivered;
        returns the TapResult (everything recorded). Never raises for peer
        behaviour."""
        ensure_std_fds()
        self._token = trio.lowlevel.current_trio_token()
        with open_receiver(*FORWARDED_SIGNALS) as signals:
            try:
                return await self._run(signals)
            finally:
                # the session is over: what is still queued is recorded at normal
                # priority, and unframed if a host's SIGTERM says it wants us gone
                self._handoff.boost()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._hurry_on, signals)
                    nursery.start_soon(self._hurry_after, CATCH_UP_WAIT)
                    await trio.to_thread.run_sync(self._handoff.stop)
                    nursery.cancel_scope.cancel()
                if self._spill is not None:           # its bytes are in the capture now
                    self._spill.close(remove=self._handoff.error is None)
                if self._handoff.lost_bytes:
                    self.result.lost_bytes = self._handoff.lost_bytes
                    self.say(f"capture incomplete: {self._handoff.lost_bytes} forwarded bytes could not be recorded (gap records)")

    async def _hurry_on(self, signals: Any) -> None:
        async for _ in signals:
            self._handoff.hurry()

    async def _hurry_after(self, seconds: float) -> None:
        await trio.sleep(seconds)
        self._handoff.hurry()

    async def _run(self, signals: Any) -> TapResult:
        try:
            popen, in_w, out_r, err_r = spawn(self.argv)
        except (OSError, ValueError) as exc:          # ValueError: NUL byte in argv
            errnum = getattr(exc, "errno", None) or 0
            reason = getattr(exc, "strerror", None) or str(exc)
            self.result.exit_code = spawn_exit_code(exc) if isinstance(exc, OSError) else 126
            why = spawn_problem(self.argv[0], exc) if isinstance(exc, OSError) else reason
            self.result.spawn_error = f"cannot run {self.argv[0]!r}: {why}"
            self._rec(self.rec.process, "spawn_failed", argv=self.shown_argv, error=reason,
                      errno=errno.errorcode.get(errnum, str(errnum)), exit_code=self.result.exit_code,
                      findings=[finding("process.spawn_failed", self.result.spawn_error,
                                        {"exit_code": self.result.exit_code})])
            self.say(self.result.spawn_error)
            return self.result
        self._pgid = popen.pid
        self._rec(self.rec.process, "spawn", pid=popen.pid, argv=self.shown_argv)
        # fork the relay first: fork copies only this thread, so before any other starts
        capture_path = getattr(getattr(self.rec, "writer", None), "path", None)
        # shared with the relay (made before the fork): it rewinds its spill file up to what the capture holds
        self._handoff.recorded = recorded = Recorded()
        self._spill = self._handoff.spill = SpillFile(spill_path(capture_path) if isinstance(capture_path, str) else None, recorded=recorded)
        # a flood's MiB-sized copies (the relay's queued ones, this process's reads) and records
        # are given back when freed, not kept in the heap; before the fork: the relay inherits it
        http_trim.map_large_blocks()
        relay_pid, copy_r, ctl_w, status_r, through_w = start_relay(0, 1, in_w, out_r, self._handoff.clock, self._spill)
        self._relay_pid = relay_pid
        # from now on our events wait for the copies read before them (the relay says when)
        self._handoff.expect_copies(functools.partial(stdio_os.poke, through_w))
        for fd in (in_w, out_r):
            os.close(fd)
        detach_fd(0)            # only the relay process holds the host's stdin and stdout
        detach_fd(1)
        self._handoff.start()
        child_err = trio.lowlevel.FdStream(err_r)
        host_err = host_stream(2, threaded=True)
        self._relay_started = True
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._forward_signals, signals, nursery)
                nursery.start_soon(self._stderr_reader, child_err)
                nursery.start_soon(self._stderr_writer, host_err)
                reader = trio.Event()
                nursery.start_soon(self._copy_reader, copy_r, reader)
                nursery.start_soon(self._status_reader, status_r)
                await self._wait_exit(popen)
                await self._finish()
                close_fd(ctl_w)                    # end a c2s pump still waiting for the host
                ctl_w = -1
                seen = -1
                while not reader.is_set():
                    with trio.move_on_after(RELAY_EXIT_WAIT):
                        await reader.wait()
                    if not reader.is_set() and self._handoff.progress == seen:
                        stdio_os.kill(relay_pid)    # no copy moved: a write to a server stdin nobody reads
                        await reader.wait()
                    seen = self._handoff.progress
                nursery.cancel_scope.cancel()
        finally:
            self._relay_started = False
            for stream in (child_err, host_err):
                await quiet_close(stream)
            close_fd(ctl_w)
            self._handoff.stop_asking()         # then its pipe can close: no write to a reused fd
            close_fd(through_w)
            stdio_os.kill(relay_pid)
            await trio.to_thread.run_sync(stdio_os.reap, relay_pid)
            close_fd(copy_r)
        return self.result

    # -- process -------------------------------------------------------------

    async def _wait_exit(self, popen: subprocess.Popen[bytes]) -> None:
        pid = popen.pid
        code = await wait_exit(popen)
        # when it ended: its record is written later, after the last of its stdout and
        # stderr (a descendant may hold them open long after), so its t_us is not this
        fields: dict[str, Any] = {"pid": pid, "exit_t_us": self._handoff.clock()}
        if code < 0:
            self.result.signal = -code
            self.result.exit_code = 128 - code
            fields["signal"] = -code
            fields["signal_name"] = signame(-code)
        else:
            self.result.exit_code = code
            fields["code"] = code
        self._exit_at = trio.current_time()
        self._exit_fields = fields
        self._exited.set()
        self._handoff.boost()

    def _wait(self, seconds: float) -> float:
        """``seconds``, or at most ``HURRY_WAIT`` once mcptap was signalled."""
        return min(seconds, HURRY_WAIT) if self._handoff.hurried else seconds

    async def _finish(self) -> None:
        with trio.move_on_after(ORPHAN_WAIT):
            await self._stdout_closed.wait()
        if not self._stdout_closed.is_set() and self._group_alive():
            # judged only while the server's process group has a member left: with none,
            # the relay is still delivering bytes the server wrote before it exited (a host
            # slow to read its stdout), not relaying for a descendant
            self._orphaned()
        while not self._stdout_closed.is_set():
            if self._handoff.hurried and not self._group_alive():
                # signalled (a host's SIGTERM: it SIGKILLs us 2 s later), the server's group
                # gone, and the relay still blocked on a host that no longer reads its stdout:
                # the capture is finished now, not when (if ever) the host drains the pipe
                self._relay_stopped = ("the host did not read its stdout: mcptap was signalled after the server exited, "
                                       "so the relay was stopped with server output the host never read (not recorded)")
                stdio_os.kill(self._relay_pid)
                break
            with trio.move_on_after(HURRY_WAIT):
                await self._stdout_closed.wait()
        await self._stdout_done.wait()          # the copy stream is read up to the end of stdout: exit goes after it
        with trio.move_on_after(self._wait(STDERR_FLUSH_WAIT)):
            await self._stderr_read_done.wait()
        fields = dict(self._exit_fields)
        if self._stdin_eof_at is not None:
            # judged here, not at the exit: the relay says stdin ended before it closes the
            # server's stdin, but a busy machine may let the exit be seen before that word is read
            fields["since_stdin_eof_s"] = round(max(0.0, self._exit_at - self._stdin_eof_at), 3)
        if self.result.stderr_dropped:
            fields["stderr_dropped"] = self.result.stderr_dropped
        self._rec(self.rec.exit, **fields)
        self._err_send.close()
        with trio.move_on_after(self._wait(STDERR_FLUSH_WAIT)):
            while self._err_buffered and not self._host_err_broken:
                await trio.sleep(0.01)

    # -- the copy stream from the relay process ----------------------------------

    async def _copy_reader(self, copy_r: int, done: trio.Event) -> None:
        """Feed the relay's copy stream to the hand-off, in order, and tell
        the trio side when a direction ended (thread; ends when the relay
        process exits)."""
        token = self._token
        assert token is not None

        def read() -> None:
            read_copies(copy_r, self._handoff, self.rec, lambda: token.run_sync_soon(self._stdout_done.set))

        try:
            await trio.to_thread.run_sync(read)
        finally:
            if not self._stdout_done.is_set():
                self._rec(self.rec.cut, self._relay_stopped or "the relay process ended unexpectedly")
                self._stdout_done.set()
                self._stdout_closed.set()
            done.set()

    async def _status_reader(self, status_r: int) -> None:
        try:
            await stdio_os.read_status(status_r, self._stdin_eof, self._stdout_ended)
        finally:
            self._stdout_closed.set()

    def _stdout_ended(self) -> None:
        self._stdout_closed.set()
        self._handoff.boost()

    def _stdin_eof(self) -> None:
        self._handoff.boost()
        self._stdin_eof_at = trio.current_time()
        if self._nursery is not None:
            self._nursery.start_soon(self._after_stdin_eof)


async def run_stdio_tap(argv: Sequence[str], rec: TapRecorder, *, grace: float = 5.0,
                        shown_argv: Sequence[str] | None = None,
                        say: Callable[[str], None] | None = None, early: SignalLatch | None = None) -> TapResult:
    """Run the stdio tap on this process's fds 0/1/2 (see the module docstring)."""
    return await StdioTap(argv, rec, grace=grace, shown_argv=shown_argv, say=say, early=early).run()
