"""Following a capture that is being written (``mcptap show --follow``).

Polls the file (``time.sleep``): this is capture I/O, beside the reader, not
part of the pure core.
"""

from __future__ import annotations

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

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with open(self.path, "rb") as fp:
            fp.readline()
            lineno = 1
            buf = b""
            while True:
                chunk = fp.readline()
                if not chunk:
                    if self.stop:
                        self.truncated = bool(buf)
                        return
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
                    raise CaptureReadError(f"{self.path}:{lineno}: corrupt record (not JSON)") from None
                if not isinstance(rec, dict) or "type" not in rec:
                    raise CaptureReadError(f"{self.path}:{lineno}: record is not an object with a type")
                rec = exact_ids(rec, line)
                if self.version != VERSION:
                    rec = migrate(rec, self.version)
                yield rec
                if rec["type"] == "end":
                    return
