"""``check --full`` of a big stdio capture on two cores (level 4: a forked
child, a pipe and temporary files).

Re-annotation is sequential: each message's annotations depend on the
annotator's state, which every message before it shaped. But that state is
small and forgets: a stdio session's phase, revision and capabilities, the
requests still open, the last ``DONE_WINDOW`` answered ids and progress
tokens. So a second process takes the second half of the capture: it starts
from the state after the first lines (forked after this process re-annotated
them), skips to a warm-up run of ``warm`` bytes before the middle, re-annotates
that run (its findings thrown away), which rebuilds the state the middle
has, and then the second half, grouping its findings (``report.add_finding``
with first places, merged as check/merge.py merges the plain scan's halves).
Meanwhile this process re-annotates the first half, and goes on past the
middle, waiting only while the second process's half, its state at the middle
found equal, progresses (``STALL``): when the second half arrives, it is taken (this
process's work past the middle dropped: :class:`split_adopt.Mark`) if it got further.

Exactness: at the middle both processes take a :func:`snapshot` of the whole
re-annotation state (the Reannotator, its Annotator, the scan's open
requests and sequence), every field but the pure caches and the counters the
halves add up. Only when the two are equal (byte for byte) is the second
half's work taken; the annotator is deterministic (a pure function of its
state and the lines fed), so it is what this process would have computed.
The second process sends its snapshot first, so this process learns early
when they differ (a request sent before the warm-up and answered in it, a
progress token answered longer ago than the window holds, a garbage line or a
gap before it…): then it forks another second process from where it is (which
has all of that), for the rest, ``TRIES`` in all; the last not taken, it
re-annotates the rest itself, its shape checks computed ahead by
check/shape_child.py's process (``speculate``). Each is forked at a line where
every open request is old (``_quiet``): a recent one is likely answered in the
lines it skips. The second process reads only records of the common ``TYPES``
(``FullScan.only_types``: no ``chunk`` record, which re-frames the streams
from there on, no end record); from the first other line (the end record at
the latest) this process goes on, from the second's final state.

    run_split(scan, path, start, size, feed, batches, tallies, speculate) -> None   # FullScan fed [start, size)
"""

from __future__ import annotations

import mmap
import select
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

import orjson

from mcptap.capture.integrity import StreamTally
from mcptap.capture.source import add_bytes_read
from mcptap.check import split_warm
from mcptap.check.file_ranges import line_start
from mcptap.check.forked import STREAMS, Forked, Spill, send_frame
from mcptap.check.fullscan import FullScan, Uncommon
from mcptap.check.split_adopt import Mark, adopt
from mcptap.check.split_skip import skip
from mcptap.check.split_state import SCAN_STATE, snapshot
from mcptap.model import severity_counts

Batches = Callable[[IO[bytes], int, int], Iterator[list[bytes]]]
#: bytes of lines the second process re-annotates before its half, at most (the state's memory: 4096 answered
#: ids and progress tokens; at one token in ten requests, ~90,000 lines of a tools/call capture); the first
#: second process's are sized by what the lines name (check/split_warm.py), later ones' are all of these
WARM_BYTES = 32 << 20
#: bytes re-annotated before the fork (the shape checks' models are built then, once for both)
HEAD_BYTES = 1 << 18
#: second processes forked, at most: when one's state at the middle is not this one's (a garbage line or a gap
#: before its warm-up, a request open across it), another is forked from where this process is then
TRIES = 3
#: lines read, at most, to a line where no request opened since is open (then the second process is forked anyway)
QUIET_LINES = 256

#: seconds without progress of the second process's half after which this process, past the middle, works on
#: itself (while it progresses, this process waits: on a busy machine its work there, mostly dropped, took CPU
#: from the second process, whose half is what it waits for)
STALL = 0.2

