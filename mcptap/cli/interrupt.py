"""How mcptap ends on Ctrl-C (a host's SIGINT): one line on stderr and exit
status 130 (128 + SIGINT), wherever it lands.

While a command runs, Python's own handler (a KeyboardInterrupt) stays: trio
protects its internals only from that one, and a command's ``finally`` blocks
remove what it was writing. Where there is nothing of ours to finish (mcptap
importing itself or a command's module, the interpreter shutting down)
``at_once`` ends the process on the spot instead: a KeyboardInterrupt there was
a traceback, or was lost (raised in an import lock's weakref callback, Python
prints "Exception ignored" and goes on, and the session ran on as if no signal
had come). Only the C module ``_signal`` is imported (``signal`` imports enum:
milliseconds more at start-up before the handler is in place).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import contextlib
import os
from collections.abc import Iterator
from types import FrameType

MESSAGE = "mcptap: interrupted"
EXIT_INTERRUPTED = 130
SIGINT: int = _signal.SIGINT


def interrupted_line() -> str:
    """The line that says mcptap was interrupted; on a terminal after a blank
    one that closes the terminal's ``^C`` echo (elsewhere it is a stray line)."""
    try:
        tty = os.isatty(2)
    except OSError:
        tty = False
    return ("\n" if tty else "") + MESSAGE + "\n"


def at_once(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler: the line on fd 2 and ``os._exit(130)``."""
    try:
        os.write(2, interrupted_line().encode())
    except OSError:
        pass
    os._exit(EXIT_INTERRUPTED)


def python_handles() -> bool:
    """True while SIGINT raises Python's KeyboardInterrupt (not ignored, not
    another handler: a latch, trio's, a test's)."""
    return bool(_signal.getsignal(SIGINT) is _signal.default_int_handler)


def set_handler(handler: object) -> None:
    _signal.signal(SIGINT, handler)


def default_handler() -> object:
    return _signal.default_int_handler


@contextlib.contextmanager
def ending_at_once() -> Iterator[None]:
    """SIGINT ends the process at once in this block (where Python would raise
    KeyboardInterrupt; any other handler is left alone)."""
    if not python_handles():
        yield
        return
    set_handler(at_once)
    try:
        yield
    finally:
        if _signal.getsignal(SIGINT) is at_once:
            set_handler(_signal.default_int_handler)
