"""``check`` of one capture file, fast (level 4: files and a child process).

A capture written under the current rules is checked by the fast scan
(mcptap/check/scan.py): this process scans the first part of its records
while a forked child scans the rest (split at a line boundary, so that both
end together: the child takes that much more as this process spent on its
start and imports before the fork, timed on the lines before it). The child
hands back its scan state (pickled, through a pipe) and the bytes its half
adds to each stream digest (through unnamed temporary files, so memory stays
flat); this process hashes them after its own and merges the state
(``Scan.absorb``), which gives exactly the report one pass gives. When the
halves cannot be merged exactly (see ``Scan.absorb``), this process scans the
second half itself. A capture that needs re-annotation (``--full``, other
rules, ``chunk`` records) goes through :class:`~mcptap.check.fullscan.FullScan`
in this process, a very big stdio capture's second half in a second process when its
re-annotation state at the middle is this process's (check/fullsplit.py), else a big
stdio capture's schema shape checks computed ahead in a second (check/shape_child.py); a gzip capture is
scanned in one process as it is decompressed. Anything the scans do not
handle (damaged records), standard input and every capture error go the
reference way (``report.check_capture``), which also words the errors.

    check_capture(path, keep=3, shapes=True, reuse=True) -> CaptureReport
"""

from __future__ import annotations

import gc
import mmap
import os
import pickle
import stat
import time
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from mcptap.capture.format import VERSION
from mcptap.capture.integrity import StreamTally
from mcptap.capture.reader import CaptureStream, has_chunks
from mcptap.capture.source import add_bytes_read, lines, open_input, opened, read_line
from mcptap.check.file_ranges import BATCH, balanced, batches, line_start, middle
from mcptap.check.forked import STREAMS, Forked, Spill, write_all
from mcptap.check.report import CaptureReport
from mcptap.check.report import check_capture as reference_check
from mcptap.check.scan import Scan, Unsupported
from mcptap.errors import CaptureReadError
from mcptap.protocol.fingerprint import rules_fingerprint

if TYPE_CHECKING:
    from mcptap.check.fullscan import FullScan
    from mcptap.check.shape_child import ShapeChild

#: records (bytes) below which one process is faster than forking a second
SPLIT_BYTES = 8 << 20
SAMPLE = 1 << 20        # bytes of lines timed before the fork (how fast this machine scans: check/file_ranges.balanced)
SPLIT_FULL_BYTES = 96 << 20    # records (bytes) from which check --full splits the capture between two processes (check/fullsplit.py)
#: this process's CPU after the child's work ends, as a fraction of the child's scan (hashing the bytes its
#: half adds to the stream digests, the merge, the report: ~4% on a 1M-message stdio capture)
AFTER = 0.04
GC_YOUNG = 100_000      # the young generation's collection threshold while a capture is re-annotated


def check_capture(path: str, keep: int = 3, shapes: bool = True, reuse: bool = True, workers: int | None = None) -> CaptureReport:
    """Check one capture file, as ``report.check_capture`` does (the same
    report), on up to ``workers`` processes (default: 2 when this process may
    run on two cores). Raises CaptureReadError."""
    if path != "-" and _regular(path):       # a FIFO or <(…) can be read once: the reference way
        rep = _fast(path, keep, shapes, _cores() if workers is None else workers, reuse)
        if rep is not None:
            return rep
    return reference_check(path, keep, shapes, reuse)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True             # the reader words the error


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _fast(path: str, keep: int, shapes: bool, workers: int, reuse: bool = True) -> CaptureReport | None:
    stream = CaptureStream(path)        # the reader's checks and errors for the header
    stream.close()
    header = stream.header
    if stream.version != VERSION:
        return None
    if shapes:
        from mcptap.protocol import shapes as shape_rules

        shape_rules.available()         # imported once, before a fork
    try:
        fp = open(path, "rb")
    except OSError:
        return None
    with fp:
        gz = fp.peek(2)[:2] == b"\x1f\x8b"          # gzip: decompressed as it is read, one process
        start = len(fp.readline())
        size = os.fstat(fp.fileno()).st_size

        def feed(scan: Scan | FullScan, child: _Child | None = None, first: int = start, end: int = size) -> None:
            if gz:
                _feed_gzip(scan, path)
            else:
                _feed(scan, fp, first, end, child)

        if reuse and header.get("rules") and header.get("rules") == rules_fingerprint():
            try:
                return _reuse(path, fp if not gz else None, feed, header, keep, shapes, workers, start, size)
            except Unsupported as exc:
                if str(exc) != "chunk record" or not has_chunks(path):
                    return None
        if header.get("transport") == "http" and _unmarked_refusals(path):
            return None         # refusals of a capture older than their marker: found by the reference way's look-ahead
        two = not gz and workers > 1 and header.get("transport") == "stdio"

        def ahead(at: int | None) -> Iterator[list[bytes]]:     # the shape checks' process reads the same lists of lines
            with open(path, "rb") as own:
                yield from batches(own, start if at is None else at, size, lambda n: None)

        if two and size - start >= SPLIT_FULL_BYTES:
            from mcptap.check.fullsplit import run_split

            def split(scan: FullScan, speculate: Callable[[int], None], tallies: dict[str, StreamTally]) -> None:
                run_split(scan, path, start, size, lambda s, a, b: feed(s, None, a, b), lambda f, a, b: batches(f, a, b, lambda n: None),
                          tallies, speculate if shapes else None)

            return _full(path, feed, header, keep, shapes, ahead, split)
        return _full(path, feed, header, keep, shapes, ahead if shapes and two and size - start >= SPLIT_BYTES else None)


