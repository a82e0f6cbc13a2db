"""The recorder process body (``http_recorder.start_recorder``, after fork):
the fact stream in, ``HttpObserver`` + ``Recorder`` out.

It reads frames (``fact_codec``) in relay order and records each batch with
the Recorder's clock reading the relay's stamp of that batch, so records carry
the times the relay produced the facts, not when they were recorded here. It
reports on the status pipe, one JSON object a line: ``{"stopped": repr}``
(the observer raised: an mcptap bug; a gap record stands for the rest, read
and dropped until the end, which is still written, with ``recorder_error``), ``{"spill_read": n}`` (the bytes of the frames
the relay set aside in the spill file read back so far, said before it waits
for the pipe when it grew: the relay rewinds the file once all were read),
``{"caught_up": 1}`` (the end arrived: all the
relay's batches are recorded) and ``{"done": 1, "failed", "dropped"}`` (the
end record is written; the capture writer's failure and lost records).
Records are written out before every wait for the pipe and after every batch
read back from the spill file (a backlog read from there never waits, and
its records must not pile up in memory). ``HURRY`` (SIGUSR1, from the relay's
``finish``) skips the spilled batches left, with gap records (``dropped``).
"""

from __future__ import annotations

import collections
import marshal
import os
import signal
import struct
from collections.abc import Callable
from typing import Any

import orjson

from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.relay.http.observe import HttpObserver
from mcptap.transport import fact_codec as fc
from mcptap.transport import http_trim, trickle
from mcptap.transport.http_recorder import HURRY
from mcptap.transport.spill import SpillFile

#: bytes read from the fact pipe at a time (1 MiB held a little more in the recorder's peak)
READ_BUFFER = 256 << 10


class Hooks:
    """What the recorder process does beside the observer (the CLI's part):
    ``observer(authority)`` builds the HttpObserver; ``start()`` runs first
    (live export); ``end(exit_code, extra)`` writes the end (export close,
    ``rec.close``, export join)."""

    def __init__(self, rec: Recorder, observer: Callable[[str], HttpObserver], start: Callable[[], None],
                 end: Callable[[int, dict[str, Any]], None]) -> None:
        self.rec = rec
        self.observer = observer
        self.start = start
        self.end = end


class _Stamp:
    """The Recorder's clock in this process: the relay's time of the batch being recorded."""

    __slots__ = ("t",)

    def __init__(self) -> None:
        self.t = 0

    def __call__(self) -> int:
        return self.t


def _report(fd: int, msg: dict[str, Any]) -> None:
    try:
        os.write(fd, orjson.dumps(msg) + b"\n")
    except OSError:
        pass          # mcptap is gone: the capture still gets what arrived


class _Frames:
    """The fact pipe, read a pipe's worth at a time. A read that finds only a
    trickle (round trips) is held back with what follows while the traffic
    goes on (``trickle.gather``), so the recorder runs in the session's
    pauses rather than beside its round trips, and wakes a few hundred times
    a second at most: fewer wake-ups to pay for on the relay's side of the
    pipe, and one capture write for what arrived together.
    ``before_wait()`` runs before every read."""

    def __init__(self, fd: int, before_wait: Callable[[], None], spill: SpillFile | None = None) -> None:
        self.fd = fd
        self.spill = spill
        self.buf = b""
        self.pos = 0
        self.before_wait = before_wait

    def _read_now(self, n: int) -> bytes:
        """Up to ``n`` bytes of a readable pipe (b"" at EOF or on an error)."""
        try:
            return os.read(self.fd, min(n, READ_BUFFER))
        except OSError:
            return b""

    def _read(self, n: int) -> bytes:
        self.before_wait()
        http_trim.wait_then_trim(self.fd)        # a pause after traffic: free pages back to the system
        while True:
            try:
                return os.read(self.fd, n)
            except InterruptedError:
                continue
            except OSError:
                return b""

    def exact(self, n: int) -> bytes:
        """The next ``n`` bytes (raises EOFError at the end of the stream)."""
        buf, pos = self.buf, self.pos
        if len(buf) - pos >= n:
            self.pos = pos + n
            return buf[pos:pos + n]
        # the batch read last (up to ``trickle.HOLD_BYTES``) is let go before the wait for the
        # next one: held through a pause, it was the recorder's largest idle allocation
        rest = buf[pos:]
        self.buf, self.pos = b"", 0
        del buf
        if len(rest) + READ_BUFFER > n:
            data = self._read(READ_BUFFER)
            if not data:
                raise EOFError
            if len(data) < trickle.TRICKLE_BELOW:
                data = trickle.gather(self.fd, data, self._read_now)
            elif self.spill is not None:
                spill = self.spill
                trickle.wait_while_flowing(lambda: trickle.pipe_fill(self.fd) + spill.appended())
            self.buf = rest + data if rest else data
            return self.exact(n)
        parts = [rest]                              # a large body: read its rest as it is
        need = n - len(rest)
        del rest
        while need:
            data = self._read(min(need, READ_BUFFER))
            if not data:
                raise EOFError
            parts.append(data)
            need -= len(data)
        return b"".join(parts)


