"""Appending records to a capture file (owner-only, flushed per chunk, never
raises into the relay after ``open``)."""

from __future__ import annotations

import os
from typing import IO, Any

import orjson

from mcptap.errors import CaptureWriteError

_dumps = orjson.dumps


class CaptureWriter:
    """Append records to a capture file (owner-only permissions, 0600).

    Records are buffered and written with one ``os.write`` per ``flush()``;
    the recorder flushes after every chunk it processes, so a ``kill -9`` loses
    at most what arrived in the chunk being handled. A failed write (disk full)
    never raises into the relay: ``failed`` becomes the error text, dropped
    records are counted in ``dropped`` and a ``gap`` record is attempted.
    Raises CaptureWriteError only from ``open`` (the file cannot be created).
    """

    def __init__(self, fd: int, path: str | None = None) -> None:
        self._fd = fd
        self.path = path
        self._buf: list[bytes] = []
        self.failed: str | None = None
        self.dropped = 0
        self._unreported = 0
        self.written_bytes = 0
        self.closed = False

    @classmethod
    def open(cls, path: str) -> "CaptureWriter":
        try:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            os.fchmod(fd, 0o600)
        except OSError as exc:
            raise CaptureWriteError(f"cannot create capture {path}: {exc.strerror or exc}") from None
        return cls(fd, path)

    @classmethod
    def to_file(cls, fp: IO[bytes]) -> "CaptureWriter":
        """Write to an already-open binary file (tests, stdout pipes)."""
        return cls(fp.fileno(), getattr(fp, "name", None))

    def write(self, rec: dict[str, Any]) -> None:
        """Queue one record (encoded now, written at the next flush)."""
        try:
            line = _dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError) as exc:
            # our own bug, never peer data (peer bytes are stored as text/base64)
            line = _dumps({"type": "gap", "seq": rec.get("seq"), "reason": f"unencodable record: {exc}"}, option=orjson.OPT_APPEND_NEWLINE)
        self._buf.append(line)

    def flush(self) -> None:
        """Write queued records. After a failed write (disk full) the records
        are counted as dropped; every later flush tries again, and the first
        write that succeeds is preceded by a ``gap`` record saying how many
        records were lost and why. Never raises."""
        if not self._buf or self.closed:
            return
        data = b"".join(self._buf) if len(self._buf) > 1 else self._buf[0]
        n_records = len(self._buf)
        self._buf.clear()
        if self.failed is not None and self._unreported:
            gap = _dumps({"type": "gap", "seq": None, "reason": f"capture write failed: {self.failed}",
                          "dropped_records": self._unreported}, option=orjson.OPT_APPEND_NEWLINE)
            if self._write_all(gap):
                self._unreported = 0
            else:
                self.dropped += n_records
                self._unreported += n_records
                return
        if not self._write_all(data):
            self.dropped += n_records
            self._unreported += n_records

    def _write_all(self, data: bytes) -> bool:
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
                self.written_bytes += n
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            if len(view) != len(data):
                # a partial record is on disk: end it so the next record starts on its own line
                try:
                    os.write(self._fd, b"\n")
                except OSError:
                    pass
            return False
        return True

    def close(self) -> None:
        if self.closed:
            return
        self.flush()
        self.closed = True
        try:
            os.close(self._fd)
        except OSError:
            pass


