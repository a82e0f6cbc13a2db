"""Give the heap's free pages back to the system once the HTTP recorder
process is idle (``http_recorder_child._Frames``).

Why: a burst of round trips leaves the recorder's C heap with free chunks
(the batch it held back, the records before they were written, the parsed
messages): glibc keeps them, so after traffic the recorder stayed ~1 MiB
larger than idle for the rest of the session (``scripts/bench_http.py``,
``mem``). ``malloc_trim(0)`` returns every free page (top of the heap and
whole pages inside it), once a pause of ``IDLE_S`` follows traffic: never
while a burst goes on, so the cost (a walk of the free lists, tens of µs)
is paid per pause, not per round trip. Where glibc is not the C library the
trim is a no-op.

``before_fork()``: the same trim right before a tap forks (the HTTP
recorder process, the stdio relay process). The free pages the heap held
then were resident in both processes; the first process to reuse one got a
copy while the other kept the original, unused, for good: 0.6 MiB of the
HTTP tap's memory (its two processes' distinct resident pages, idle and
after traffic). Trimmed, a reused page is a fresh one, in that process only.
"""

from __future__ import annotations

import select
from collections.abc import Callable

#: s without a new batch after which the recorder counts as idle and trims its heap
IDLE_S = 0.05


def _load_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None         # not glibc
    return trim


#: glibc's ``malloc_trim`` (looked up before the fork: the recorder shares the lookup), or None
_TRIM = _load_trim()


def wait_then_trim(fd: int) -> bool:
    """Wait up to ``IDLE_S`` for ``fd`` to become readable; if it does not,
    trim the heap (module docstring). Returns whether it trimmed."""
    if _TRIM is None:
        return False
    if select.select([fd], [], [], IDLE_S)[0]:
        return False
    _TRIM(0)
    return True


def before_fork() -> bool:
    """Trim the heap right before a fork (module docstring). Returns whether it trimmed."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
