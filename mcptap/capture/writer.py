"""Appending records to a capture file (owner-only, flushed per chunk, never
raises into the relay after ``open``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from typing import IO, Any

import orjson

from mcptap.capture.dumps import encode_deep
from mcptap.errors import CaptureWriteError
from mcptap.escape import escape_name, text_path
from mcptap.records import Gap

_dumps = orjson.dumps

#: Bytes kept free beside a capture file for the records that say writing failed.
RESERVE = 64 * 1024
RESERVE_TAG = b"mcptap reserve pid="


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


class CaptureWriter:
    """Append records to a capture file (owner-only permissions, 0600).

    Records are buffered and written with one ``os.write`` per ``flush()``;
    the recorder flushes after every chunk it processes, so a ``kill -9`` loses
    at most what arrived in the chunk being handled. A failed write (disk full)
    never raises into the relay: ``failed`` becomes the error text, dropped
    records are counted in ``dropped`` and a ``gap`` record is written as soon
    as it fits: at once on a full disk, into the space of a 64 KiB reserve
    file (``.NAME.reserve`` beside a capture made by ``open``, deleted on the
    first failure or at close), so a capture that lost records says so even
    when the disk never frees up. The reserve is made only once the first
    records (the header: ``begin``) are on disk: on a nearly full disk it must
    never take the space the header needs, since a capture without its header
    is unreadable whatever follows.
    Raises CaptureWriteError only from ``open`` (the file cannot be created)
    and ``begin`` (the header cannot be written).
    """

    def __init__(self, fd: int, path: str | None = None) -> None:
        self._fd = fd
        self.path = path
        self._buf: list[bytes] = []
        self.failed: str | None = None
        #: the errno of the failed write (EPIPE: a reader of stdout left)
        self.failed_errno: int | None = None
        self.dropped = 0
        self._unreported = 0
        self.written_bytes = 0
        self.closed = False
        #: a cut record could neither be truncated away nor ended: the next
        #: write starts with a newline
        self._open_line = False
        #: a file of RESERVE bytes beside the capture, deleted on the first failed
        #: write so the gap record saying what was lost fits on a full disk
        self._reserve: str | None = None
        #: where the reserve goes, until it is made (after the first successful write)
        self._reserve_at: str | None = None
        #: applied to every record before it is encoded (``record --redact``: the scrubber)
        self.transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        #: applied to every encoded line, given the record too (``record``: the argv's secrets
        #: replaced wherever they reappear, ``known_secrets.KnownSecrets.line``)
        self.line_filter: Callable[[dict[str, Any], bytes], bytes] | None = None
        #: told of each ``gap`` record the writer makes itself (its JSON), at the place in the
        #: record stream where it stands: an unencodable record's at once, a failed write's when
        #: the first record is lost (it lands on disk before the next records that make it, or
        #: never). The recorder's annotator learns of it there, as of a transport gap, so the
        #: live annotations and a re-annotation of the capture (``check --full``) agree
        self.on_gap: Callable[[dict[str, Any]], None] | None = None

    @property
    def unreported(self) -> int:
        """Records dropped (a failed write) that no ``gap`` record on disk
        announces yet (0 once one does, or if none was dropped)."""
        return self._unreported

    @classmethod
    def open(cls, path: str) -> CaptureWriter:
        """Create (or empty) the capture at ``path``, owner-only, and lock it
        (``flock``, exclusive, held while the writer lives): a second writer is
        refused before it truncates a live capture. Raises CaptureWriteError."""
        try:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise CaptureWriteError(f"cannot create capture {escape_name(path)}: {exc.strerror or exc}") from None
        try:
            if not lock(fd):
                raise CaptureWriteError(f"cannot create capture {escape_name(path)}: another mcptap is recording into it")
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.ftruncate(fd, 0)     # only now: the lock says nobody else writes it (a FIFO is written in place)
                # a device or FIFO (scrub -o /dev/null) is not ours: as root, 0600 would lock every other user out of it
                os.fchmod(fd, 0o600)
        except OSError as exc:
            os.close(fd)
            raise CaptureWriteError(f"cannot create capture {escape_name(path)}: {exc.strerror or exc}") from None
        except CaptureWriteError:
            os.close(fd)
            raise
        w = cls(fd, path)
        w._reserve_at = os.path.join(parent, f".{os.path.basename(path)}.reserve")
        return w

    def begin(self, header: dict[str, Any]) -> None:
        """Write the capture's first record (``header``) and flush it. Raises
        CaptureWriteError (naming the file and the OS error, e.g. "No space
        left on device") when it is not on disk: the caller treats that as a
        capture that cannot be created (``discard`` it, relay without
        recording). On success the disk-full reserve is made, after it."""
        self.write(header)
        self.flush()
        if self.failed is not None:
            raise CaptureWriteError(f"cannot write the capture header to {escape_name(str(self.path))}: {self.failed}")

    def discard(self) -> None:
        """Close and delete a capture whose header could not be written (it
        holds nothing a reader could use). Never raises."""
        self._buf.clear()
        self.close()
        if self.path is not None:
            _unlink(self.path)

    def _make_reserve(self) -> None:
        path, self._reserve_at = self._reserve_at, None
        if path is None:
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            return
        try:
            # the owner's pid first, so `ls`/`prune`/the next `record` can tell a
            # reserve left by a killed mcptap (catalog.stale_reserves) from a live one
            tag = RESERVE_TAG + b"%d\n" % os.getpid()
            os.write(fd, tag + bytes(RESERVE - len(tag)))
            self._reserve = path
        except OSError:
            _unlink(path)
        finally:
            os.close(fd)

    def _release_reserve(self) -> bool:
        """Delete the reserve file (once); True when it was there to free space."""
        path, self._reserve = self._reserve, None
        return path is not None and _unlink(path)

    @classmethod
    def to_file(cls, fp: IO[bytes]) -> CaptureWriter:
        """Write to an already-open binary file (tests, stdout pipes)."""
        return cls(fp.fileno(), getattr(fp, "name", None))

    def write(self, rec: dict[str, Any]) -> None:
        """Queue one record (encoded now, written at the next flush)."""
        if self.transform is not None:
            rec = self.transform(rec)
        try:
            # not OPT_APPEND_NEWLINE: orjson 3.x leaves such bytes in their ~4 KiB write buffer,
            # and a batch of queued lines (a flood's 4,000 a chunk) then held 16 MiB, not 1
            line = _dumps(rec) + b"\n"
        except (TypeError, orjson.JSONEncodeError) as exc:
            # a peer's integer beyond 64 bits (an id) written exactly; a non-finite float (a peer's 1e400
            # read as infinity, e.g. an id summarised in the end record's pending) as null: the message
            # record keeps the exact bytes; a record deeper than orjson's 254 levels (scrub of a
            # hand-edited capture) at any depth, without recursion
            try:
                line = encode_deep(rec, nonfinite=b"null") + b"\n"
            except (TypeError, ValueError):
                try:
                    # a file name or argument that is not UTF-8 (lone surrogates, PEP 383) in the
                    # tap's own fields (the header's target and spill file, a spawn record's argv):
                    # those bytes as U+FFFD, so the header is never lost to them
                    line = encode_deep(_utf8_strings(rec), nonfinite=b"null") + b"\n"
                except (TypeError, ValueError, RecursionError):
                    # our own bug, never peer data (peer bytes are stored as text/base64)
                    gap = Gap(rec.get("seq"), None, f"unencodable record: {exc}").to_json()
                    line = _dumps(gap, option=orjson.OPT_APPEND_NEWLINE)
                    if self.on_gap is not None:
                        self.on_gap(gap)
        if self.line_filter is not None:
            line = self.line_filter(rec, line)
        self._buf.append(line)

    def write_pieces(self, pieces: Iterable[bytes]) -> None:
        """Write one record given as the pieces of its line (newline included,
        ``capture.pieces``), after the queued ones, without joining them. A
        failed write cuts the partial line away and counts the record as
        dropped, as ``flush`` does. Never raises OSError."""
        self.flush()
        if self.closed:
            return
        if self.failed is not None and self._unreported and not self._report_gap():
            self._lose(1)
            return
        done = 0
        try:
            if self._open_line:
                self._write(b"\n")
                self._open_line = False
            for piece in pieces:
                view = memoryview(piece)
                k = 0
                while k < len(piece):
                    n = self._write(view[k:])
                    k += n
                    done += n
                    self.written_bytes += n
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            self.failed_errno = exc.errno
            if done:
                self._cut_partial(done)
            self._lose(1)
            if self._release_reserve():
                self._report_gap()

    def _cut_partial(self, done: int) -> None:
        """Remove the last ``done`` bytes written (a partial record line)."""
        try:
            os.ftruncate(self._fd, os.fstat(self._fd).st_size - done)
            self.written_bytes -= done
            return
        except OSError:
            pass
        try:
            self._write(b"\n")
        except OSError:
            self._open_line = True

    def flush(self) -> None:
        """Write queued records. After a failed write (disk full) the records
        are counted as dropped; every later flush tries again, and the first
        write that succeeds is preceded by a ``gap`` record saying how many
        records were lost and why. A record is never left cut on disk with the
        next one glued to it (see ``_write_all``). Never raises."""
        if not self._buf or self.closed:
            return
        data = b"".join(self._buf) if len(self._buf) > 1 else self._buf[0]
        n_records = len(self._buf)
        self._buf.clear()
        if self.failed is not None and self._unreported and not self._report_gap():
            self._lose(n_records)
            return
        lost = n_records - self._write_all(data)
        self._lose(lost)
        if lost and self._release_reserve():
            self._report_gap()          # into the space the reserve held: the capture says what it lost
        elif self._reserve_at is not None and not lost:
            self._make_reserve()        # only now: the first records (the header) are on disk

    def _lose(self, n: int) -> None:
        """Count ``n`` records dropped by a failed write; the first of those a
        gap record will announce tells ``on_gap`` (one gap record covers them all)."""
        if not n:
            return
        first = not self._unreported
        self.dropped += n
        self._unreported += n
        if first and self.on_gap is not None:
            self.on_gap(self._gap())

    def _gap(self) -> dict[str, Any]:
        return Gap(None, None, f"capture write failed: {self.failed}", dropped_records=self._unreported).to_json()

    def _report_gap(self) -> bool:
        """Write the gap record for the records not reported yet; True if it is on disk."""
        gap = _dumps(self._gap(), option=orjson.OPT_APPEND_NEWLINE)
        if self._write_all(gap) == 1 or (self._release_reserve() and self._write_all(gap) == 1):
            self._unreported = 0
            return True
        return False

    def _write_all(self, data: bytes) -> int:
        """Write whole lines; returns how many complete lines (records) are on
        disk. On a failed write (ENOSPC, EIO) the file is cut back to the last
        complete line (ftruncate: it frees space, so it works on a full disk);
        where it cannot be cut (a pipe) the partial line is ended with a
        newline now or, failing that, before the next write, so the partial
        record is one unreadable line of its own and never swallows the next."""
        view = memoryview(data)
        done = 0
        try:
            if self._open_line:
                self._write(b"\n")
                self._open_line = False
            while done < len(data):
                n = self._write(view[done:])
                done += n
                self.written_bytes += n
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            self.failed_errno = exc.errno
            if done:
                self._cut(data, done)
            return data.count(b"\n", 0, done)
        return data.count(b"\n")

    def _cut(self, data: bytes, done: int) -> None:
        keep = data.rfind(b"\n", 0, done) + 1       # bytes of whole lines written
        if keep != done:
            self._cut_partial(done - keep)

    def _write(self, data: bytes | memoryview) -> int:
        return os.write(self._fd, data)

    def close(self) -> None:
        if self.closed:
            return
        self._reserve_at = None         # closing: no reserve is needed any more
        self.flush()
        self.closed = True
        try:
            os.close(self._fd)
        except OSError:
            pass
        self._release_reserve()


def _utf8_strings(value: Any) -> Any:
    """``value`` with every string (keys too) as ``escape.text_path`` gives
    it: the bytes of a file name or argument that are not UTF-8 become U+FFFD."""
    if isinstance(value, str):
        return text_path(value)
    if isinstance(value, dict):
        return {text_path(k) if isinstance(k, str) else k: _utf8_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_utf8_strings(v) for v in value]
    return value


def try_flock(fd: int, exclusive: bool) -> bool | None:
    """Try to lock ``fd`` without waiting: True taken, False another holds a
    conflicting lock, None not supported here (no fcntl, or a filesystem without flock)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def lock(fd: int) -> bool:
    """Take the exclusive capture lock on ``fd``; False when another writer
    holds it. True where locks are not supported: writers are then not kept apart."""
    return try_flock(fd, exclusive=True) is not False


def locked_by_a_writer(path: str) -> bool:
    """Whether a CaptureWriter holds the capture lock of ``path`` (a shared
    lock cannot be taken); False when the file cannot be opened or locks are
    not supported. Never raises."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return try_flock(fd, exclusive=False) is False
    finally:
        os.close(fd)
