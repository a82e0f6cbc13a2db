"""The HTTP tap's recorder process: parsing, annotation, export and the capture
write happen beside the relay, never on its forward path.

    relay process (trio)                         recorder process
    HttpTap._run ─ batch ─► RecorderLink.handle ─► fact pipe ─► HttpObserver ─► Recorder ─► capture
                                   │ pipe full: queue; past SPILL_BYTES: spill file
                            ◄─ status pipe (stopped, caught up, done) ─

``start_recorder`` forks the recorder process before trio starts (the
Recorder, its writer and redactor already exist and are inherited). The relay
hands each batch of relay facts (``HttpTap._observe``'s ``items``) to
``RecorderLink.handle``, which stamps it with the relay's clock, encodes it
(``fact_codec``) and writes it to a non-blocking pipe; ``RecorderLink.run``
(a trio task) writes what queued (several frames a ``writev``) as the pipe
drains and reads the status pipe. While the pipe is full (the recorder is
behind), frames queue in relay order, and past
``SPILL_BYTES`` their bytes go to an unlinked spill file beside the capture
(``spill.SpillFile``) and only their place is queued: nothing is lost,
memory stays bounded, and the order is the relay's. Once the recorder says
it read back every byte set aside so far (``spill_read``), the spill file is
rewound (``SpillFile.rewind``): its disk use is the largest backlog, not
every byte a long session ever set aside. The file has a bound
(``spill_bound``): a batch past it is dropped, never waited for, and counted
in one LOST frame (a gap record in the capture says how many batches and how
many forwarded bytes each way; the frame names the exchanges they carried,
which the observer cuts there); once the file was rewound, batches are set
aside again.

End: ``finish`` queues ``END`` (exit code, the end record's extra fields),
writes everything out and waits for the recorder to write the end record and
exit (one line on stderr if catching up takes over ``SLOW_END_S``; past
``END_WAIT_S`` it signals ``HURRY``: the recorder skips the batches still in
the spill file and writes gap records for them, as for a LOST frame, so a
flood's backlog never holds the end up). The recorder ignores terminal
signals (the relay decides the end); at EOF without ``END`` (mcptap was
killed) it writes what arrived and no end record, so the capture says it is
incomplete, as a killed stdio tap's does. If it fails, the relay goes on:
one ``recording stopped …`` line, and ``finish`` reports it.
"""

from __future__ import annotations

import collections
import gc
import marshal
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import trio

from mcptap.transport import fact_codec as fc
from mcptap.transport import http_trim
from mcptap.transport.copy_stream import COPY_PIPE_SIZE
from mcptap.transport.forward import grow_pipe
from mcptap.transport.spill import FULL, SpillFile

#: bytes queued in memory (pipe full) beyond which frames go to the spill file
#: (1 MiB, with the pipe's 1 MiB: a 64 MiB event, behind which the recorder always is, peaked
#: at 36 MiB in the relay with 4 MiB here, 33 MiB with 1; spilled frames cost a write and a read)
SPILL_BYTES = 1 << 20
#: seconds the end may wait for the recorder before mcptap says so on stderr
SLOW_END_S = 1.0
FRAME_COST = 128       # bytes a queued frame costs beyond its data
IOV_BATCH = 512        # buffers in one writev (the limit is IOV_MAX, 1024 on Linux)
#: seconds the end waits for the recorder before it tells it (``HURRY``) to skip what the
#: spill file still holds: a flood the recorder cannot keep up with must not hold up the end
END_WAIT_S = 3.0
#: the relay's signal to the recorder process that the end gave up waiting for its backlog
HURRY = signal.SIGUSR1


@dataclass
class Outcome:
    """How recording ended: ``failed``/``dropped``: the capture writer's
    failure and records lost (as ``CaptureWriter``); ``ended``: why the
    recorder process ended before writing the end record (None: it wrote it)."""
    failed: str | None = None
    dropped: int = 0
    ended: str | None = None