#: the record types the second process reads (the first of another type, or a damaged line: this process goes on);
#: ``chunk`` too when the streams are re-framed since before it was forked (then it frames the lines it skips)
TYPES = frozenset({"message", "stderr", "eof", "gap", "process", "context"})
#: CPU of a byte re-framed without annotation (check/split_skip.py), as a fraction of one re-annotated (measured on a
#: flood of which a third was framed live: 0.29 in instructions, 0.26 since its message records are counted by split_skip;
#: 0.24: at 0.3 the second process ended 0.2-0.4 s CPU before this one reached the middle, 6 runs of 1M messages)
SKIP_COST = 0.24
#: CPU of a byte of the second process's half and of its warm-up (no shape checks), as fractions of one re-annotated
#: here before the middle (1M-message recorded captures, 5 runs: 1.08-1.10, 0.82-0.86; at 1 and 1 the second ended last)
HALF_COST, WARM_COST = 1.09, 0.84
def run_split(scan: FullScan, path: str, start: int, size: int, feed: Callable[[FullScan, int, int], None], batches: Batches,
              tallies: dict[str, StreamTally], speculate: Callable[[int], None] | None = None) -> None:
    """Feed ``scan`` the lines in bytes [start, size) of the capture ``path``
    (``feed(scan, a, b)``: the lines in [a, b), both line starts), the second
    half in a second process when that gives the same result (module doc);
    ``batches(fp, a, b)``: the lines in [a, b) of ``fp`` in lists, as ``feed`` reads them.
    ``speculate(byte)``: when the lines from ``byte`` on are this process's alone (no
    split, or its second half not taken), called first (check/shape_child.py's process).
    ``tallies``: the stream digests ``scan.on_bytes`` hashes into (put back
    to the middle's when the second half is taken after this process went past it)."""
    with open(path, "rb") as fp:
        first = min(size, line_start(fp, min(size, start + HEAD_BYTES)))
    feed(scan, start, first)
    at, taken = _quiet(scan, path, first, feed), False
    sized = True
    for _ in range(TRIES):
        # the second process's CPU: its warm-up and half, and re-framed (check/split_skip.py) the lines before framed
        skipped = SKIP_COST if scan.rec.reframing else 0.0
        with open(path, "rb") as fp:
            warm = WARM_BYTES
            if sized:                   # by the names the state remembers (check/split_warm.py); found short: all of it
                guess = _middle(fp, at, size, skipped, min(split_warm.WARM_MIN, WARM_BYTES))
                warm = guess - split_warm.warm_start(fp, guess, max(at, guess - WARM_BYTES))
            mid = _middle(fp, at, size, skipped, warm)
            w0 = min(size, line_start(fp, max(at, mid - warm)))
            if w0 >= mid:               # (a sized warm-up shorter than the line it starts in: all of it)
                w0 = min(size, line_start(fp, max(at, mid - WARM_BYTES)))
        if not (at < w0 < mid < size) or scan.pending is not None:
            break
        try:
            child = _Split(scan, path, at, w0, mid, size, batches)
        except OSError:
            break
        try:
            feed(scan, at, mid)
            scan.flush()
            at, outcome = _go_on(scan, child, path, mid, size, batches, tallies)
        finally:
            child.close()
        if outcome not in (_RETRY, _DIFFERENT):
            taken = outcome == _TAKEN
            break
        sized = sized and outcome == _RETRY
        at = _quiet(scan, path, at, feed)
    if not taken and speculate is not None and at < size:
        speculate(at)
    feed(scan, at, size)


def _middle(fp: IO[bytes], at: int, size: int, skipped: float, warm: int) -> int:
    """The line where the second half starts so both processes end together: this
    one re-annotates [at, mid), the other skips (``skipped``: its CPU a byte, as a
    fraction of one re-annotated) to ``warm`` bytes before ``mid``, warms up and
    re-annotates from there (``WARM_COST``, ``HALF_COST``): mid - at =
    skipped * (mid - warm - at) + WARM_COST * warm + HALF_COST * (size - mid)."""
    return min(size, line_start(fp, at + int((HALF_COST * (size - at) + (WARM_COST - skipped) * warm) / (1 + HALF_COST - skipped))))


def _quiet(scan: FullScan, path: str, at: int, feed: Callable[[FullScan, int, int], None]) -> int:
    """Feed ``scan`` lines from ``at`` on, one by one (at most ``QUIET_LINES``), to
    one where every open request is old (sent ``QUIET_LINES`` records before or
    more: it lasts, as a listen or a request never answered): a second process
    forked there forgets the lines it skips, which would answer the recent ones.
    Returns that line's start."""
    pairing = scan.rec.annotator.pairing
    with open(path, "rb") as fp:
        fp.seek(at)
        for _ in range(QUIET_LINES):
            old = (scan.last_seq if scan.last_seq is not None else 0) - QUIET_LINES
            if all(type(seq) is int and seq <= old for seq in scan.methods) and all(p.seq <= old for p in pairing.pending()):
                break
            line = fp.readline()
            if not line:
                break
            feed(scan, at, at + len(line))
            at += len(line)
    return at


