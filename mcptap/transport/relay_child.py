"""The stdio relay process: the forward path, apart from all analysis.

``start_relay`` forks a small process that only moves bytes:

    host stdin  ──► [c2s pump thread] ──► server stdin
    host stdout ◄── [s2c pump thread] ◄── server stdout
                        │ each chunk: its place taken as read, its copy sent once written on
                        ▼
                 ordered queue ──► [feeder thread] ──► copy pipe ──► mcptap (recorder)

Why a process: CPython runs one thread's bytecode at a time (the GIL). With
analysis in the same process, a forward thread that wakes while the recorder
annotates waits for the GIL (5 ms by default, and a scheduler round trip on a
busy machine at any interval), so a flood would still be paced by analysis.
In this process the three threads only run a few bytecodes between blocking
system calls, and nothing else runs. On Linux the s2c pump moves the server's
bytes by tee/splice without copying them through Python (``tee_pump``;
``CopyQueue.chunk_from`` takes the copy from its aux pipe).

The copy stream is a sequence of items: a header ``<BBBqI`` (kind, direction,
flag, t_us, n) then, for ``CHUNK``, n bytes. The stream order is the read
order: a pump takes its chunk's place (``CopyQueue.take``: stamp, stream
offset) when it read it and sends the copy once the chunk was written on
(``put``), so the copy costs the round trip nothing; a place still open when a
later chunk or event is sent (its pump waits on a write) is sent first, from
that pump's buffer. A request's place is taken before it is written to the
server, so it precedes its answer (causal order). ``t_us`` is the recorder's clock (same monotonic
clock, same origin: it is inherited through fork). When mcptap falls behind
reading the copy pipe, copies queue here and, past ``copy_queue.SPILL_BYTES``, go to a
spill file on the capture's disk (``copy_queue.CopyQueue``); forwarding never waits for
the copy stream.

End: at EOF on server stdout (or the host closing ours), the s2c pump ends;
the c2s pump ends at host stdin EOF or when the server closed its stdin. The
process exits once the s2c pump ended, the c2s pump ended or mcptap closed the
control pipe (the server exited while the host keeps stdin open: exiting
closes the server's stdin), and the queue is written out;
it also dies with mcptap (PR_SET_PDEATHSIG) and ignores terminal signals
(mcptap forwards them to the server).
"""

from __future__ import annotations

import functools
import gc
import os
import select
import signal
import sys
import threading
from collections.abc import Callable

from mcptap.transport import copy_fast, http_trim, tee_pump
from mcptap.transport.copy_queue import CopyQueue
from mcptap.transport.copy_stream import C2S, COPY_PIPE_SIZE, END, FAILED, S2C, THROUGH
from mcptap.transport.forward import BROKEN, EOF, MAX_CHUNK, detach_fd, grow_pipe, pump
from mcptap.transport.spill import SpillFile

__all__ = ["CopyQueue", "child_main", "start_relay"]

def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _signal(fd: int, what: bytes) -> None:
    try:
        os.write(fd, what)
    except OSError:
        pass


def _recorded(token: object, sent: int) -> bool:
    """``after`` of a chunk whose copy was sent before it moved on: in the stream whole."""
    return True


def _wait_readable(*fds: int) -> int:
    """Block until one of ``fds`` is readable (or hung up); returns it."""
    p = select.poll()
    for fd in fds:
        p.register(fd, select.POLLIN)
    while True:
        try:
            return int(p.poll()[0][0])
        except InterruptedError:
            continue


def _answer_through(q: CopyQueue, through_r: int) -> None:
    """A thread: each time mcptap asks (a byte on ``through_r``), a THROUGH
    item stamped now goes into the stream, after every copy read before it
    (``CopyQueue.event`` sends the places still open first); ends at EOF."""
    while True:
        try:
            if not os.read(through_r, 64):
                return
        except InterruptedError:
            continue
        except OSError:
            return
        q.event(THROUGH, 0)


