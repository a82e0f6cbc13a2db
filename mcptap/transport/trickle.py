"""Copies of a session's traffic held back while it goes on (stdio and HTTP
taps): analysis runs in the session's pauses, not beside its round trips.

The stdio copy reader (``copy_stream.read_items``) and the HTTP recorder
process (``http_recorder_child``) read what the relay sends them from a
pipe. When a read finds only a trickle (round trips, not a flood), ``gather``
keeps reading every ``WAIT`` s while more keeps coming and hands everything
over at the first wait that brings nothing (a pause of at least ``WAIT``),
or once ``HOLD_BYTES`` are held or ``HOLD_MAX`` s passed.

Why: analysis that runs while round trips go on shares the CPUs with the
host, the relay and the server. Each of their wake-ups then preempts it (a
reschedule IPI and a context switch: a third of the stdio analysis threads'
CPU in a ``perf`` profile) and they run on caches it emptied. On 2 cores,
20,000 stdio round trips in blocks with pauses between them added 50.3 µs
p50 with the copies analysed as they came (2 ms batches) and 38.7 µs held to
the pauses (plain threaded relay 21.9 µs, same run), and the analysis cost
99 against 47 µs of CPU per round trip (``scripts/bench_stdio.py``).
Under traffic with no pause at all the bounds hand the copies over as they
did before, and analysis shares the CPUs again. The capture lags the session
by at most ``HOLD_MAX`` s; the relay never waits for any of this.

A flood (reads of whole pipes) cannot be held in memory: ``wait_while_flowing``
stops reading while what the relay sent keeps growing, and the relay sets it
aside in its spill file meanwhile. The HTTP recorder process (which runs at
normal priority) does so for large bodies: a 64 MiB SSE event reached the
client in 199-238 ms against 253-306 ms (3 runs, same run as the code
before, direct 52-60 ms; ``scripts/bench_http.py``). For the stdio copy
reader (idle priority already) it measured within the noise, so it is not
used there.
"""

from __future__ import annotations

import array
import fcntl
import select
import termios
import time
from collections.abc import Callable

#: reads smaller than this are a trickle (``gather``); a flood's reads are whole pipes
TRICKLE_BELOW = 64 << 10
WAIT = 0.002                   # s between reads of a trickle; a wait that brings nothing is a pause
HOLD_BYTES = 1 << 20           # bytes held back at most before they are handed over
HOLD_MAX = 0.5                 # s: and at most this long


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def gather(fd: int, data: bytes, read: Callable[[int], bytes], hold: Callable[[], bool] | None = None) -> bytes:
    """``data`` (a read of ``fd`` smaller than ``TRICKLE_BELOW``) and what
    follows it on ``fd`` while the traffic goes on (module docstring):
    ``read(n)`` reads up to n bytes of ``fd`` (b"" at EOF or on an error; it
    is only called when ``fd`` is readable). Stops at a pause, at EOF, at the
    bounds, or once ``hold()`` is false (the session is ending)."""
    parts = [data]
    total = len(data)
    end = time.monotonic() + HOLD_MAX
    while total < HOLD_BYTES and time.monotonic() < end:
        if hold is not None and not hold():
            break
        time.sleep(WAIT)
        if not _readable(fd):
            break                                   # a pause: analyse now
        more = read(HOLD_BYTES - total)
        if not more:
            break                                   # EOF: the caller's next read sees it again
        parts.append(more)
        total += len(more)
    return b"".join(parts) if len(parts) > 1 else data


def pipe_fill(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` (FIONREAD; 0 where it fails)."""
    n = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, n, True)
    except OSError:
        return 0
    return n[0]


def wait_while_flowing(level: Callable[[], int]) -> None:
    """A flood (a read of ``TRICKLE_BELOW`` or more) is not analysed while it
    goes on either: wait every ``WAIT`` s while ``level()`` (what the relay
    has sent and not been read yet: the pipe's fill plus its spill file's
    size) keeps changing, ``HOLD_MAX`` s at most; the relay sets what does not fit aside in its spill file
    meanwhile, and never waits."""
    end = time.monotonic() + HOLD_MAX
    last = level()
    while time.monotonic() < end:
        time.sleep(WAIT)
        now = level()
        if now == last:
            return
        last = now
