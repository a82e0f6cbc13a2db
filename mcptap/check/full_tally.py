"""The integrity check of :class:`~mcptap.check.fullscan.FullScan` (level 3,
pure): capture/integrity.Integrity.feed for one record, the streams' bytes
buffered and handed to ``on_bytes`` in large blocks (``flush``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from mcptap.capture.integrity import sequence_finding
from mcptap.check.scan import FLUSH_BYTES, Unsupported
from mcptap.protocol.codes import finding
from mcptap.records import message_bytes

_DIRS = ("c2s", "s2c")


class FullTally:
    """The integrity check's state: FullScan sets these fields."""

    on_bytes: Callable[[str, bytes], None]
    stdio: bool
    counts: dict[str, list[int]]
    bufs: dict[str, list[bytes]]
    buffered: int
    gaps: int
    gap_since_last: bool
    last_seq: int | None
    order: list[Any]
    end_seen: dict[str, Any] | None

    def _integrity(self, r: dict[str, Any], typ: str, seq: Any) -> None:
        """capture/integrity.Integrity.feed, its digests hashed in blocks."""
        if typ == "gap":
            self.gaps += 1
            self.gap_since_last = True
        if type(seq) is int:
            last = self.last_seq
            if last is not None and len(self.order) < 5:
                f = sequence_finding(seq, typ, last, self.gap_since_last)
                if f is not None:
                    self.order.append(f)
            self.last_seq = seq if last is None else max(seq, last)
            self.gap_since_last = False
        if self.end_seen is not None and typ != "end":
            self.order.append(finding("capture.out_of_sequence", f"a {typ} record (seq {seq}) follows the end record"))
        data: bytes | None = None
        stream = None
        if typ == "message":
            stream = r["dir"]
            self.counts[stream][1] += 1
            if self.stdio:
                data = message_bytes(r) or b""
        elif typ == "chunk":
            d = r.get("dir")
            if d in _DIRS and self.stdio:
                stream = d
                raw, b64 = r.get("data"), r.get("data_b64")
                if not isinstance(raw, (str, type(None))) or not isinstance(b64, (str, type(None))):
                    raise Unsupported("chunk record data is not a string")
                data = raw.encode("utf-8") if raw is not None else base64.b64decode(b64) if b64 is not None else b""
        elif typ == "stderr":
            stream = "stderr"
            self.counts[stream][1] += 1
            raw = r.get("data")
            data = raw.encode("utf-8") if raw is not None else base64.b64decode(r["data_b64"]) if "data_b64" in r else b""
        elif typ == "end":
            self.end_seen = r
        if data is not None and stream is not None:
            self.counts[stream][0] += len(data)
            self.bufs[stream].append(data)
            self.buffered += len(data)
            if self.buffered > FLUSH_BYTES:
                self.flush()

    def flush(self) -> None:
        for name, buf in self.bufs.items():
            if buf:
                self.on_bytes(name, b"".join(buf))
                buf.clear()
        self.buffered = 0