def child_main(host_in: int, host_out: int, child_in: int, child_out: int, copy_w: int, ctl_r: int,
               spill: SpillFile, status_w: int, clock: Callable[[], int], parent: int, through_r: int) -> None:
    """The relay process body (after fork); never returns."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
            signal.signal(s, signal.SIG_IGN)
        _die_with_parent()
        if os.getppid() != parent:
            os._exit(0)
        q = CopyQueue(clock, copy_w, spill)

        # the c2s pump blocks in its reads (no poll of the control pipe before
        # each: a system call on every request's path); once the s2c pump
        # ended, the control pipe closing (the server exited while the host
        # keeps its stdin open) ends the process without waiting for it
        done_r, done_w = os.pipe()

        def c2s() -> None:
            try:
                take, put = copy_fast.ends(q, C2S)
                how, whole, undelivered = pump(host_in, child_in, take, after=put)
                if how == BROKEN:
                    # the server closed its stdin: stop reading, so the host gets
                    # EPIPE on its next write, as it would talking to the server directly
                    q.event(FAILED, C2S, int(whole), undelivered)
                    detach_fd(host_in)
                elif how == EOF:
                    q.event(END, C2S)
                    _signal(status_w, b"i")      # said before the server can see it (and exit on it)
                os.close(child_in)               # the server sees EOF on its stdin
            finally:
                os.close(done_w)

        def s2c() -> None:
            # a flood's chunks (tee_pump) send their copy before they move on, in
            # one call (chunk_from: the place and the copy, always recorded whole):
            # a flood's latency is no round trip's, and sent after, the relay's
            # CPU per 1M-notification flood measured 0-16 ms higher (docs/internals.md)
            take, put = copy_fast.ends(q, S2C)
            how, whole, undelivered = tee_pump.pump_s2c(child_out, host_out, take, functools.partial(q.chunk_from, S2C), put, _recorded)
            if how == BROKEN:
                # the host closed our stdout: close the server's, so it gets
                # EPIPE/SIGPIPE like a direct pipe would give it
                q.event(FAILED, S2C, int(whole), undelivered)
            else:
                q.event(END, S2C)
            os.close(child_out)
            detach_fd(host_out)                # the host sees EOF on its stdin now
            _signal(status_w, b"o")

        feeder = threading.Thread(target=q.feed, name="mcptap-copy")
        feeder.start()
        t_c2s = threading.Thread(target=c2s, name="mcptap-c2s", daemon=True)
        t_c2s.start()
        threading.Thread(target=_answer_through, args=(q, through_r), name="mcptap-through", daemon=True).start()
        s2c()
        if _wait_readable(done_r, ctl_r) == done_r:
            t_c2s.join()
        q.close()
        feeder.join()
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        code = 70
    os._exit(code)


def start_relay(host_in: int, host_out: int, child_in: int, child_out: int, clock: Callable[[], int],
                spill: SpillFile) -> tuple[int, int, int, int, int]:
    """Fork the relay process. Returns ``(pid, copy_r, ctl_w, status_r, through_w)``:
    the copy stream to read, the control pipe to close when the c2s pump must
    end, the status pipe (``i``: host stdin ended, ``o``: the server's
    stdout ended; sent at once, ahead of the copy stream), and the pipe to
    write a byte to for a THROUGH item (``copy_stream``: every chunk read
    before it is in the stream before it; close it at the end). SPILLED items are
    read from ``spill`` (``spill.SpillFile``; beside the capture, so a flood
    fills the disk the capture is on, not memory). The caller must close its own copies of
    ``child_in`` and ``child_out`` and point fds 0/1 elsewhere, so that only
    the relay holds them. Call it before starting threads (fork copies only
    the calling thread)."""
    copy_r, copy_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    status_r, status_w = os.pipe()
    through_r, through_w = os.pipe()
    os.set_blocking(through_w, False)          # asked at most once at a time: never full, never waits
    grow_pipe(copy_w, COPY_PIPE_SIZE)
    # the server's stdout (our pipe): a flooding server writes a whole read's
    # worth per wake-up and the s2c pump moves it with one read, one write and
    # one copy (a 64 KiB pipe: four of each, and four times the wake-ups)
    grow_pipe(child_out, MAX_CHUNK)
    parent = os.getpid()
    http_trim.before_fork()       # free heap pages back first: else a copy of each, by copy on write, in whichever reuses it
    # the objects made so far go where the relay's cyclic collector never looks: its
    # collections would write to their headers and so copy, by copy on write, every page
    # it shares with mcptap (as transport/http_recorder.py does for its recorder process)
    gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        raise
    if pid == 0:
        os.close(copy_r)
        os.close(ctl_w)
        os.close(status_r)
        os.close(through_w)
        child_main(host_in, host_out, child_in, child_out, copy_w, ctl_r, spill, status_w, clock, parent, through_r)
    gc.unfreeze()
    os.close(copy_w)
    os.close(ctl_r)
    os.close(status_w)
    os.close(through_r)
    return pid, copy_r, ctl_w, status_r, through_w
