"""Following a capture that is being written (``mcptap show --follow``).

Polls the file (``time.sleep``): this is capture I/O, beside the reader, not
part of the pure core.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from mcptap.capture.format import VERSION, migrate
from mcptap.capture.reader import CaptureStream, exact_ids
from mcptap.errors import CaptureReadError
from mcptap.escape import escape_name

#: bytes at the end of what was read that are compared with the file's again (``_not_rewritten``)
TAIL = 4096


class Follower:
    """Tail a capture that is being written: yields each complete record as
    it appears (a partial last line waits for its newline), stops after the
    end record, once ``writer_gone()`` says no process writes it any more (its tap
    was killed: ``abandoned``, ``truncated``) or, before the next record, once ``stop`` is set. Polls every
    ``poll`` s. Raises CaptureReadError when the file is cut shorter, replaced
    or overwritten while it is followed. ``show --follow`` leaves Ctrl-C to
    Python (KeyboardInterrupt: exit 130), as every command does."""

    def __init__(self, path: str, poll: float = 0.2, writer_gone: Callable[[], bool] | None = None) -> None:
        self.path = path
        self.poll = poll
        self.stop = False
        self.truncated = False
        #: asked (at most once a second) while no new byte comes: True once no process writes
        #: the capture any more (its tap was killed: no end record will ever come)
        self.writer_gone = writer_gone
        #: the follow stopped because ``writer_gone`` said so (the capture is truncated)
        self.abandoned = False
        self._asked = 0.0
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
                raise CaptureReadError(f"{escape_name(self.path)}: no header was written")
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
            raise CaptureReadError(f"{escape_name(self.path)}: the capture was cut shorter while it was followed "
                                   f"({st.st_size} bytes, {fp.tell()} already read); follow it again from the start")
        if (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
            raise CaptureReadError(f"{escape_name(self.path)}: another file took the capture's name while it was followed; "
                                   "follow it again from the start")

    def _not_rewritten(self, fp: Any, head: bytes, pos: int, tail: bytes) -> None:
        """Raise CaptureReadError when the bytes already read are no longer the file's:
        it was overwritten in place (``cp other.jsonl followed.jsonl``: same file, cut
        and written again, maybe longer than what was read), so what comes next would be
        read from the middle of another capture's line. ``head``: the header line;
        ``tail``: the last bytes of the whole lines read, ending at ``pos``."""
        fd = fp.fileno()
        try:
            same = os.pread(fd, len(head), 0) == head and os.pread(fd, len(tail), pos - len(tail)) == tail
        except OSError:
            return
        if not same:
            raise CaptureReadError(f"{escape_name(self.path)}: the capture was overwritten while it was followed (the {pos} bytes "
                                   "already read are not the file's any more); follow it again from the start")

    def _gone(self) -> bool:
        if self.writer_gone is None or time.monotonic() - self._asked < 1.0:
            return False
        self._asked = time.monotonic()
        return self.writer_gone()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with open(self.path, "rb") as fp:
            head = fp.readline()
            pos = len(head)
            tail = b""                      # the last bytes of whole lines read (up to TAIL), ending at pos
            lineno = 1
            buf = b""
            pending: int | None = None      # the line number of a line that is not JSON, until a gap record follows it
            while True:
                if self.stop:
                    self.truncated = bool(buf) or pending is not None     # stopped before a gap record came
                    return
                chunk = fp.readline()
                if not chunk and self._gone():
                    chunk = fp.readline()       # what it wrote before it went (its end record, maybe)
                    if not chunk:
                        self.abandoned = self.truncated = True
                        return
                if not chunk:
                    self._still_the_same(fp)
                    self._not_rewritten(fp, head, pos, tail)
                    time.sleep(self.poll)
                    # overwritten while this slept: noticed before its bytes are read as this capture's
                    self._still_the_same(fp)
                    self._not_rewritten(fp, head, pos, tail)
                    continue
                buf += chunk
                if not buf.endswith(b"\n"):
                    continue
                line, buf = buf, b""
                # whole lines only: a partial one may be cut back by the writer (a failed write) and written again
                pos += len(line)
                tail = (tail + line)[-TAIL:] if len(line) < TAIL else line[-TAIL:]
                lineno += 1
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    self._still_the_same(fp)
                    self._not_rewritten(fp, head, pos, tail)
                    if pending is not None:
                        raise CaptureReadError(f"{escape_name(self.path)}:{pending}: corrupt record (not JSON)") from None
                    pending = lineno        # a record cut by a failed write, if the writer's gap record follows
                    continue
                if pending is not None:
                    if not (isinstance(rec, dict) and rec.get("type") == "gap"):
                        raise CaptureReadError(f"{escape_name(self.path)}:{pending}: corrupt record (not JSON)")
                    pending = None
                    self.cut_records += 1
                if not isinstance(rec, dict) or "type" not in rec:
                    raise CaptureReadError(f"{escape_name(self.path)}:{lineno}: record is not an object with a type")
                rec = exact_ids(rec, line)
                if self.version != VERSION:
                    rec = migrate(rec, self.version)
                yield rec
                if rec["type"] == "end":
                    return
