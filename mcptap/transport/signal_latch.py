"""Signals that arrive before a tap's own receiver is installed (main thread, no trio).

``SignalLatch(signals).install()`` from the moment a capture exists; the tap
``take()``s what arrived and acts as if it came then; ``restore()`` at the end.
Used by the stdio tap (``FORWARDED_SIGNALS``, forwarded to the server) and the
HTTP tap (SIGINT/SIGTERM: stop).

A signal mcptap was started with ignored stays ignored, in every command and
from the first instant to the end (``handled``): ``cmd &`` in a non-interactive
shell ignores SIGINT (and SIGQUIT), ``nohup`` SIGHUP, and POSIX shells likewise
never trap a signal ignored on entry. Python itself leaves an inherited SIGINT
ignored, so mcptap could not act on one that came before its own code ran: taken
over later, a ``kill -INT`` was lost or stopped mcptap depending on when it came.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from mcptap import early_signals

#: the signals a host (or a terminal) sends to stop a server: forwarded to its process
#: group, and a repeated one escalates (transport/stdio_signals.py)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
#: signals meant for the server itself (node opens its inspector on SIGUSR1): forwarded
#: only; their default action would have killed mcptap and left the capture without its end
PASSED_ON_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
#: the signals the stdio tap forwards to the server's process group
FORWARDED_SIGNALS = STOP_SIGNALS + PASSED_ON_SIGNALS


def handled(signals: Iterable[int]) -> tuple[int, ...]:
    """Those of ``signals`` (numbers) mcptap may catch: all but the ones ignored
    in this process (SIG_IGN). mcptap never ignores a signal in its own process,
    so an ignored one was ignored when it started, and stays so."""
    return tuple(s for s in signals if signal.getsignal(s) != signal.SIG_IGN)


@contextmanager
def open_receiver(*signals: int) -> Iterator[AsyncIterator[int]]:
    """``trio.open_signal_receiver`` for the ``handled`` ones of ``signals``
    (main thread, in trio); with none left, an iterator that never yields."""
    # trio here: the CLI's users of ``handled`` (no trio) load this module too
    import trio

    mine = handled(signals)
    if not mine:
        yield _Never()
        return
    with trio.open_signal_receiver(*mine) as received:
        yield received


class _Never:
    """The receiver of no signals: waits for ever (until cancelled)."""

    def __aiter__(self) -> _Never:
        return self

    async def __anext__(self) -> int:
        import trio

        await trio.sleep_forever()
        raise AssertionError("unreachable")


class SignalLatch:
    """Holds signals (default ``FORWARDED_SIGNALS``) received before the tap's own receiver is
    installed, from the moment the capture exists (``install``, main thread):
    without it a host's early SIGTERM killed mcptap between creating the
    capture and starting the tap, leaving it empty or without its end record.
    The tap takes them (``take``) and handles them as if they came then:
    forwarded to the server, recorded. While the tap's trio receiver is
    installed it gets the signals; once it is gone (the tap returned) they land
    here again and only say mcptap was asked to stop (``got``)."""

    def __init__(self, signals: tuple[int, ...] = FORWARDED_SIGNALS, ignoring: tuple[int, ...] = ()) -> None:
        self.signals = signals
        #: signals nothing in this command receives (the HTTP tap and mock have no server process to
        #: pass SIGUSR1/SIGUSR2/SIGALRM on to): ignored from ``install`` to ``restore``, as their
        #: default action would end mcptap with its capture unfinished
        self.ignoring = ignoring
        self.got: list[int] = []           # signal numbers, in arrival order
        self._taken = 0
        self._old: dict[int, Any] = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.got.append(signum)

    def install(self) -> SignalLatch:
        """Catch the ``handled`` ones of ``signals`` (``self.signals`` then names those);
        the signals held since mcptap started (``mcptap/early_signals.py``) are taken over
        as if they came now, in their order (those of ``ignoring`` dropped, as they are
        later), and the default action is what ``restore`` puts back."""
        self.signals = handled(self.signals)
        for s in self.signals:
            old = signal.signal(s, self._on_signal)
            self._old[s] = signal.SIG_DFL if early_signals.holding(old) else old
        for s in handled(self.ignoring):
            old = signal.signal(s, signal.SIG_IGN)
            self._old.setdefault(s, signal.SIG_DFL if early_signals.holding(old) else old)
        early_signals.adopt(self.ignoring)
        self.got.extend(early_signals.adopt(self.signals))
        return self

    def restore(self) -> None:
        """Put back the handlers ``install`` replaced (idempotent)."""
        old, self._old = self._old, {}
        for s, h in old.items():
            signal.signal(s, h)

    def take(self) -> list[int]:
        """The signals received since the last ``take`` (the tap forwards them)."""
        new = self.got[self._taken:]
        self._taken = len(self.got)
        return new
