"""CPU priority of the stdio tap's analysis threads (Linux; elsewhere no-ops).

Analysis (framing, annotation, disk writes) must never delay forwarding, the
server or the host (issue 13). ``idle()`` puts the calling thread in Linux's
``SCHED_IDLE`` class: it runs only on CPU time no other task wants, and any
other task that wakes up preempts it at once. A nice value alone is not
enough: with the EEVDF scheduler (Linux ≥ 6.6) a running nice-19 thread keeps
its CPU for up to its slice (``RUN_TO_PARITY``) while a woken relay thread
waits, which measured as +0.5-1 ms on the p99 of a round trip
(``scripts/bench_stdio.py``). Where ``SCHED_IDLE`` is refused the thread is
niced by 19 instead.

Both are one-way for an unprivileged user (leaving ``SCHED_IDLE`` or lowering
a nice value needs ``CAP_SYS_NICE`` or ``RLIMIT_NICE``), so ``restore()``
reports whether it could undo them; when it cannot, the caller hands the
work to a fresh thread (threads inherit the class of the thread that starts
them: start it from a normal one). The end of a session needs that: under a
CPU-bound load an idle thread gets almost no CPU, and a host kills a server
that lingers about 2 s after it closed its stdin.
"""

from __future__ import annotations

import os
import sys
import threading
import time

NICE = 19
#: an idle-priority thread sleeps ``PAUSE`` s after running ``BURST`` s (``Pacer``)
BURST = 50e-6
PAUSE = 20e-6
_PR_SET_TIMERSLACK = 29


def idle() -> str:
    """Lower the calling thread: ``SCHED_IDLE``, else nice +19. Returns what
    was done: ``"idle"``, ``"nice"`` or ``""`` (not supported here)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))   # 0: the calling thread (Linux)
        return "idle"
    except (OSError, AttributeError):
        pass
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(NICE, os.getpriority(os.PRIO_PROCESS, tid) + NICE))
        return "nice"
    except (OSError, AttributeError):
        return ""


def restore(nice: int = 0) -> bool:
    """Put the calling thread back in the normal class at ``nice``; False
    when not allowed (unprivileged) or not supported."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        return True
    except (OSError, AttributeError):
        return False


def process_nice() -> int:
    """The nice value of this process's main thread (what ``restore`` goes back to)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, os.getpid())
    except (OSError, AttributeError):
        return 0


class Pacer:
    """Keeps the runs of an idle-priority thread short (call it between
    pieces of work; ``rested()`` after the thread waited).

    ``SCHED_IDLE`` alone does not keep such a thread off a CPU that a normal
    one wants: Linux's EEVDF scheduler (6.6+) picks the earliest deadline
    among the threads that are *eligible* (not ahead of their fair share),
    and a host thread that wakes up ahead of its share is not eligible yet;
    the idle thread is picked and keeps the CPU until the next scheduling
    point, often the next tick (up to 4 ms at HZ=250). Traced on the stdio
    round trip (``perf`` sched_switch/sched_wakeup, ``scripts/bench_stdio.py``
    server): the host, woken on the recorder's CPU, waited 0.96 ms runnable
    while the recorder wrote 49 records; such stalls made the round trip's
    p99. A sleep takes the thread off the run queue, so a waiting thread runs
    at once: after ``BURST`` s of running the pacer sleeps ``PAUSE`` s (timer
    slack set to 1 µs, so the sleep is not stretched to 50 µs). A
    ``sched_yield`` instead measured no better than nothing."""

    __slots__ = ("since",)

    def __init__(self) -> None:
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1000, 0, 0, 0)   # this thread, in ns
            except (OSError, AttributeError):
                pass
        self.since = time.perf_counter()

    def __call__(self) -> None:
        if time.perf_counter() - self.since >= BURST:
            time.sleep(PAUSE)
            self.since = time.perf_counter()

    def rested(self) -> None:
        self.since = time.perf_counter()
