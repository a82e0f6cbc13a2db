"""The ``mcptap`` program's first code: the console script (``mcptap.cli.entry:run``),
``python -m mcptap``, ``python -m mcptap.cli.main`` and ``python -m mcptap.cli.entry``
start here, before click and the commands are imported.

A Ctrl-C (a host's SIGINT) may come at any moment, also while mcptap imports
(~50 ms) and while the interpreter shuts down, where Python's KeyboardInterrupt
was a full traceback on the host's stderr. From the first line of ``run`` on it
is one ``mcptap: interrupted`` line and exit status 130 (``cli/interrupt.py``);
a SIGINT the process was started with ignored (``cmd &`` in a script) stays
ignored to the end, in every command, as does any signal started ignored
(``nohup``'s SIGHUP): ``transport/signal_latch.handled``. Before that there is only the interpreter's start-up
(``site``, ``runpy``; short, unless .pth files import much: an editable
install's finder takes ~30 ms) and the load of this file, which imports nothing
of mcptap's for that reason. A SIGTERM, SIGHUP or SIGQUIT (and SIGUSR1, SIGUSR2,
SIGALRM) from the first line of ``run`` is held until the command takes it
(``mcptap/early_signals.py``): ``record``, ``serve`` and ``replay`` handle it as a later
one, the other commands end as by default once click has chosen them.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import os
import sys
from types import FrameType


def _at_once(signum: int, frame: FrameType | None) -> None:
    # interrupt.at_once, before that module is loaded
    try:
        os.write(2, (b"\n" if os.isatty(2) else b"") + b"mcptap: interrupted\n")
    except OSError:
        pass
    os._exit(130)


def _reserve_standard_fds() -> None:
    # Started with fd 0, 1 or 2 closed (`<&-`, `>&-`), the next file mcptap opens would take
    # that number: the capture would receive the server's bytes or lose its records to a
    # stdin read. /dev/null holds the place, as in daemon(3).
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            except OSError:
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    # the interpreter saw them closed and set sys.stdin/stdout/stderr to None: give them files
    # (what it would have made of /dev/null) so nothing of ours or click's writes to None
    if sys.stdin is None:
        sys.stdin = open(0, closefd=False)
    if sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)


def run() -> None:
    """Console entry point: ``mcptap.cli.main.main`` with SIGINT covered from
    the first line of mcptap's code to the interpreter's exit. File descriptors
    0-2 closed at start are opened on /dev/null first."""
    _reserve_standard_fds()
    handling = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
    if handling:
        _signal.signal(_signal.SIGINT, _at_once)
    from mcptap import early_signals  # (only _signal and os: SIGINT is covered already)
    early_signals.hold()                 # a stop signal before the command can take it: held for it
    try:
        try:
            from mcptap.cli import interrupt
            if handling:
                interrupt.set_handler(interrupt.at_once)
            from mcptap.cli.main import main
            if handling:
                interrupt.set_handler(interrupt.default_handler())
            main()
        finally:
            if handling and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
                _signal.signal(_signal.SIGINT, _at_once)   # shutting down: nothing of ours left to finish
            early_signals.release()     # one held by a command that never took it (a usage error) ends us as it would have
    except KeyboardInterrupt:
        # between main's own handlers (it reports Ctrl-C itself while a command runs)
        from mcptap.cli import interrupt
        sys.stderr.write(interrupt.interrupted_line())
        sys.exit(interrupt.EXIT_INTERRUPTED)


if __name__ == "__main__":
    run()
