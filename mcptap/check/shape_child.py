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

from collections.abc import Callable, Iterator

from mcptap.check.forked import Forked, send_frame
from mcptap.check.shape_oracle import Batch, Speculation


class ShapeChild:
    """Fork the speculating process over ``lines()`` (called in the child: an
    iterator of line lists). Raises OSError when no process can be had."""

    def __init__(self, lines: Callable[[], Iterator[list[bytes]]]) -> None:
        def work(w: int) -> None:
            spec = Speculation()
            for batch in lines():
                send_frame(w, spec.batch(batch))

        self.child = Forked(work)

    def next(self) -> Batch | None:
        """The next list's batch when it has arrived (a batch being written is
        waited for), else None: not there yet, or the child ended or failed."""
        batch: Batch | None = self.child.frame()
        return batch

    def close(self) -> None:
        """End the child (at once) and free the pipe; later calls do nothing."""
        self.child.close()