_TAKEN, _KEPT, _RETRY, _DIFFERENT = "taken", "kept", "retry", "different"


def _go_on(scan: FullScan, child: _Split, path: str, mid: int, size: int, batches: Batches,
           tallies: dict[str, StreamTally]) -> tuple[int, str]:
    """From the middle, this process goes on alone until the second process's
    half arrives (once its state at the middle is found equal, it waits while that
    half progresses: a stalled second process costs ``STALL`` of wall time); then, when its state at the middle was this one's and it got
    further, ``scan`` is put back as it was at the middle (``Mark``) and takes
    its half, this process's lines past the middle dropped. Returns (the byte
    from which ``scan`` goes on, ``_TAKEN``; ``_KEPT``: this process's own work;
    ``_RETRY``: it stopped at a chunk record, forked before the first, so a second
    process forked from here may do better; ``_DIFFERENT``: its state at the middle,
    sent first, was another: so may one forked from here, with a longer warm-up)."""
    mark = Mark(scan, tallies)
    pos, compared = mid, False
    with open(path, "rb") as fp:
        for batch in batches(fp, mid, size):
            while True:
                while child.ready():
                    got = child.next()
                    if got is None:             # it failed or ended (at a chunk record, forked before the first: another may do better)
                        return pos, _RETRY if not compared and scan.rec.reframing and not child.reframing else _KEPT
                    if not compared:            # its state at the middle (its length: the bytes are in a file)
                        compared = True
                        same = mark.snap is not None and child.snapshot(got) == mark.snap
                        mark.snap = None        # (compared: not kept beside the state, peak memory)
                        if not same:        # (forked before the re-framing began: not its warm-up's fault)
                            return pos, _DIFFERENT if child.reframing or not scan.rec.reframing else _RETRY
                        continue
                    return child.merge_into(scan, mark, pos, got)
                # its half will be taken: while it progresses, its core is left to it (STALL)
                if not (compared and child.progressing()):
                    break
                child.wait(STALL)
            scan.run(batch)
            n = sum(map(len, batch))
            pos += n
            add_bytes_read(n)
    return pos, _KEPT                           # all of it here first: the second process's half is not needed


def _no_shape_check(*args: Any) -> list[Any]:
    return []