class RecorderLink:
    """The relay's end of the recorder process (module docstring); an
    observer for ``HttpTap`` (``handle(items)``) once ``observer`` was called."""

    def __init__(self, pid: int, fd: int, status_fd: int, spill: SpillFile, clock: Callable[[], int],
                 say: Callable[[str], None]) -> None:
        self.pid, self._fd, self._status, self._spill, self._clock, self._say = pid, fd, status_fd, spill, clock, say
        self._q: collections.deque[list[Any]] = collections.deque()
        self._queued = 0
        self._spilled_bytes = 0      # bytes of the frames set aside in the spill file (the recorder's ``spill_read``)
        self._lost_tail: list[Any] | None = None    # the LOST frame queued last (``_spilled``: it counts more)
        self._lost_cut: set[int] | None = None      # the exchanges it cuts (None: every one)
        self._lost_tails: dict[int, bytes] | None = None    # the ends of the response bodies it lost (None: not known)
        #: batches dropped (the spill file could not take them) and the bytes they forwarded
        self.lost_batches = self.lost_bytes = 0
        self._wake: trio.Event | None = None      # set when a frame is queued while the queue was empty
        self._status_buf = b""
        #: recording stopped after an internal error (said once): batches are not sent any more
        self.stopped = False
        #: the recorder process cannot be reached any more (its pipe broke)
        self.broken: str | None = None
        #: how the recorder process ended before the end record (said once; None: it did not)
        self.ended: str | None = None
        self.caught_up = False
        self.done: dict[str, Any] | None = None
        os.set_blocking(fd, False)
        os.set_blocking(status_fd, False)

    # -- the forward path (trio thread) --------------------------------------------------------
    def observer(self, authority: str) -> RecorderLink:
        """``HttpTap.observer_for``: tell the recorder the tap's authority."""
        self._send(fc.frame(fc.START, self._clock(), marshal.dumps(authority)))
        return self

    def handle(self, items: list[Any]) -> None:
        """Hand one relay batch over, stamped with the relay's clock (never
        blocks, never raises)."""
        if self.stopped:
            return
        try:
            enc = fc.encode(items)
        except Exception as exc:  # noqa: BLE001 - an mcptap bug must not break the relay
            self._stop(repr(exc))
            return
        if enc is not None:
            self._send(fc.frame(fc.BATCH, self._clock(), enc[0], enc[1]))

    def _send(self, bufs: list[Any]) -> None:
        if self.broken is not None:
            return
        if not self._q:
            done = self._write(bufs)
            if done is None:
                return
            if done:
                bufs = fc.rest(bufs, done)      # the rest of a frame begun in the pipe: next, from memory
        else:
            size = sum(len(b) for b in bufs)
            if self._queued + size > SPILL_BYTES:
                put = self._spilled(bufs)
                if put is None:
                    return                    # counted in the LOST frame queued last
                bufs = put
        self._q.append(bufs)
        self._queued += sum(len(b) for b in bufs) + FRAME_COST
        if self._wake is not None:
            self._wake.set()

    def _spilled(self, bufs: list[Any]) -> list[Any] | None:
        """The SPILLED frame standing for ``bufs`` (a whole frame) once its
        pieces are in the spill file. A batch the file cannot take (disk
        full, or at its bound: ``spill_bound``) is dropped and counted in a
        LOST frame (``fc.LOST_META``), the one still queued last if it can
        (then None: memory stays bounded however long a flood lasts); a START
        or END frame, never dropped, waits in memory instead."""
        kind, t = fc.HEAD.unpack_from(bufs[0])[:2]   # the batch's stamp: a gap is dated when its facts happened
        at = self._spill.append_pieces(bufs)         # one write for the whole frame
        size = sum(len(b) for b in bufs)
        if at >= 0:
            self._spilled_bytes += size
            return fc.frame(fc.SPILLED, t, marshal.dumps([(at, size)]))
        if kind != fc.BATCH:
            return bufs
        meta = bytes(bufs[1])
        c2s, s2c, cut = fc.dropped_facts(meta)
        tails = fc.body_tails(meta, bufs[2:])          # where the lost bytes left each SSE stream (observe_gap)
        full = int(at == FULL)
        self.lost_bytes += c2s + s2c
        self.lost_batches += 1
        last = self._q[-1] if self._q else None
        if last is not None and last is self._lost_tail:
            n, b, c, d, f = fc.LOST_META.unpack_from(last[1])
            if f == full:
                if self._lost_cut is not None:
                    self._lost_cut |= cut
                    if len(self._lost_cut) > fc.LOST_EXCHANGES:
                        self._lost_cut = None       # every open exchange: no more to collect
                self._lost_tails = fc.add_tails(self._lost_tails, tails)
                last[1] = fc.lost_meta(n + 1, b + size, c + c2s, d + s2c, f, self._lost_cut, self._lost_tails)
                last[0] = fc.HEAD.pack(fc.LOST, fc.HEAD.unpack_from(last[0])[1], len(last[1]), 0)
                return None
        self._lost_cut, self._lost_tails = cut, tails
        self._lost_tail = fc.frame(fc.LOST, t, fc.lost_meta(1, size, c2s, s2c, full, cut, tails))
        return self._lost_tail

    def _write(self, bufs: list[Any]) -> int | None:
        """Write a frame now: None when all of it went (or the recorder is
        gone), else the bytes written."""
        try:
            n = os.writev(self._fd, bufs)
        except BlockingIOError:
            return 0
        except OSError:
            self._lost()
            return None
        return None if n == sum(len(b) for b in bufs) else n

    def _drain(self) -> bool:
        """Write queued frames, several in one ``writev``, until the pipe is
        full; True when the queue is empty."""
        q = self._q
        while q:
            bufs: list[Any] = []
            frames = 0
            for f in q:
                if frames and len(bufs) + len(f) > IOV_BATCH:
                    break
                bufs += f
                frames += 1
            done = self._write(bufs)
            if self.broken is not None:
                return True
            if done == 0:
                return False            # the pipe is full
            if done is None:
                done = sum(len(b) for b in bufs)
            while done:
                size = sum(len(b) for b in q[0])
                if done < size:
                    q[0] = fc.rest(q[0], done)
                    self._queued -= done
                    return False
                q.popleft()
                self._queued -= size + FRAME_COST
                done -= size
        return True

    def _stop(self, why: str) -> None:
        if not self.stopped and self.broken is None:
            # as the in-process observer says it (transport/http.py)
            self._say(f"recording stopped after an internal error: {why} (the relay goes on)")
        self.stopped = True

    def _lost(self) -> None:
        """The fact pipe broke: the recorder process is gone (said once its
        status pipe ends, with how it ended: ``_ended``)."""
        self.broken = self.broken or "the recorder process ended"
        self.stopped = True
        self._q.clear()
        self._queued = 0

    def _ended(self, how: str) -> None:
        if self.ended is None:
            self.ended = f"the recorder process {how}"
            self._say(f"recording stopped: {self.ended} (the relay goes on)")
        self._lost()

    # -- beside the forward path (trio tasks) --------------------------------------------------
    async def run(self) -> None:
        """Write the queue out as the pipe drains and read the recorder's
        status, until cancelled (the tap stops)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read_status)
            while True:
                self._wake = trio.Event()
                if not self._q:
                    await self._wake.wait()
                while not self._drain():
                    await trio.lowlevel.wait_writable(self._fd)

    async def _read_status(self) -> None:
        while True:
            await trio.lowlevel.wait_readable(self._status)
            if not self._read_status_once():
                await trio.sleep(0.05)        # its pipes close a moment before it can be reaped
                self._ended(_exit_reason(self.pid, wait=False))
                return

    def _read_status_once(self) -> bool:
        """Read what the status pipe holds; False at EOF (the recorder ended)."""
        try:
            data = os.read(self._status, 65536)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            return False
        *lines, self._status_buf = (self._status_buf + data).split(b"\n")
        for line in lines:
            msg = orjson.loads(line)
            if "stopped" in msg:
                self._stop(msg["stopped"])
            elif "spill_read" in msg:
                if msg["spill_read"] == self._spilled_bytes:       # every frame set aside was read back
                    self._spill.rewind()
            elif "caught_up" in msg:
                self.caught_up = True
            elif "done" in msg:
                self.done = msg
        return True

    # -- the end (after trio) ---------------------------------------------------------------------
    def finish(self, exit_code: int, extra: dict[str, Any] | None = None) -> Outcome:
        """Send the end (``exit_code`` and the end record's ``extra``
        fields), write everything queued, wait for the recorder to write the
        end record and exit; returns how recording ended."""
        self._send(fc.frame(fc.END, self._clock(), marshal.dumps((exit_code, extra or {}))))
        t0 = time.monotonic()
        told = False
        out = select.poll()
        out.register(self._fd, select.POLLOUT)
        status = select.poll()
        status.register(self._status, select.POLLIN)
        alive = True
        hurried = False
        while alive:
            behind = not self.caught_up and self.broken is None
            if not told and behind and time.monotonic() - t0 > SLOW_END_S:
                told = True
                self._say("finishing the capture: the recorder is behind the relay; waiting for it")
            if not hurried and behind and time.monotonic() - t0 > END_WAIT_S:
                hurried = True
                self._say("finishing the capture: the recorder is still behind; what it has not read back from the "
                          "spill file yet is left out (a gap record in the capture says how much)")
                try:
                    os.kill(self.pid, HURRY)
                except OSError:
                    pass
            if self._q and not self._drain():
                out.poll(100)
            if status.poll(0 if self._q else 100):
                alive = self._read_status_once()
        os.close(self._fd)
        self._spill.close()
        if self.lost_bytes or self.lost_batches:
            self._say(f"capture incomplete: {self.lost_batches} batch(es) of relay facts ({self.lost_bytes} forwarded "
                      "bytes) could not be recorded (gap records)")
        how = _exit_reason(self.pid, wait=True)
        if self.done is None:
            self._ended(how)
            return Outcome(ended=self.ended)
        return Outcome(failed=self.done.get("failed"), dropped=self.done.get("dropped") or 0)


def _exit_reason(pid: int, wait: bool) -> str:
    """How the recorder process ended, to follow "the recorder process"."""
    try:
        got, status = os.waitpid(pid, 0 if wait else os.WNOHANG)
    except ChildProcessError:
        return "ended"
    if got == 0:
        return "closed its pipe"
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"ended with exit status {os.WEXITSTATUS(status)}"


def start_recorder(run_child: Callable[[int, int, SpillFile], None], clock: Callable[[], int], say: Callable[[str], None],
                   spill_dir: str | None) -> RecorderLink:
    """Fork the recorder process; ``run_child(fact_fd, status_fd, spill)``
    is its body (``http_recorder_child.child_main``) and never returns.
    ``clock``: the Recorder's (µs; inherited, so both processes read the
    same origin). Call before trio or any thread starts."""
    fact_r, fact_w = os.pipe()
    status_r, status_w = os.pipe()
    grow_pipe(fact_w, COPY_PIPE_SIZE)
    spill = SpillFile(None, spill_dir)
    http_trim.before_fork()       # free heap pages back first: else a copy of each, by copy on write, in whichever reuses it
    # the objects made so far go where the cyclic collector never looks: the
    # recorder's collections would write to their headers and so copy every
    # page it shares with the relay (copy on write)
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        os.close(fact_w)
        os.close(status_r)
        run_child(fact_r, status_w, spill)
        os._exit(70)      # not reached: run_child exits itself
    gc.unfreeze()
    os.close(fact_r)
    os.close(status_w)
    return RecorderLink(pid, fact_w, status_r, spill, clock, say)
