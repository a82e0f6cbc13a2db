"""A capture proves itself (pure, level 1): record order and forwarded-byte digests.

The end record states, per direction, how many messages and bytes the tap
forwarded and the SHA-256 of those bytes (``recorder._Stream``). On stdio the
message records hold exactly those bytes (their ``raw``, or ``json`` + ``eol``),
so re-hashing them (with the ``data`` of ``chunk`` records, bytes stored
unframed when live analysis fell behind) must give the same digest: a capture whose relayed bytes
were edited, or whose message records were removed or added, does not. On HTTP
the digest also covers request and response heads, which the capture keeps
only in parsed (and redacted) form, so only the message counts are compared.

:class:`Integrity` is fed every record after the header, in file order, and
returns findings (``capture.digest_mismatch``, ``capture.out_of_sequence``,
``capture.impossible_time``, all errors) once the end record has been seen. Records lost to a write
failure are announced by ``gap`` records: they explain a hole in the sequence
numbers and make the digests unverifiable (``capture.gap`` already says so).
"""

from __future__ import annotations

import hashlib
from typing import Any

from mcptap.capture.format import decode_bytes
from mcptap.model import Finding
from mcptap.protocol.codes import finding
from mcptap.records import message_bytes

_DIRS = ("c2s", "s2c")

#: µs in a year of 365.25 days
_YEAR_US = 31_557_600 * 10**6
#: A ``t_us`` past this (100 years, in µs) is no time since a capture started:
#: no tap runs that long (a hand-edited or corrupt record, 2**63 say).
MAX_T_US = 100 * _YEAR_US
#: How far (µs) a message record's ``t_us`` may lie before an earlier message
#: record's. Message times come from one monotonic clock, stamped as the
#: bytes were read and written in read order, so they only go back by the
#: moment between a read and its hand-over (µs, ms under load); a minute back
#: is an edited or damaged record.
BACKWARDS_US = 60 * 10**6
#: At most this many ``capture.impossible_time`` findings per capture (the
#: first ones say where the damage starts; a capture whose every record is
#: off would otherwise bury every other finding).
TIME_FINDINGS = 5


class StreamTally:
    """Byte count, SHA-256 and message count of one stream (c2s, s2c, stderr), as
    the end record states them; shared by the integrity check and ``scrub``,
    which recomputes them over scrubbed bytes."""

    __slots__ = ("bytes", "sha", "messages")

    def __init__(self) -> None:
        self.bytes = 0
        self.sha = hashlib.sha256()
        self.messages = 0

    def add(self, data: bytes, message: bool = True) -> None:
        self.bytes += len(data)
        self.sha.update(data)
        self.messages += int(message)

    def json(self) -> dict[str, Any]:
        """``{"bytes": int, "sha256": hex str, "messages": int}``, the end record's shape."""
        return {"bytes": self.bytes, "sha256": self.sha.hexdigest(), "messages": self.messages}