class _SpilledFrame:
    """A frame the relay set aside in the spill file, read back as it is
    decoded: each ``read(n)`` is one ``pread`` of the next ``n`` bytes
    (a body comes out of the file once, never joined or copied again).
    ``places``: the frame's pieces as ``(offset, size)``, in order."""

    def __init__(self, spill: SpillFile, places: list[tuple[int, int]]) -> None:
        self._spill = spill
        self._places = collections.deque(places)
        self.size = sum(size for _, size in places)

    def read(self, n: int) -> bytes:
        """The frame's next ``n`` bytes (EOFError past its end)."""
        parts = []
        places = self._places
        while n:
            if not places:
                raise EOFError
            at, size = places[0]
            k = min(n, size)
            try:
                data = self._spill.read(at, k)
            except OSError:
                raise EOFError from None
            if len(data) < k:
                raise EOFError
            parts.append(data)
            n -= k
            if k == size:
                places.popleft()
            else:
                places[0] = (at + k, size - k)
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _spilled_head(spill: SpillFile, places: list[tuple[int, int]]) -> tuple[int, bytes | None]:
    """The kind and meta of the frame the relay set aside at ``places``
    (BATCH and None when it cannot be read)."""
    try:
        frame = _SpilledFrame(spill, places)
        kind, _t, n_meta, _n_body = fc.HEAD.unpack(frame.read(fc.HEAD.size))
        return int(kind), frame.read(n_meta)
    except (EOFError, struct.error):
        return fc.BATCH, None


class _Skipped:
    """Spilled batches skipped at the end (``HURRY``): how many, their bytes, what they
    forwarded each way and the exchanges they carried (None: not known, every one)."""

    def __init__(self) -> None:
        self.batches = self.size = self.c2s = self.s2c = 0
        self.exchanges: set[int] | None = set()

    def add(self, size: int, meta: bytes | None) -> None:
        self.batches += 1
        self.size += size
        try:
            c2s, s2c, cut = fc.dropped_facts(meta) if meta is not None else (0, 0, None)
        except (EOFError, ValueError, TypeError, IndexError):
            c2s, s2c, cut = 0, 0, None
        self.c2s += c2s
        self.s2c += s2c
        self.exchanges = None if cut is None or self.exchanges is None else self.exchanges | cut


