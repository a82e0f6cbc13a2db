"""Signals in mcptap's first moments, before a command can take them (only ``_signal``, ``os``).

From the first line of ``cli/entry.run`` every signal that ``record``, ``serve`` and
``replay`` later handle themselves and whose default action would end the process
(``HELD``: SIGTERM, SIGHUP, SIGQUIT — the stop signals a host sends — and SIGUSR1,
SIGUSR2, SIGALRM, which they pass on to the server or ignore) is held (``hold``) until
the command is known. The ``SignalLatch`` (``transport/signal_latch.py``) of those three
commands takes the held ones over (``adopt``) and handles them as if they came then
(serve and replay stop with their capture finished; ``record --upstream`` stops with
exit 0 and a complete capture): each used to kill mcptap (exit 128+N, no capture) while
Python loaded click and the tap, ~0.4 s. Every other command gets the defaults back
when click has chosen it (``release``), and one held meanwhile then ends the process as
it would have (exit 128+N): nothing is lost, it merely comes a moment later. A signal
ignored at start stays ignored (nothing is held then). SIGINT is not held: from the
first line it is ``mcptap: interrupted`` and exit 130, as Ctrl-C is meant to be.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import os
from collections.abc import Iterable
from types import FrameType

SIGTERM: int = _signal.SIGTERM
#: the signals held from the start (transport/signal_latch's STOP_SIGNALS but SIGINT, and PASSED_ON_SIGNALS)
HELD: tuple[int, ...] = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1, _signal.SIGUSR2, _signal.SIGALRM)
_held: list[int] = []


def _hold(signum: int, frame: FrameType | None) -> None:
    _held.append(signum)


def hold() -> None:
    """Hold the ``HELD`` signals from now on, each when it has its default action (not ignored, no handler of a caller's)."""
    for s in HELD:
        if _signal.getsignal(s) == _signal.SIG_DFL:
            _signal.signal(s, _hold)


def holding(handler: object) -> bool:
    """Whether ``handler`` (a signal's current handler) is this module's."""
    return handler is _hold


def adopt(signums: int | Iterable[int]) -> tuple[int, ...]:
    """The held signals among ``signums``, in arrival order, handed over to a caller that now
    catches them itself (it restores the default action, not the holder, at its end)."""
    want = {signums} if isinstance(signums, int) else set(signums)
    got = tuple(s for s in _held if s in want)
    _held[:] = [s for s in _held if s not in want]
    return got


def release() -> None:
    """The default actions back (for the signals still held); the signals held meanwhile are delivered now, in order."""
    mine = [s for s in HELD if _signal.getsignal(s) is _hold]
    for s in mine:
        _signal.signal(s, _signal.SIG_DFL)
    for s in adopt(mine):
        os.kill(os.getpid(), s)
