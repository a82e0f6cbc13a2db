"""Progress on stderr for commands that can run longer than a second (check,
show, diff, replay, export, scrub, report, …): one line, rewritten in place at
most four times a second, only when stderr is a terminal and only once the
command has run for ``DELAY`` seconds; cleared when the work ends. Nothing
otherwise, so pipes, files and CI logs stay clean.

    with progress("check", paths):
        report = run_check(paths)

What is shown: megabytes of capture read (``capture.source.bytes_read``, every
reader in the process), with a percentage of the inputs' total size when they
are plain files; or, when the command passes ``status``, its own text (replay:
requests sent and answered) whenever that returns one.

Nothing either while standard output is that same terminal, unless the
command says it writes to standard output only after the work
(``stdout_after``: check, diff, replay): a line rewritten in place between
lines of output would be glued to them (``export`` or ``scrub -o -`` to the
terminal), and the output shows how far the work has come anyway. A command
that writes to a file (``export``/``scrub``/``report -o FILE``: ``output``)
shows it whatever standard output is, unless that file is the terminal
(``-o /dev/tty``).

``MCPTAP_PROGRESS_DELAY`` (seconds) overrides ``DELAY``; at 0 the first line
is written before the work starts, so a test on a pseudo-terminal sees it
without depending on how long the work takes; ``inf`` (or any value too large
to wait for) shows none. A value that is no number of seconds ≥ 0 (``-1``,
``nan``, ``soon``) is ignored with a one-line warning on the terminal.
"""

from __future__ import annotations

import math
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO

from mcptap.capture.source import bytes_read

DELAY = 1.0          # s before the first line (MCPTAP_PROGRESS_DELAY overrides)
INTERVAL = 0.25      # s between updates


def _sizes(paths: Iterable[str]) -> int | None:
    total = 0
    for p in paths:
        try:
            if not stat.S_ISREG(os.stat(p).st_mode):
                return None     # a FIFO or <(…): no size, and never opened here (its bytes are the reader's)
            with open(p, "rb") as fp:
                if fp.read(2) == b"\x1f\x8b":
                    return None                     # gzip: the decompressed size is unknown
            total += os.path.getsize(p)
        except OSError:
            return None
    return total


def line(label: str, done: int, total: int | None, elapsed: float) -> str:
    """The progress text (no escape codes): ``mcptap: check: 12.3 MB read (45%), 3 s``."""
    if total:
        # check's two processes both read where the halves meet (the split's look past the middle)
        done = min(done, total)
    text = f"mcptap: {label}: {done / 1e6:,.1f} MB read"
    if total:
        text += f" ({min(99, int(100 * done / total))}%)"
    return f"{text}, {elapsed:.0f} s"


def _delay(out: IO[str]) -> float:
    """``MCPTAP_PROGRESS_DELAY`` as seconds ≥ 0 (``inf`` included), else ``DELAY``
    with a warning on ``out`` (a terminal) naming the value."""
    text = os.environ.get("MCPTAP_PROGRESS_DELAY")
    if not text:                    # unset, or set empty (as unset, by the usual convention)
        return DELAY
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if value >= 0:                  # False for nan
        return value
    try:
        out.write(f"mcptap: MCPTAP_PROGRESS_DELAY={text!r}: not a number of seconds >= 0 (e.g. 0, 2.5, inf); "
                  f"using {DELAY:g}\n")
    except (OSError, ValueError):
        pass
    return DELAY


def _path_is_terminal(out: IO[str], path: str) -> bool:
    """Whether the file at ``path`` (an output named by the user: ``-o /dev/tty``,
    ``-o /dev/stdout`` on a terminal) is the terminal ``out`` is."""
    if os.path.realpath(path) == "/dev/tty":
        return True                     # the controlling terminal: taken as this one
    try:
        a, b = os.fstat(out.fileno()), os.stat(path)
    except (ValueError, OSError):       # not there yet: a file to be made, no terminal
        return False
    return (a.st_dev, a.st_ino, a.st_rdev) == (b.st_dev, b.st_ino, b.st_rdev)


def _same_terminal(out: IO[str], stdout: IO[str] | None) -> bool:
    """Whether ``stdout`` is a terminal, the one ``out`` (a terminal) is."""
    try:
        if stdout is None or not stdout.isatty():
            return False
    except (ValueError, OSError):
        return False
    try:
        a, b = os.fstat(out.fileno()), os.fstat(stdout.fileno())
    except (ValueError, OSError):       # (io.UnsupportedOperation too) a stream with no descriptor
        return False
    return (a.st_dev, a.st_ino, a.st_rdev) == (b.st_dev, b.st_ino, b.st_rdev)


@contextmanager
def progress(label: str, paths: Iterable[str] = (), stream: IO[str] | None = None,
             delay: float | None = None, clock: Callable[[], float] = time.monotonic,
             status: Callable[[], str | None] | None = None, stdout_after: bool = False,
             output: str | None = None) -> Iterator[None]:
    """Show progress of the work inside the ``with`` block (module doc).
    ``paths``: the captures it reads (for a percentage); ``stream``: default
    stderr (nothing is shown unless it is a terminal); ``delay``: seconds
    before the first line (default ``DELAY`` or ``MCPTAP_PROGRESS_DELAY``;
    ``inf`` or too large to wait for: none); ``status``: called from the
    progress thread, its text (without the ``mcptap: LABEL:`` prefix or
    elapsed time) replaces the bytes-read line while it returns one;
    ``stdout_after``: the block writes nothing to standard output, so a line
    is shown even while standard output is the same terminal; ``output``: the
    file the block writes its output to (``-o``; ``"-"``: standard output), so a
    line is shown unless that is the same terminal (export, scrub, report)."""
    out = stream if stream is not None else sys.stderr
    try:
        tty = out.isatty()
    except (ValueError, OSError):
        tty = False
    if output is not None and output != "-":
        same = _path_is_terminal(out, output)
    else:
        same = not stdout_after and _same_terminal(out, sys.stdout)
    if not tty or same:
        yield
        return
    if delay is None:
        delay = _delay(out)
    if not delay < threading.TIMEOUT_MAX:       # inf (or nan): no wait can be that long, so never
        yield
        return
    paths = list(paths)
    total = _sizes([p for p in paths if p != "-"]) if paths and "-" not in paths else None
    start_bytes, start = bytes_read(), clock()
    stop = threading.Event()
    shown = [False]

    def show() -> bool:
        own = status() if status is not None else None
        text = (f"mcptap: {label}: {own}, {clock() - start:.0f} s" if own is not None
                else line(label, bytes_read() - start_bytes, total, clock() - start))
        try:
            out.write("\r\033[K" + text)
            out.flush()
        except (OSError, ValueError):
            return False
        shown[0] = True
        return True

    def run() -> None:
        if stop.wait(delay if delay > 0 else INTERVAL):      # at 0 the first line is already out
            return
        while show():
            if stop.wait(INTERVAL):
                return

    if delay <= 0:
        show()                                  # at once: deterministic for tests (module doc)

    t = threading.Thread(target=run, name="mcptap-progress", daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        if shown[0]:
            try:
                out.write("\r\033[K")
                out.flush()
            except (OSError, ValueError):
                pass
