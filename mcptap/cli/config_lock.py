"""The advisory lock that keeps two ``mcptap wrap`` / ``unwrap`` runs on one
host configuration apart.

Each run reads the file, computes the change and writes it back; two runs at
once (one wrapping server ``a``, the other ``b``) would each write their own
change over the other's. The lock is ``flock`` on ``.NAME.mcptap-lock``
beside the (symlink-resolved) configuration, held from before the file is
read until after it is written, then removed. Removing it is safe because a
run that got the lock checks that the path still names the file it locked
(else a third run could lock a new file of the same name while the second
holds the removed one). Hosts do not take this lock: ``save`` still checks
the file's bytes right before replacing it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from mcptap.cli.errors import Fail, say
from mcptap.escape import escape_name

LOCK_SUFFIX = ".mcptap-lock"
#: how long a run waits for another mcptap run on the same file (seconds)
WAIT = 30.0
_POLL = 0.02
#: seconds of waiting after which the run says on stderr what it waits for
SAY_AFTER = 1.0


def lock_path(real: str) -> str:
    """``DIR/.NAME.mcptap-lock`` for the configuration ``DIR/NAME``."""
    head, tail = os.path.split(real)
    return os.path.join(head, f".{tail}{LOCK_SUFFIX}")


@contextmanager
def config_lock(real: str, shown: str) -> Iterator[None]:
    """Hold the lock of configuration ``real`` (``shown``: its name for
    messages) for the ``with`` body. Raises Fail when another mcptap run
    holds it for longer than WAIT seconds, or the lock file cannot be
    created. Without ``fcntl`` (Windows) runs are not kept apart."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    path = lock_path(real)
    start = time.monotonic()
    deadline = start + WAIT
    told = False
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise Fail(f"{escape_name(shown)}: cannot create the lock file {escape_name(path)}: {exc.strerror or exc}") from None
        try:
            while True:                 # the file stays open while waiting (tests watch for it)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not told and time.monotonic() - start > SAY_AFTER:
                        told = True
                        say(f"{escape_name(shown)}: waiting for another mcptap wrap/unwrap to finish with this file (up to {WAIT:.0f} s)")
                    if time.monotonic() > deadline:
                        os.close(fd)
                        raise Fail(f"{escape_name(shown)}: another mcptap wrap/unwrap is changing this file (lock {escape_name(path)}); "
                                   "nothing written, try again") from None
                    time.sleep(_POLL)
        except OSError:
            # a file system without flock: run unlocked rather than not at all
            os.close(fd)
            yield
            return
        try:
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        mine = os.fstat(fd)
        if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            os.close(fd)                # the holder before us removed it: lock the one there now
            continue
        break
    try:
        yield
    finally:
        try:
            os.unlink(path)             # while still locked: a waiter on it then sees it gone and retries
        except OSError:
            pass
        os.close(fd)