def _unmarked_refusals(path: str) -> bool:
    from mcptap.records.refusals import unmarked_refusals

    with opened(path) as src:
        return unmarked_refusals(src)


def _tallies() -> tuple[dict[str, StreamTally], Callable[[str, bytes], None]]:
    tallies = {name: StreamTally() for name in STREAMS}

    def hashed(name: str, data: bytes) -> None:
        tallies[name].sha.update(data)

    return tallies, hashed


def _full(path: str, feed: Callable[[FullScan], None], header: dict[str, Any], keep: int, shapes: bool,
          ahead: Callable[[int | None], Iterator[list[bytes]]] | None = None,
          split: Callable[[FullScan, Callable[[int], None], dict[str, StreamTally]], None] | None = None) -> CaptureReport | None:
    """Re-annotation (--full, other rules, chunk records): this process, and
    with ``ahead`` (the lists of lines this process reads from a byte on, None: the first) a
    second one that computes the schema shape checks ahead (check/shape_child.py);
    ``split``: the capture's second half in a second process instead (check/fullsplit.py),
    which starts the shape checks' process (``speculate(byte)``) when it does not take it."""
    from mcptap.check.fullscan import FullScan  # the re-annotator (~0.1 s of imports): only for this path
    from mcptap.check.shape_child import ShapeChild  # (with shape_oracle: not on the reuse path)

    tallies, hashed = _tallies()
    scan = FullScan(header, keep, shapes, hashed)
    children: list[ShapeChild] = []

    def speculate(at: int | None) -> None:
        assert ahead is not None
        try:
            child = ShapeChild(lambda: ahead(at))
        except OSError:                 # no second process to be had: this one checks the shapes
            return
        children.append(child)
        scan.speculated(child.next, child.close)

    if ahead is not None and split is None:
        speculate(None)
    threshold = gc.get_threshold()
    # re-annotation allocates a few objects per message that mostly die young, without cycles:
    # fewer young-generation collections (~5% of its CPU at the default threshold)
    gc.set_threshold(max(threshold[0], GC_YOUNG), *threshold[1:])
    try:
        if split is not None:
            split(scan, speculate, tallies)
        else:
            feed(scan)
        scan.end_of_input()
    except Unsupported:
        return None
    finally:
        gc.set_threshold(*threshold)
        for child in children:
            child.close()
    return scan.report(path, tallies)


def _reuse(path: str, fp: IO[bytes] | None, feed: Callable[..., None], header: dict[str, Any], keep: int, shapes: bool, workers: int,
           start: int, size: int) -> CaptureReport:
    """Recorded annotations reused: two processes when the capture is a big
    plain file (``fp``). Raises Unsupported."""
    mid = middle(fp, start, size) if fp is not None and workers > 1 and size - start >= SPLIT_BYTES else None
    tallies, hashed = _tallies()
    scan = Scan(header.get("transport"), keep, shapes, True, hashed)
    child = None
    head = start
    if mid is not None and fp is not None:
        # the first lines scanned before the fork: the shape checks' wire models and quick checks
        # their messages need (~0.2 s of imports and code generation) are then built once, for both processes
        head = line_start(fp, min(mid, start + BATCH))
        feed(scan, None, start, head)
        # the next lines scanned timed: this process has already spent its start and those imports,
        # so the child takes that much more of the rest (wall time is the slower process's)
        sample = line_start(fp, min(mid, head + SAMPLE))
        cpu = time.process_time()
        feed(scan, None, head, sample)
        took = time.process_time() - cpu
        # this process's work after the child's (hashing the child's stream bytes, the merge, the report) as
        # CPU already spent: the child then takes that much more
        after = AFTER * (size - sample) / 2 * took / (sample - head) if sample > head else 0.0
        mid = balanced(fp, sample, size, mid, sample - head, took, time.process_time() + after)
        head = sample
        try:
            child = _Child(path, header.get("transport"), keep, shapes, mid, size)
        except OSError:                 # no process or temporary file to be had: one process
            mid = None
    try:
        feed(scan, child, head, mid if mid is not None else size)
        if child is not None:
            assert mid is not None
            state = child.result()
            scan.flush()
            if state is not None and scan.absorb(state):
                child.hash_into(tallies)
            else:
                feed(scan, None, mid, size)
        scan.end_of_input()
    finally:
        if child is not None:
            child.close()
    return scan.report(path, header, tallies)