def record_stream(fact_fd: int, status_fd: int, spill: SpillFile, hooks: Hooks, hurry: list[bool] | None = None) -> None:
    """Record the fact stream until its end (or EOF: no end record).
    ``hurry[0]`` set (``HURRY``: mcptap is ending and gave up waiting): the
    batches still in the spill file are skipped, with one gap record saying
    how many, so the end record follows promptly."""
    hurry = hurry if hurry is not None else [False]
    rec = hooks.rec
    stamp = _Stamp()
    rec.clock = stamp

    def write_out() -> None:
        rec.hold_flush = False
        rec.flush()

    read_back = [0, 0]          # bytes of spilled frames read back; said to the relay

    def before_wait() -> None:
        write_out()
        if read_back[0] != read_back[1]:
            read_back[1] = read_back[0]
            _report(status_fd, {"spill_read": read_back[0]})

    hooks.start()
    frames = _Frames(fact_fd, before_wait, spill)
    observer: HttpObserver | None = None
    failed = False
    head = fc.HEAD
    pending: list[_SpilledFrame] = []      # a spilled frame being read back

    def read(n: int) -> bytes:
        if not pending:
            return frames.exact(n)
        return pending[-1].read(n)

    skipped = [_Skipped()]      # spilled frames not recorded (``HURRY``)

    def fail(exc: Exception) -> None:
        nonlocal failed
        failed = True
        rec.stopped(repr(exc))      # a gap record for the rest; the end record's recorder_error (ls: incomplete)
        write_out()
        _report(status_fd, {"stopped": repr(exc)})

    def cut(exchanges: set[int] | None, tails: dict[int, bytes] | None) -> None:
        if observer is None or failed:
            return
        try:
            observer.lost(exchanges, tails)
        except Exception as exc:  # noqa: BLE001 - an mcptap bug stops recording, never the relay
            fail(exc)

    def note_skipped() -> None:
        sk = skipped[0]
        if sk.batches:
            dropped(rec, cut, sk.batches, sk.size, sk.c2s, sk.s2c, sk.exchanges,
                    "mcptap was ending and the recorder process was behind the relay", "set aside in the spill file were not recorded")
            skipped[0] = _Skipped()

    while True:
        try:
            kind, t, n_meta, _n_body = head.unpack(read(head.size))
            meta = read(n_meta)
            if kind == fc.SPILLED:
                places = marshal.loads(meta)
                if hurry[0]:
                    spilled_kind, spilled_meta = _spilled_head(spill, places)
                    if spilled_kind == fc.BATCH:
                        size = sum(n for _, n in places)
                        skipped[0].add(size, spilled_meta)
                        read_back[0] += size
                        continue
                pending.append(_SpilledFrame(spill, places))
                continue
            if kind == fc.BATCH:
                items = fc.decode(meta, read)
        except EOFError:
            if pending:
                read_back[0] += pending.pop().size
                continue
            # mcptap ended without an end: keep what arrived; no end record (the capture says it is incomplete)
            write_out()
            return
        spilled = bool(pending)
        if spilled:
            read_back[0] += pending.pop().size
        stamp.t = t
        note_skipped()
        if kind == fc.BATCH:
            if observer is not None and not failed:
                try:
                    observer.handle(items, flush=False)        # written out before the next wait (``_Frames``)
                except Exception as exc:  # noqa: BLE001 - an mcptap bug stops recording, never the relay
                    fail(exc)
            del items
            if spilled:
                # a backlog read back from the spill file never waits for the pipe (where
                # records are written out): without this its records would pile up in memory
                write_out()
        elif kind == fc.START:
            observer = hooks.observer(marshal.loads(meta))
        elif kind == fc.LOST:
            lost(rec, meta, cut)
        elif kind == fc.END:
            if observer is not None and not failed:
                try:
                    observer.close_out()        # exchanges whose end a gap held: closed before the end record
                except Exception as exc:  # noqa: BLE001 - an mcptap bug stops recording, never the relay
                    fail(exc)
            write_out()
            _report(status_fd, {"caught_up": 1})
            code, extra = marshal.loads(meta)
            hooks.end(code, extra)
            w = rec.writer
            _report(status_fd, {"done": 1, "failed": w.failed if w is not None else None, "dropped": w.dropped if w is not None else 0})
            return


#: the observer's ``HttpObserver.lost``: (exchanges cut or None: every one, ends of their lost response bodies or None: not known)
Cut = Callable[[set[int] | None, dict[int, bytes] | None], None]


def lost(rec: Recorder, meta: bytes, cut: Cut | None = None) -> None:
    """Record a LOST frame (``fc.read_lost``): see ``dropped``."""
    n, size, c2s, s2c, full, exchanges = fc.read_lost(meta)
    tails = fc.read_tails(meta)
    why = ("the relay's spill file was at its size bound (MCPTAP_SPILL_LIMIT, or half the free disk space) while the "
           "recorder process was behind" if full else "the recorder process and the capture disk fell behind the relay")
    dropped(rec, cut, n, size, c2s, s2c, None if exchanges is None else set(exchanges), why, "were not recorded", tails)


def dropped(rec: Recorder, cut: Cut | None, n: int, size: int, c2s: int, s2c: int,
            exchanges: set[int] | None, why: str, what: str, tails: dict[int, bytes] | None = None) -> None:
    """``n`` batches of relay facts (``size`` bytes) were not recorded:
    ``cut`` (the observer's ``HttpObserver.lost``) cuts the exchanges they
    carried there (``exchanges``; None: every open one), so no bytes after the
    hole are read as if they followed the bytes before it (``tails``, the
    ends of the response bodies they held, tell where an SSE stream was
    left: ``fc.body_tails``; None: not known); then one gap
    record per direction they forwarded bytes in, with that count (which the
    end record's byte counts include: ``Recorder.lost``), or one without a
    direction if they forwarded none."""
    if cut is not None:
        cut(exchanges, tails)
    reason = f"{why}: {n} batch(es) of relay facts ({size} bytes) {what}"
    if not (c2s or s2c):
        rec.gap(reason)
    for d, nbytes in ((Direction.C2S, c2s), (Direction.S2C, s2c)):
        if nbytes:
            rec.lost(d, nbytes, f"{reason}, {nbytes} bytes forwarded {d.value} among them")


def child_main(fact_fd: int, status_fd: int, spill: SpillFile, hooks: Hooks) -> None:
    """The recorder process (after fork); never returns. Terminal signals
    are ignored: the relay process decides the end."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
            signal.signal(s, signal.SIG_IGN)
        hurry = [False]
        signal.signal(HURRY, lambda *_: hurry.__setitem__(0, True))
        record_stream(fact_fd, status_fd, spill, hooks, hurry)
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        code = 70
    os._exit(code)