class _Split:
    """The second process: warm-up [w0, mid), then the second half [mid, size) up to its first uncommon line."""

    def __init__(self, scan: FullScan, path: str, at: int, w0: int, mid: int, size: int, batches: Batches) -> None:
        self.reframing = scan.rec.reframing
        self.shared = mmap.mmap(-1, 8)          # the bytes of its half done so far (``progressing``)
        self.seen = -1
        try:
            self.spill = Spill()
        except OSError:
            self.shared.close()
            raise
        try:
            # its state at the middle goes through a file, the pipe only says it is there: a
            # snapshot bigger than the pipe holds would stop it until this process reads it
            self.snapped = tempfile.TemporaryFile()
        except OSError:
            self.spill.close()
            self.shared.close()
            raise
        try:
            self.child = Forked(lambda w: self._run(scan, path, at, w0, mid, size, batches, w))
        except OSError:
            self.spill.close()
            self.snapped.close()
            self.shared.close()
            raise

    def _run(self, scan: FullScan, path: str, at: int, w0: int, mid: int, size: int, batches: Batches, w: int) -> None:
        """In the second process: its state at the middle (``snapshot``), then its work, sent (``send_frame``)."""
        for buf in scan.bufs.values():           # the first lines' bytes: the parent's to hash
            buf.clear()
        scan.buffered = 0
        scan.on_bytes = lambda name, data: None
        rep, rec = scan.rep, scan.rec
        with open(path, "rb") as fp:
            longest = line_start(fp, max(at, mid - WARM_BYTES))
            if longest < w0 and split_warm.named(fp, at, longest):    # (sized by the bytes after: check/split_warm.py)
                w0 = longest
            if self.reframing:                   # framed, not annotated, up to the warm-up (check/split_skip.py)
                skip(scan, batches(fp, at, w0))
                scan.only_types = TYPES | {"chunk"}
            else:
                scan.only_types = TYPES
                fp.seek(w0)
                try:
                    seq = orjson.loads(fp.readline()).get("seq")
                except (orjson.JSONDecodeError, AttributeError):
                    return None
                if type(seq) is not int:
                    return None
                scan.last_seq = seq - 1          # the warm-up's first record follows the one before it
            # the warm-up's findings are thrown away, and no state depends on a shape check's: none made
            check, rec.annotator.shape_check = rec.annotator.shape_check, _no_shape_check
            try:
                for batch in batches(fp, w0, mid):
                    scan.run(batch)
            except Uncommon:
                return None
            rec.annotator.shape_check = check
            scan.flush()
            snap = snapshot(scan)
            if snap is None:
                return
            self.snapped.write(snap)
            self.snapped.flush()
            send_frame(w, len(snap))
            # the second half: its own counters and groups, added to the first half's by the parent
            scan.on_bytes = self.spill.write
            scan.n = scan.cut = scan.gaps = 0
            scan.counts = {name: [0, 0] for name in STREAMS}
            rep.records = rep.messages = rep.duration_us = 0
            rep.groups, rep.severities, scan.firsts = {}, severity_counts(), {}
            rec.severities = {s: 0 for s in rec.severities}
            rec.codes = {}
            # (a stream's bytes stay whole: a framer made afresh starts at them, _segment; the half's are sent)
            before = {s: s.bytes for s in (*rec.streams.values(), rec.stderr_stream)}
            for s in before:
                s.messages = 0
            at = mid
            shared = self.shared
            try:
                for batch in batches(fp, mid, size):
                    scan.run(batch)
                    at += sum(map(len, batch))
                    shared[:8] = (at - mid + 1).to_bytes(8, "little")
            except Uncommon as stop:
                at += sum(len(line) for line in batch[:stop.args[0]])
            scan.flush()
        self.spill.flush()
        rec.on_message = None
        rec.annotator.shape_check = None  # type: ignore[assignment]   # the parent's own is put back
        streams = {name: (s.bytes - before[s], s.messages)
                   for name, s in [(d.value, s) for d, s in rec.streams.items()] + [("stderr", rec.stderr_stream)]}
        send_frame(w, {"at": at, "rec": {k: v for k, v in vars(rec).items() if k not in ("streams", "stderr_stream", "on_message")},
                       "streams": streams, "scan": [getattr(scan, k) for k in SCAN_STATE],
                       "n": scan.n, "gaps": scan.gaps, "counts": scan.counts, "records": rep.records, "messages": rep.messages,
                       "duration": rep.duration_us, "groups": rep.groups, "sev": rep.severities, "firsts": scan.firsts})

    def ready(self) -> bool:
        """Whether the second process has sent something (or ended), without waiting."""
        return self.child.ready()

    def next(self) -> Any:
        """The next of what the second process sends (its state at the middle,
        then its work), waited for once it has begun; None: it failed or ended."""
        return self.child.frame(wait=True)

    def progressing(self) -> bool:
        """Whether the second process's half got further since the last time this was asked (or it is the first)."""
        done = int.from_bytes(self.shared[:8], "little")
        moved = done != self.seen
        self.seen = done
        return moved

    def wait(self, seconds: float) -> None:
        """Wait until the second process sends something or ends, ``seconds`` at most."""
        select.select([self.child.fd], [], [], seconds)

    def merge_into(self, scan: FullScan, mark: Mark, pos: int, got: dict[str, Any]) -> tuple[int, str]:
        """Take the second process's work ``got`` into ``scan`` (gone on to byte
        ``pos``, from ``mark`` at the middle, where the states were equal) when it
        got further; returns (the byte from which ``scan`` goes on, ``_TAKEN`` or ``_KEPT``)."""
        if got["at"] <= pos:
            return pos, _KEPT
        mark.restore(scan)
        adopt(scan, got)

        def hashed(name: str, block: bytes) -> None:       # the second half's stream bytes, after the first half's
            scan.on_bytes(name, block)
            if name == "stderr":            # (the same bytes as the re-annotator's stderr digest: decode_bytes')
                scan.rec.stderr_stream.sha.update(block)

        self.spill.replay(hashed)
        at: int = got["at"]
        add_bytes_read(at - pos)                # (the progress line: the second half's bytes past this process's own, read)
        return at, _TAKEN

    def snapshot(self, n: int) -> bytes:
        """The second process's state at the middle (``n`` bytes, in its file)."""
        self.snapped.seek(0)
        data: bytes = self.snapped.read(n)
        return data

    def close(self) -> None:
        self.child.close()
        self.spill.close()
        self.snapped.close()
        self.shared.close()
