"""Progress on stderr for commands that can run longer than a second (check,
show, diff, replay, export, scrub, report, …): one line, rewritten in place at
most four times a second, only when stderr is a terminal and only once the
command has run for ``DELAY`` seconds; cleared when the work ends. Nothing
otherwise, so pipes, files and CI logs stay clean.

    with progress("check", paths):
        report = run_check(paths)

What is shown: megabytes of capture read (``capture.source.bytes_read``, every
reader in the process), with a percentage of the inputs' total size when they
are plain files.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO

from mcptap.capture.source import bytes_read

DELAY = 1.0          # s before the first line
INTERVAL = 0.25      # s between updates


def _sizes(paths: Iterable[str]) -> int | None:
    total = 0
    for p in paths:
        try:
            with open(p, "rb") as fp:
                if fp.read(2) == b"\x1f\x8b":
                    return None                     # gzip: the decompressed size is unknown
            total += os.path.getsize(p)
        except OSError:
            return None
    return total


def line(label: str, done: int, total: int | None, elapsed: float) -> str:
    """The progress text (no escape codes): ``mcptap: check: 12.3 MB read (45%), 3 s``."""
    text = f"mcptap: {label}: {done / 1e6:,.1f} MB read"
    if total:
        text += f" ({min(99, int(100 * done / total))}%)"
    return f"{text}, {elapsed:.0f} s"


@contextmanager
def progress(label: str, paths: Iterable[str] = (), stream: IO[str] | None = None,
             delay: float = DELAY, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Show progress of the work inside the ``with`` block (module doc).
    ``paths``: the captures it reads (for a percentage); ``stream``: default
    stderr (nothing is shown unless it is a terminal)."""
    out = stream if stream is not None else sys.stderr
    try:
        tty = out.isatty()
    except (ValueError, OSError):
        tty = False
    if not tty:
        yield
        return
    paths = list(paths)
    total = _sizes([p for p in paths if p != "-"]) if paths and "-" not in paths else None
    start_bytes, start = bytes_read(), clock()
    stop = threading.Event()
    shown = [False]

    def run() -> None:
        if stop.wait(delay):
            return
        while True:
            try:
                out.write("\r\033[K" + line(label, bytes_read() - start_bytes, total, clock() - start))
                out.flush()
            except (OSError, ValueError):
                return
            shown[0] = True
            if stop.wait(INTERVAL):
                return

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
