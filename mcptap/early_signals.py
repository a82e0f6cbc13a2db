"""SIGTERM in mcptap's first moments, before a command can take it (only ``_signal``, ``os``).

From the first line of ``cli/entry.run`` a SIGTERM that would end the process by
default is held (``hold``) until the command is known. The ``SignalLatch``
(``transport/signal_latch.py``) of ``record``, ``serve`` and ``replay`` takes the held
ones over (``adopt``) and handles them as if they came then (serve and replay stop
with their capture finished): ``record --upstream`` stops with exit 0 and
a complete capture, as for a later SIGTERM (it used to die with 143 while Python
loaded click and the tap, ~0.4 s). Every other command gets the default back
when click has chosen it (``release``), and one held meanwhile then ends the
process as it would have (exit 143): nothing is lost, it merely comes a moment
later. A SIGTERM ignored at start stays ignored (nothing is held then).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import os
from types import FrameType

SIGTERM: int = _signal.SIGTERM
_held: list[int] = []


def _hold(signum: int, frame: FrameType | None) -> None:
    _held.append(signum)


def hold() -> None:
    """Hold SIGTERM from now on, when it has its default action (not ignored, no handler of a caller's)."""
    if _signal.getsignal(SIGTERM) == _signal.SIG_DFL:
        _signal.signal(SIGTERM, _hold)


def holding(handler: object) -> bool:
    """Whether ``handler`` (a signal's current handler) is this module's."""
    return handler is _hold


def adopt(signum: int) -> tuple[int, ...]:
    """The held ``signum`` signals, handed over to a caller that now catches
    ``signum`` itself (it restores the default action, not the holder, at its end)."""
    got = tuple(s for s in _held if s == signum)
    _held[:] = [s for s in _held if s != signum]
    return got


def release() -> None:
    """The default action back (when still holding); a SIGTERM held meanwhile is delivered now."""
    if _signal.getsignal(SIGTERM) is not _hold:
        return
    _signal.signal(SIGTERM, _signal.SIG_DFL)
    if adopt(SIGTERM):
        os.kill(os.getpid(), SIGTERM)
