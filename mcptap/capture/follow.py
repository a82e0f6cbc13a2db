"""Following a capture that is being written (``mcptap show --follow``).

Polls the file (``time.sleep``): this is capture I/O, beside the reader, not
part of the pure core.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import orjson

from mcptap.capture.format import VERSION, migrate
from mcptap.capture.reader import CaptureStream, exact_ids
from mcptap.errors import CaptureReadError


class Follower:
    """Tail a capture that is being written: yields each complete record as
    it appears (a partial last line waits for its newline), stops after the
    end record or when ``stop`` is set (Ctrl-C). Polls every ``poll`` s."""

    def __init__(self, path: str, poll: float = 0.2) -> None:
        self.path = path
        self.poll = poll
        self.stop = False
        self.truncated = False
        #: records cut by a failed write, each followed by the gap record saying so (the reader's rule)
        self.cut_records = 0
        self.header = self._wait_header()

    def _wait_header(self) -> dict[str, Any]:
        while True:
            try:
                with open(self.path, "rb") as fp:
                    first = fp.readline()
            except FileNotFoundError:
                first = b""
            if first.endswith(b"\n"):
                break
            if self.stop:
                raise CaptureReadError(f"{self.path}: no header was written")
            time.sleep(self.poll)
        stream = CaptureStream(self.path)   # validates format and version
        stream.close()
        self.version = stream.version
        return stream.header

    def _still_the_same(self, fp: Any) -> None:
        """Raise CaptureReadError when the followed file was cut shorter than
        what was read, or another file took its name (a new capture, an
        editor's save): what follows would not continue what was shown."""
        try:
            st, now = os.fstat(fp.fileno()), os.stat(self.path)
        except OSError:
            return                  # removed: the descriptor still reads the file followed so far
        if st.st_size < fp.tell():
            raise CaptureReadError(f"{self.path}: the capture was cut shorter while it was followed "
                                   f"({st.st_size} bytes, {fp.tell()} already read); follow it again from the start")
        if (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
            raise CaptureReadError(f"{self.path}: another file took the capture's name while it was followed; "
                                   "follow it again from the start")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with open(self.path, "rb") as fp:
            fp.readline()
            lineno = 1
            buf = b""
            pending: int | None = None      # the line number of a line that is not JSON, until a gap record follows it
            while True:
                chunk = fp.readline()
                if not chunk:
                    if self.stop:
                        self.truncated = bool(buf) or pending is not None     # stopped before a gap record came
                        return
                    self._still_the_same(fp)
                    time.sleep(self.poll)
                    continue
                buf += chunk
                if not buf.endswith(b"\n"):
                    continue
                line, buf = buf, b""
                lineno += 1
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    if pending is not None:
                        raise CaptureReadError(f"{self.path}:{pending}: corrupt record (not JSON)") from None
                    pending = lineno        # a record cut by a failed write, if the writer's gap record follows
                    continue
                if pending is not None:
                    if not (isinstance(rec, dict) and rec.get("type") == "gap"):
                        raise CaptureReadError(f"{self.path}:{pending}: corrupt record (not JSON)")
                    pending = None
                    self.cut_records += 1
                if not isinstance(rec, dict) or "type" not in rec:
                    raise CaptureReadError(f"{self.path}:{lineno}: record is not an object with a type")
                rec = exact_ids(rec, line)
                if self.version != VERSION:
                    rec = migrate(rec, self.version)
                yield rec
                if rec["type"] == "end":
                    return