def _feed(scan: Scan | FullScan, fp: IO[bytes], start: int, end: int, child: _Child | None = None) -> None:
    """Feed ``scan`` the lines in bytes [start, end), counting progress (the child's too)."""
    done = [0]

    def progress(n: int) -> None:
        add_bytes_read(n - done[0])
        done[0] = n
        if child is not None:
            child.progress()

    for batch in batches(fp, start, end, progress):
        scan.run(batch)


def _feed_gzip(scan: Scan | FullScan, path: str) -> None:
    """Feed ``scan`` the lines of a gzip capture after its header (the
    reader's source: a stream that ends early reads as a cut last line)."""
    fp = open_input(path)
    try:
        read_line(fp, path)
        batch: list[bytes] = []
        try:
            for line in lines(fp, path):
                batch.append(line)
                if len(batch) == 4096:
                    scan.run(batch)
                    batch = []
        except CaptureReadError:
            # damage further on (a CRC that fails): the lines before it are judged first, as a
            # reader taking one line at a time does, so a damaged line among them is the error
            scan.run(batch)
            raise
        scan.run(batch)
    finally:
        fp.close()


class _Child:
    """The forked process that scans bytes [mid, size) of the capture."""

    def __init__(self, path: str, transport: str | None, keep: int, shapes: bool, mid: int, size: int) -> None:
        self.spill = Spill()
        self.shared = mmap.mmap(-1, 16)        # the child's bytes read; byte 8: it failed (1), met a chunk record (2)
        self.counted = 0

        def failed(exc: BaseException) -> None:
            self.shared[8] = 2 if isinstance(exc, Unsupported) and str(exc) == "chunk record" else 1

        try:
            self.child = Forked(lambda w: self._run(w, path, transport, keep, shapes, mid, size), failed)
        except OSError:
            self.spill.close()
            self.shared.close()
            raise

    def _run(self, w: int, path: str, transport: str | None, keep: int, shapes: bool, mid: int, size: int) -> None:
        scan = Scan(transport, keep, shapes, False, self.spill.write)
        shared = self.shared

        def progress(n: int) -> None:
            shared[:8] = n.to_bytes(8, "little")

        with open(path, "rb") as fp:
            for batch in batches(fp, mid, size, progress):
                scan.run(batch)
        scan.end_of_input()
        self.spill.flush()
        data = pickle.dumps(scan.state(), protocol=pickle.HIGHEST_PROTOCOL)
        self.shared[:8] = (size - mid).to_bytes(8, "little")
        write_all(w, data)

    def progress(self) -> None:
        """Count the child's bytes read so far into this process's progress;
        raises Unsupported when the child met a chunk record (any other
        failure of the child: this process scans its half itself)."""
        b = int.from_bytes(self.shared[:8], "little")
        add_bytes_read(b - self.counted)
        self.counted = b
        if self.shared[8] == 2:           # a chunk record: re-annotation (FullScan) it is, at once
            raise Unsupported("chunk record")

    def result(self) -> dict[str, Any] | None:
        """The child's scan state, or None when it failed."""
        state: dict[str, Any] | None = self.child.result()
        self.progress_done()
        return state

    def progress_done(self) -> None:
        b = int.from_bytes(self.shared[:8], "little")
        add_bytes_read(b - self.counted)
        self.counted = b

    def hash_into(self, tallies: dict[str, StreamTally]) -> None:
        """Hash the child's stream bytes into ``tallies`` (after this process's own)."""
        self.spill.replay(lambda name, block: tallies[name].sha.update(block))

    def close(self) -> None:
        self.child.close()
        self.spill.close()
        self.shared.close()
