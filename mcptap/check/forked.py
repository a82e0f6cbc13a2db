"""The forked helper processes of ``check`` (level 4: fork, pipes, temporary
files): the plumbing check/parallel.py's scanning child, check/shape_child.py's
speculating child and check/fullsplit.py's re-annotating child share.

A :class:`Forked` child runs ``work(fd)`` (``fd``: the write end of a pipe to
the parent) and ends with ``os._exit`` (status 0: ``work`` returned, 1: it
raised; ^C is the parent's to handle, which ends the child). The parent reads
the pipe: all of it at once (:meth:`Forked.result`, one pickled object), as it
once it has come (:meth:`Forked.ready`), or in length-prefixed frames
(:func:`send_frame`, check/shape_child.py). :class:`Spill` holds the bytes a
child adds to each stream digest in unnamed temporary files (memory stays flat).

    child = Forked(work)              # raises OSError: no process or pipe to be had
    child.result() -> Any | None      # the pickled object sent (write_all of a pickle), None: the child failed
    child.close()                     # ends the child at once (SIGKILL) and frees the pipe
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import tempfile
from collections.abc import Callable
from typing import Any

STREAMS = ("c2s", "s2c", "stderr")


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (blocking)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send_frame(fd: int, obj: Any) -> None:
    """Send ``obj`` pickled, after its length (8 bytes, little-endian): one of many (``Forked.frame``)."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    write_all(fd, len(data).to_bytes(8, "little") + data)


class Forked:
    """A forked child running ``work(fd)``; ``failed(exc)``, in the child, is
    told what ``work`` raised before it ends with status 1. Raises OSError
    when no pipe or process can be had."""

    def __init__(self, work: Callable[[int], None], failed: Callable[[BaseException], None] = lambda exc: None) -> None:
        r, w = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            raise
        if self.pid == 0:                       # the child
            os.close(r)
            status = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent handles ^C and ends this process
                work(w)
                status = 0
            except BaseException as exc:  # noqa: BLE001 - the parent then does this work itself
                failed(exc)
            finally:
                os._exit(status)
        os.close(w)
        self.fd = r
        self.buf = bytearray()
        self.eof = False
        self.status: int | None = None

    # -- everything the child sends, read at once or as it comes -----------------------
    def ready(self, wait: bool = False) -> bool:
        """Whether the child has sent something or ended (``wait``: block until then)."""
        return self.eof or bool(select.select([self.fd], [], [], None if wait else 0)[0])

    def result(self) -> Any:
        """The object the child sent (a pickle, all it wrote), waited for; None when
        it failed or sent nothing."""
        while not self.eof:
            self._read()
        if self.status != 0 or not self.buf:
            return None
        obj = pickle.loads(self.buf)
        self.buf = bytearray()          # (its bytes are not kept beside the objects: peak memory)
        return obj

    def _read(self) -> None:
        data = os.read(self.fd, 1 << 20)
        if data:
            self.buf += data
            return
        self.eof = True
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        self.status = status

    # -- length-prefixed frames, as they come -------------------------------------------
    def frame(self, wait: bool = False) -> Any:
        """The next frame's object (``send_frame``) when it has arrived (a
        frame being written is waited for; ``wait``: any frame), else None:
        not there yet, or the child ended or failed."""
        buf = self.buf
        while True:
            if len(buf) >= 8:
                n = int.from_bytes(buf[:8], "little")
                if len(buf) >= 8 + n:
                    obj = pickle.loads(memoryview(buf)[8:8 + n])
                    del buf[:8 + n]
                    return obj
            elif self.eof or not select.select([self.fd], [], [], None if wait else 0)[0]:
                return None
            if self.eof:
                return None
            data = os.read(self.fd, 1 << 16)
            if not data:
                self.eof = True
                return None
            buf += data

    def close(self) -> None:
        """End the child (at once) and free the pipe; later calls do nothing."""
        if self.pid:
            end_child(self.pid)
            self.pid = 0
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.eof = True


class Spill:
    """Unnamed temporary files, one per stream of ``STREAMS``: the bytes a
    child adds to each stream digest, for the parent to hash after its own.
    Raises OSError when they cannot be made."""

    def __init__(self) -> None:
        self.files: dict[str, Any] = {}
        try:
            for name in STREAMS:
                self.files[name] = tempfile.TemporaryFile()
        except OSError:
            self.close()
            raise

    def write(self, name: str, data: bytes) -> None:
        self.files[name].write(data)

    def flush(self) -> None:
        for f in self.files.values():
            f.flush()

    def replay(self, into: Callable[[str, bytes], None]) -> None:
        """``into(stream, block)`` with every byte spilled, in order, in blocks."""
        for name, f in self.files.items():
            f.seek(0)
            while block := f.read(1 << 20):
                into(name, block)

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def end_child(pid: int) -> None:
    """End a forked helper process at once (SIGKILL) and reap it: check's
    children hold no state worth a graceful stop."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