class Integrity:
    """Check one capture's records against its own end record (see module doc).

    ``transport``: the header's transport (``"stdio"`` hashes bytes, others
    count messages only). ``feed(record)`` for every record after the header;
    ``findings()`` at the end (a list of Finding, empty when the capture holds
    together or has no end record)."""

    def __init__(self, transport: str | None) -> None:
        self.bytes_verifiable = transport == "stdio"
        self.tally = {d: StreamTally() for d in _DIRS}
        self.stderr = StreamTally()
        self.end: dict[str, Any] | None = None
        self.gaps = 0
        self._last_seq: int | None = None
        self._gap_since_last = False
        self._order: list[Finding] = []
        self._times: list[Finding] = []
        self._latest: tuple[int, Any] = (0, None)     # the latest plausible message t_us and its record's seq

    def feed(self, rec: dict[str, Any]) -> None:
        typ = rec.get("type")
        if typ == "gap":
            self.gaps += 1
            self._gap_since_last = True
        seq = rec.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            self._check_seq(seq, typ)
        if self.end is not None and typ != "end":
            self._order.append(finding("capture.out_of_sequence", f"a {typ} record (seq {seq}) follows the end record"))
        t = rec.get("t_us")
        if type(t) is int:
            self._check_time(t, typ, seq)
        if typ == "message":
            d = rec.get("dir")
            if d in self.tally:
                self.tally[d].add(self._bytes(rec) if self.bytes_verifiable else b"")
        elif typ == "chunk":
            d = rec.get("dir")
            if d in self.tally and self.bytes_verifiable:
                self.tally[d].add(decode_bytes(rec, "data") or b"", message=False)   # unframed bytes: no message count
        elif typ == "stderr":
            self.stderr.add(decode_bytes(rec, "data") or b"")
        elif typ == "end":
            self.end = rec

    @classmethod
    def restore(cls, transport: str | None, tallies: dict[str, StreamTally], end: dict[str, Any] | None, gaps: int,
                order: list[Finding]) -> Integrity:
        """An Integrity in the state ``feed`` would have left it in (check's fast
        scan, mcptap/check/scan.py): ``tallies`` per stream (c2s, s2c, stderr), the
        last end record, the gap record count and the order findings so far."""
        self = cls(transport)
        self.tally = {d: tallies[d] for d in _DIRS}
        self.stderr = tallies["stderr"]
        self.end, self.gaps, self._order = end, gaps, list(order)
        return self

    def _check_seq(self, seq: int, typ: Any) -> None:
        last = self._last_seq
        if last is not None and len(self._order) < 5:
            f = sequence_finding(seq, typ, last, self._gap_since_last)
            if f is not None:
                self._order.append(f)
        self._last_seq = seq if last is None else max(seq, last)
        self._gap_since_last = False

    def _check_time(self, t: int, typ: Any, seq: Any) -> None:
        latest = self._latest if typ == "message" else None
        if len(self._times) < TIME_FINDINGS:
            f = time_finding(t, typ, seq, latest)
            if f is not None:
                self._times.append(f)
        if latest is not None and latest[0] < t <= MAX_T_US:
            self._latest = (t, seq)

    @staticmethod
    def _bytes(rec: dict[str, Any]) -> bytes:
        return message_bytes(rec) or b""

    def findings(self) -> list[Finding]:
        out = self._order + self._times
        end = self.end
        if end is None or self.gaps or end.get("dropped_records"):
            return out
        for d in _DIRS:
            said = end.get(d)
            if not isinstance(said, dict):
                continue
            out += self._compare(d, self.tally[d], said)
        said = end.get("stderr")
        if isinstance(said, dict):
            out += self._compare("stderr", self.stderr, said, what="stderr chunk")
        return out

    def _compare(self, name: str, got: StreamTally, said: dict[str, Any], what: str = "message") -> list[Finding]:
        if said.get("messages") is not None and said.get("messages") != got.messages:
            return [finding("capture.digest_mismatch",
                            f"{name}: the capture holds {got.messages} {what} records, its end record says {said.get('messages')}: records were added or "
                            "removed",
                            {"dir": name, "records": got.messages, "end": said.get("messages")})]
        if not self.bytes_verifiable:
            return []
        if said.get("bytes") is not None and said.get("bytes") != got.bytes or said.get("sha256") not in (None, got.sha.hexdigest()):
            return [finding("capture.digest_mismatch",
                            f"{name}: the {what} records hold {got.bytes} bytes with SHA-256 {got.sha.hexdigest()[:16]}…, "
                            f"the end record says {said.get('bytes')} bytes, {str(said.get('sha256'))[:16]}…: the relayed bytes were edited",
                            {"dir": name, "bytes": got.bytes, "sha256": got.sha.hexdigest(),
                             "end": {"bytes": said.get("bytes"), "sha256": said.get("sha256")}})]
        return []


def sequence_finding(seq: int, typ: Any, last: int, gap_since_last: bool) -> Finding | None:
    """What record ``seq`` (of type ``typ``) after records up to seq ``last``
    says about the order (``capture.out_of_sequence``), or None.
    ``gap_since_last``: a gap record came in between (it explains a jump)."""
    if seq <= last:
        return finding("capture.out_of_sequence", f"{typ} record seq {seq} comes after seq {last}: records were reordered or duplicated")
    if seq != last + 1 and not gap_since_last:
        return finding("capture.out_of_sequence", f"records seq {last + 1}..{seq - 1} are missing and no gap record says why: records were removed")
    return None


def time_finding(t: int, typ: Any, seq: Any, latest: tuple[int, Any] | None) -> Finding | None:
    """What a record's ``t_us`` ``t`` (µs since the capture started, from a
    monotonic clock: docs/capture-format.md) says about the capture
    (``capture.impossible_time``), or None. ``typ``/``seq``: the record's type
    and seq; ``latest``: for a message record, the latest plausible ``t_us``
    of the message records before it and that record's seq (None: not a
    message record, whose time is only checked to be in range)."""
    what = f"{typ} record seq {seq}" if seq is not None else f"a {typ} record"
    if t < 0:
        return finding("capture.impossible_time", f"{what} has t_us {t}, a negative time since the capture started",
                       {"seq": seq, "t_us": t})
    if t > MAX_T_US:
        return finding("capture.impossible_time", f"{what} has t_us {t}, {t / _YEAR_US:.3g} years since the capture started",
                       {"seq": seq, "t_us": t})
    if latest is not None and t < latest[0] - BACKWARDS_US:
        return finding("capture.impossible_time",
                       f"{what} has t_us {t}, {(latest[0] - t) / 1e6:.3f} s before message record seq {latest[1]} (t_us {latest[0]}): "
                       "message times come from a monotonic clock and never go back", {"seq": seq, "t_us": t, "after_seq": latest[1]})
    return None
