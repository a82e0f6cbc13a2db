"""``check --full``'s second process (level 4: a forked child and a pipe):
the schema shape checks of a capture computed ahead while this process
re-annotates it (check/shape_oracle.py says why that gives exactly one
process's findings).

The child reads the same lists of lines the re-annotating process reads and
sends one pickled :data:`~mcptap.check.shape_oracle.Batch` per list (a few
KiB: a key id per line, the findings of the lines that have any). The parent
takes them in order (``next()``) without waiting: a batch not there yet (the
child is behind, e.g. on a busy machine), or none at all (the child is gone
or failed), and the parent checks that list itself.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
from collections.abc import Callable, Iterator

from mcptap.check.shape_oracle import Batch, Speculation


class ShapeChild:
    """Fork the speculating process over ``lines()`` (called in the child: an
    iterator of line lists). Raises OSError when no process can be had."""

    def __init__(self, lines: Callable[[], Iterator[list[bytes]]]) -> None:
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
                spec = Speculation()
                for batch in lines():
                    data = pickle.dumps(spec.batch(batch), protocol=pickle.HIGHEST_PROTOCOL)
                    view = memoryview(len(data).to_bytes(8, "little") + data)
                    while view:
                        view = view[os.write(w, view):]
                status = 0
            except BaseException:  # noqa: BLE001 - the parent then checks the rest itself
                pass
            finally:
                os._exit(status)
        os.close(w)
        self.fd = r
        self.buf = bytearray()
        self.done = False

    def next(self) -> Batch | None:
        """The next list's batch when it has arrived (a batch being written is
        waited for), else None: not there yet, or the child ended or failed."""
        buf = self.buf
        while True:
            if len(buf) >= 8:
                n = int.from_bytes(buf[:8], "little")
                if len(buf) >= 8 + n:
                    batch: Batch = pickle.loads(memoryview(buf)[8:8 + n])
                    del buf[:8 + n]
                    return batch
            elif self.done or not select.select([self.fd], [], [], 0)[0]:
                return None
            if self.done:
                return None
            data = os.read(self.fd, 1 << 16)
            if not data:
                self.done = True
                return None
            buf += data

    def close(self) -> None:
        """End the child (at once) and free the pipe; later calls do nothing."""
        if self.fd < 0:
            return
        if self.pid:
            end_child(self.pid)
            self.pid = 0
        os.close(self.fd)
        self.fd = -1
        self.done = True


def end_child(pid: int) -> None:
    """End a forked helper process at once (SIGKILL) and reap it: check's
    children hold no state worth a graceful stop."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
