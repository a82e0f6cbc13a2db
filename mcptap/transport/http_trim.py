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

``map_large_blocks()``: glibc serves a block from ``MMAP_THRESHOLD`` up with a
mapping of its own, unmapped when freed, but raises that threshold to the
size of each such block freed (up to 32 MiB). After the stdio tap's first
1 MiB read of the copy pipe was freed, every later MiB-sized buffer (copy
reads, chunk records, record lines) came from a thread's malloc arena, between
small blocks still in use, and a 1M-notification flood left the mcptap
process 4-10 MiB larger for the rest of the session (the trim gives back
free chunks' pages and the main heap's top, not a thread arena's top; tried,
no change). Fixed at glibc's default, a large buffer's pages go back when it
is freed. Its cost: those pages are faulted in afresh each time (a 1M-
notification flood, ~100 MB: 12-35k minor faults in mcptap's idle-priority
analysis threads instead of 2-3k; the relay's pumps reuse their buffers).
"""

from __future__ import annotations

import select
from collections.abc import Callable

#: s without a new batch after which the recorder counts as idle and trims its heap
IDLE_S = 0.05
#: bytes from which a block gets a mapping of its own (glibc's default, kept fixed: module docstring)
MMAP_THRESHOLD = 128 << 10
_M_MMAP_THRESHOLD = -3         # mallopt's parameter number (malloc.h)


def _load(name: str) -> Callable[..., int] | None:
    try:
        import ctypes

        fn: Callable[..., int] = getattr(ctypes.CDLL(None), name)
    except (ImportError, OSError, AttributeError):
        return None         # not glibc, or a Python built without ctypes
    return fn


#: glibc's ``malloc_trim`` (looked up before the fork: the recorder shares the lookup), or None
_TRIM = _load("malloc_trim")
#: glibc's ``mallopt``, or None
_MALLOPT = _load("mallopt")


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


def map_large_blocks() -> bool:
    """From now on, every block of ``MMAP_THRESHOLD`` bytes or more is a mapping
    of its own in this process, given back when freed (module docstring).
    Returns whether the C library took the setting."""
    if _MALLOPT is None:
        return False
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
