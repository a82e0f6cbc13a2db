"""What the live recorder and the offline re-annotator share (pure, level 1):
the record sequence number, per-direction framers, byte counts and SHA-256
digests, finding counts, the annotator, and the ``end`` record they build.

It has no clock and no writer: every method that needs a time takes it as an
argument. :class:`mcptap.recorder.Recorder` adds the capture writer and the
clock passed in by the transport; :class:`mcptap.reannotate.Reannotator`
takes its times from the records it re-reads.
"""

from __future__ import annotations

import hashlib
import signal as _signal
from collections.abc import Iterable
from typing import Any, Protocol

from mcptap.model import Direction, Finding, Frame, Kind, Message, Severity
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.codes import finding
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.process_rules import exit_finding
from mcptap.records import End

C2S, S2C = Direction.C2S, Direction.S2C
_ANSWERS = frozenset({Kind.RESPONSE, Kind.ERROR, Kind.BATCH})


class Digest(Protocol):
    """What a stream's digest offers (``hashlib.sha256()``, or the HTTP tap's
    ``transport/hasher.BackgroundSha``)."""

    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


class Stream:
    """Bytes, SHA-256 and message count of one forwarded stream."""

    __slots__ = ("bytes", "sha", "messages")

    def __init__(self) -> None:
        self.bytes = 0
        self.sha: Digest = hashlib.sha256()
        self.messages = 0

    def json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "sha256": self.sha.hexdigest(), "messages": self.messages}


class RecordingState:
    """Bookkeeping of one recorded (or re-read) connection. ``transport``:
    "stdio" or "http"; ``annotator``: judges each message (a fresh one of
    ``transport`` when None)."""

    #: frames of a plain line annotated by ``Annotator.feed_line`` (the re-annotator's re-framed lines)
    LINES = False

    def __init__(self, transport: str = "stdio", annotator: Annotator | None = None) -> None:
        self.transport = transport
        self.annotator = annotator or Annotator(transport)
        self.seq = 0
        self._eol = b"\n" if transport == "stdio" else b""
        self._framers = {C2S: NewlineFramer(), S2C: NewlineFramer()}
        self.streams = {C2S: Stream(), S2C: Stream()}
        self.stderr_stream = Stream()
        self.severities = {Severity.ERROR: 0, Severity.WARN: 0, Severity.INFO: 0}
        self.codes: dict[str, int] = {}
        self.closed = False
        self.end: dict[str, Any] | None = None
        #: the server answered at least one request; signals the tap delivered to it (process.exit)
        self._answered = False
        self._signalled: set[int] = set()
        self.chunks = 0               # chunk records written (live) or read (re-annotation)
        self.chunk_bytes = 0
        self._reframe = False         # re-annotation: streams are re-framed from bytes
        #: the last stderr byte recorded was not a newline (judged when the stream ends: _stderr_end)
        self.stderr_open = False
        self._stderr_judged = False

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def _count(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            self.severities[f.severity] += 1
            self.codes[f.code] = self.codes.get(f.code, 0) + 1

    def _emit(self, frame: Frame, direction: Direction, t: int, session: Any = None,
              transport: dict[str, Any] | None = None, extra: Iterable[Finding] = ()) -> Message:
        """Annotate and count one frame (the live recorder also writes it)."""
        if (self.LINES and session is None and transport is None and not extra and frame.lines == 1 and frame.terminated
                and not frame.invalid_utf8 and not frame.oddities):
            # a line of default facts: feed_line's Message is feed's (tests/protocol/test_feed_line.py), for less work
            msg = self.annotator.feed_line(frame.value, frame.raw, frame.offset, self._next(), t, direction)
        else:
            msg = self.annotator.feed(frame, self._next(), t, direction, session, transport, extra)
        self.streams[direction].messages += 1
        self._saw(direction, msg)
        if msg.findings:
            self._count(msg.findings)
        return msg

    def _saw(self, direction: Direction, msg: Message) -> None:
        if direction is S2C and msg.kind in _ANSWERS:
            self._answered = True

    def _note_signal(self, event: str, fields: dict[str, Any]) -> None:
        if event == "signal" and fields.get("delivered", True):
            try:
                self._signalled.add(_signal.Signals[str(fields.get("signal"))].value)
            except KeyError:
                pass

    def _exit_finding(self, code: int | None, signal: int | None) -> Finding:
        pend = [p for p in self.annotator.pending() if p.direction is C2S]
        return exit_finding(code, signal, pend, self._answered, self._signalled)

    def _exit_findings(self, code: int | None, signal: int | None) -> list[Finding]:
        """The findings of a process exit record: how it exited, and stderr left unterminated."""
        return [self._exit_finding(code, signal), *self._stderr_end()]

    def _stderr_end(self) -> list[Finding]:
        """``process.stderr_unterminated`` once: when the server's stderr ended
        (its exit, else the end of the capture) on a line without a newline
        (a last message cut short), or at a read of CR progress output. A
        line written in several pieces that does end with a newline is no finding."""
        if self._stderr_judged or not self.stderr_open:
            return []
        self._stderr_judged = True
        return [finding("process.stderr_unterminated",
                        "stderr data without a newline (e.g. CR progress output, or the stream ended mid-line): forwarded and stored as-is")]

    def _wind_up(self, t: int, incomplete: bool) -> list[Finding]:
        """At the end (time ``t``, µs): flush partial last lines and judge what
        is still open; returns those findings (counted). ``incomplete``: the
        traffic was cut short, so open requests are not judged unanswered."""
        self.closed = True
        for d in (C2S, S2C):
            for f in self._framers[d].receive_data(b""):
                self._emit(f, d, t)
        fs = self.annotator.finish(t, complete=not incomplete) + self._stderr_end()
        self._count(fs)
        return fs

    def _end_record(self, t: int, fs: list[Finding], exit_code: int | None, capture_error: str | None = None,
                    dropped_records: int | None = None, **extra: Any) -> End:
        """The ``end`` record at time ``t`` (µs), after ``_wind_up`` returned ``fs``."""
        return End(
            self._next(), t, {k.value: v for k, v in self.severities.items()}, self.codes,
            [p.describe() for p in self.annotator.pending()],
            c2s=self.streams[C2S].json(), s2c=self.streams[S2C].json(),
            cancelled_unanswered=[p.describe() for p in self.annotator.pairing.pending() if p.cancelled],
            stderr=self.stderr_stream.json() if self.transport == "stdio" else None,
            chunks={"records": self.chunks, "bytes": self.chunk_bytes} if self.chunks and not self._reframe else None,
            unanswered=[f.to_json() for f in fs] if fs else None,
            exit_code=exit_code, extra=extra, capture_error=capture_error, dropped_records=dropped_records,
        )
