"""The live recorder: forwarded bytes in, capture records out (synchronous,
sans-IO apart from the capture writer; the clock and start time are passed in
by the transport, never read here).

Transports call it *after* they forwarded a chunk, so nothing here can delay,
change or reorder the relayed stream. It owns the record sequence number, the
per-direction framers, byte counts and SHA-256 digests of the forwarded bytes,
the annotator and the capture writer, and writes the ``end`` record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mcptap import __version__
from mcptap.capture import pieces
from mcptap.capture.format import FORMAT, VERSION
from mcptap.capture.writer import CaptureWriter
from mcptap.known_secrets import KnownSecrets
from mcptap.model import UNPARSED, Direction, Finding, Frame, Kind, Message
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.protocol.framing import NewlineFramer, Parses
from mcptap.protocol.skeleton import parse_message
from mcptap.recorder_chunks import ChunkRecording, WholeLines
from mcptap.recorder_gaps import GapRecording
from mcptap.recorder_stderr import StderrRecording
from mcptap.recording import RecordingState
from mcptap.records import RAW_ONLY_ABOVE, Context, Eof, Header, Http, Note, Process, Record

C2S, S2C = Direction.C2S, Direction.S2C

#: ``Recorder.long_line`` of the live stdio tap: a longer line is stored
#: unframed (``chunk`` records) as it streams instead of held for annotation
LONG_LINE = 4 << 20


class Recorder(StderrRecording, ChunkRecording, GapRecording, RecordingState):
    """Record one tapped connection (stdio) or proxy (HTTP) into a capture.

    ``writer``: a CaptureWriter or None (analyse only). ``transport``: "stdio"
    or "http". ``target``: header target (argv scrubbed, or URL without
    credentials). ``clock``: returns µs since capture start (int), read at
    each event (the transport's: ``mcptap.clock.monotonic_us_clock()``);
    ``started``: the header's UTC start time (ISO 8601, ``mcptap.clock.utc_timestamp()``).
    Raises CaptureWriteError when the header cannot be written (the caller
    then ``writer.discard()``s the capture and records nothing).
    ``on_message``: optional callback for each annotated Message (live views).
    ``observers``: more such callbacks (live OTLP export, mcptap/otel/),
    called in order after the message record was written; appending to it is
    the way to subscribe (``record_observers``: the same for every other record
    that carries findings, and every gap record, given its JSON).
    """

    def __init__(self, writer: CaptureWriter | None, transport: str = "stdio", target: dict[str, Any] | None = None, *,
                 clock: Callable[[], int], started: str, annotator: Annotator | None = None,
                 on_message: Callable[[Message], None] | None = None, header_extra: dict[str, Any] | None = None) -> None:
        super().__init__(transport, annotator)
        self.writer = writer
        self.clock = clock
        self.on_message = on_message
        self.observers: list[Callable[[Message], None]] = []
        #: callbacks for each other record that carries findings (its JSON, after it was written):
        #: the live OTLP export gives such a record a span, as ``export -f otlp-json`` does
        self.record_observers: list[Callable[[dict[str, Any]], None]] = []
        self._stderr_interval = 0
        self._stderr_volume_flagged = False
        #: directions whose bytes are being stored unframed (``chunk`` records):
        #: direction -> True while the last stored byte ended a line
        self._unframed: dict[Direction, bool] = {}
        self._lines = WholeLines()      # a redacted capture's unfinished lines stored unframed (recorder_chunks)
        self._ended: set[Direction] = set()       # directions whose eof is recorded
        #: stdio: bytes of an unfinished line above which it is stored as it
        #: streams (chunk records) instead of held whole; None: no limit
        self.long_line: int | None = None
        #: stdio: the session key of the current segment (None: the only one; see segment())
        self.segment_key: str | None = None
        #: set while a caller writes several records it flushes itself with ``flush()``
        self.hold_flush = False
        #: stdio: the argv's secrets, held back at the end of a stderr read that may split one (set with the writer's line_filter)
        self.known: KnownSecrets | None = None
        self.started = started
        if writer is not None:
            extra = {"rules": rules_fingerprint(), **(header_extra or {})}
            # raises CaptureWriteError when the header is not on disk (disk full): the caller's
            # capture-open failure path, never a capture that starts without its header
            writer.begin(Header(FORMAT, VERSION, __version__, started, transport, target or {}, extra).to_json())
            writer.on_gap = self.writer_gap

    # -- bookkeeping --------------------------------------------------------------
    def _write(self, rec: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.write(rec)
        # a gap record too: the live export gives it its capture.gap span and judges the requests it covered
        if self.record_observers and (rec.get("findings") or rec.get("type") == "gap") and rec.get("type") != "message":
            for observe in self.record_observers:
                observe(rec)

    def _flush(self) -> None:
        if self.writer is not None and not self.hold_flush:
            self.writer.flush()

    def flush(self) -> None:
        """Write the records queued while ``hold_flush`` was set (HTTP: one write per relay batch)."""
        if self.writer is not None:
            self.writer.flush()

    def stored_ends(self) -> tuple[int, int] | None:
        """(c2s, s2c): per direction, the stream offset before which every
        byte is in records handed to the writer (the framer's held bytes are
        not; on disk once ``flush`` returned with ``hold_flush`` unset), or is
        accounted for by a ``gap`` record on disk (records the writer dropped
        on a failed write, bytes counted by ``lost``). None while the writer
        dropped records that no gap record announces yet (a disk that stays
        full) or once it is closed: the capture may then lack bytes these
        offsets would claim, so the stdio relay's spill file (``spill.Recorded``)
        is not rewound past them and ``recover`` still finds them. Once the
        gap is on disk the bytes are declared lost, as the HTTP tap's are when
        its recorder read its spill file back, and the file is rewound again:
        it used to stay a log for the rest of the session after one dropped
        record, growing to its bound (``spill_bound``)."""
        w = self.writer
        if w is not None and (w.unreported or w.closed):
            return None
        return (self.streams[C2S].bytes - self._framers[C2S].buffered - self._lines.held(C2S),
                self.streams[S2C].bytes - self._framers[S2C].buffered - self._lines.held(S2C))

    def _emit(self, frame: Frame, direction: Direction, t: int, session: Any = None,
              transport: dict[str, Any] | None = None, extra: Iterable[Finding] = ()) -> Message:
        msg = RecordingState._emit(self, frame, direction, t, session, transport, extra)
        if msg.kind is not Kind.NON_JSON and msg.kind is not Kind.INVALID:
            self._stderr_interval = 0
            self._stderr_volume_flagged = False
        if len(frame.raw) > RAW_ONLY_ABOVE:
            # annotated: the parsed copy of a multi-MiB message is not needed any more
            # (the record keeps the raw bytes), so it is freed before the record is built
            frame.value = msg.value = UNPARSED
        self._write_message(msg)
        if self.on_message is not None:
            self.on_message(msg)
        for observe in self.observers:
            observe(msg)
        return msg

    @property
    def writes_in_pieces(self) -> bool:
        """A message record's ``transport.sse.raw`` may be a ``LazyText``: the
        record is written (in pieces) and nothing else reads it (no rewriting
        of the capture's bytes, no live observer)."""
        w = self.writer
        return w is not None and w.transform is None and w.line_filter is None and self.on_message is None and not self.observers

    def _write_message(self, msg: Message) -> None:
        if self.writer is not None:
            pieces.write_message(self.writer, msg, self._eol)

    # -- stdio ----------------------------------------------------------------------
    def stdio_bytes(self, direction: Direction, data: bytes, extra: Iterable[Finding] = (),
                    behind: Callable[[], bool] | None = None, parsed: Parses | None = None) -> list[Message]:
        """A chunk was forwarded in ``direction``: count, digest, frame,
        annotate and write it. Returns the messages completed by the chunk.
        ``extra``: findings of the sender's own (``serve.*``) for the first of them.
        ``behind``: asked between messages; once it returns True the rest of
        the chunk is stored unframed (see ``stdio_unframed``). ``parsed``: the
        ``NewlineFramer.parses`` of a reader that framed the same chunk (replay's
        stdio link), used instead of parsing its lines again."""
        if not data:
            return []  # b"" means EOF to the framer; EOF is stdio_eof()
        t = self.clock()
        s = self.streams[direction]
        start = s.bytes
        s.bytes += len(data)
        s.sha.update(data)
        at_line_start = self._unframed.get(direction)
        if at_line_start is not None:
            # framing resumes at a line start, so re-framing the whole stream
            # later cuts the same lines: the rest of a cut line stays unframed
            i = 0 if at_line_start else data.find(b"\n") + 1
            if i == 0 and not at_line_start:
                self._chunk(direction, data, start, t)
                self._flush()
                return []
            if i:
                self._chunk(direction, data[:i], start, t)
            del self._unframed[direction]
            self.annotator.framed(direction)
            self._framers[direction] = NewlineFramer(start + i)
            data = data[i:]
            if not data:
                self._flush()
                return []
        framer = self._framers[direction]
        frames = framer.receive_data(data) if parsed is None else framer.receive_parsed(data, parsed)
        out = []
        for i, f in enumerate(frames):
            if behind is not None and behind():
                self._unframed[direction] = self._chunk_pieces(direction, [*(x.raw for x in frames[i:]), *framer.take_pieces()], s.bytes, t)
                self.annotator.unframed(direction)      # answers may be in these bytes: judged by re-annotation
                break
            out.append(self._emit(f, direction, t, self.segment_key, extra=extra if i == 0 else ()))
        else:
            if self.long_line is not None and framer.buffered > self.long_line:
                # a huge line is stored as it streams (chunk records, framed by check/show),
                # never held whole: memory stays flat whatever a peer sends
                self._unframed[direction] = self._chunk_pieces(direction, framer.take_pieces(), s.bytes, t)
                self.annotator.unframed(direction)      # the long line may be an answer
        self._flush()
        return out

    def stdio_unframed(self, direction: Direction, data: bytes) -> None:
        """A chunk was forwarded in ``direction`` while analysis is behind:
        count and digest it and store it as a ``chunk`` record, unframed and
        unannotated (re-annotation frames it: docs/capture-format.md). Bytes
        the framer held are stored first, so the stream stays complete."""
        if not data:
            return
        t = self.clock()
        s = self.streams[direction]
        s.bytes += len(data)
        s.sha.update(data)
        self.annotator.unframed(direction)     # annotation deferred: so is judging what these bytes may answer
        held = self._framers[direction].take_pieces() if direction not in self._unframed else []
        self._unframed[direction] = self._chunk_pieces(direction, [*held, data], s.bytes, t)
        self._flush()

    def lost(self, direction: Direction, nbytes: int, reason: str | None = None) -> None:
        """``nbytes`` were forwarded in ``direction`` but could not be queued
        for recording (analysis and disk both behind the relay, or ``reason``):
        a ``gap`` record says so; the direction's stream continues unframed to the next
        line start. They count in the stream's bytes (its digest cannot
        cover them), so later records keep their true stream offsets."""
        self._end_line(direction)
        self.streams[direction].bytes += nbytes
        self.gap(reason or "analysis and the capture disk fell behind the relay: bytes forwarded but not recorded", direction, nbytes)

    def cut(self, reason: str) -> None:
        """mcptap stopped recording the stdio streams before they ended (its
        relay was stopped or died): what each direction's framer holds after
        its last newline is stored as a ``chunk`` record, not judged as a line
        the peer left unterminated (mcptap stopped reading; the peer may have
        gone on), then a ``gap`` record per such direction (one without a
        direction if none held anything) gives ``reason``. Re-annotation
        resumes framing after a directed gap at the next line start, as here."""
        cut: list[Direction | None] = [d for d in (C2S, S2C) if d not in self._ended and self._end_line(d)]
        for where in cut or [None]:
            self.gap(reason, where)

    def _end_line(self, direction: Direction) -> bool:
        """The stream is cut here: the framer's bytes after the last newline
        go into a ``chunk`` record and framing resumes at the next line start
        (the rest of the cut line is stored unframed). True if it was cut
        mid-line (bytes held, or stored unframed since the last newline)."""
        held = self._framers[direction].take_pieces()
        mid = bool(held) or self._unframed.get(direction) is False
        if held:
            self._chunk_pieces(direction, held, self.streams[direction].bytes, self.clock())
        self._chunk_rest((direction,))
        self._unframed[direction] = False
        return mid

    def stdio_eof(self, direction: Direction, parsed: Parses | None = None) -> list[Message]:
        """``direction``'s stream closed: flush a partial last line, record the
        eof and what it means (pending requests). ``parsed``: as ``stdio_bytes``'s."""
        self._chunk_rest((direction,))
        t = self.clock()
        key = self.segment_key
        self._ended.add(direction)
        out = [self._emit(f, direction, t, key) for f in self._framers[direction].receive_parsed(b"", parsed or [])]
        fs = self.annotator.eof(direction, t, session=key)
        self._put(lambda seq, t: Eof(seq, t, direction._value_, key, _json(fs)), fs)
        return out

    def segment(self, key: str | None) -> None:
        """stdio: the next bytes belong to a new session with a fresh server
        process (``replay`` of a capture with several sessions). Its messages
        and eof records carry ``session`` = ``key`` (str; None: none), so lifecycle and
        pairing state stay apart from the earlier processes'."""
        self._framers = {d: NewlineFramer(self.streams[d].bytes) for d in (C2S, S2C)}      # offsets continue the stream
        self._ended = set()
        self.segment_key = key

    def process(self, event: str, findings: Iterable[Finding] = (), **fields: Any) -> int:
        """A process event: spawn, spawn_failed, signal, exit, stdin_closed, kill."""
        self._note_signal(event, fields)
        fs = list(findings)
        return self._put(lambda seq, t: Process(seq, t, event, fields, _json(fs)), fs)

    def exit(self, code: int | None = None, signal: int | None = None, **fields: Any) -> int:
        """The server process ended (``code``, or killed by ``signal``).
        Records process.exit (see ``_exit_finding``)."""
        self.stderr(b"", final=True)
        return self.process("exit", findings=self._exit_findings(code, signal), code=code, signal=signal, **fields)

    # -- HTTP -----------------------------------------------------------------------------
    def forwarded(self, direction: Direction, data: bytes) -> None:
        """Count and digest bytes forwarded in ``direction`` (HTTP heads and bodies)."""
        s = self.streams[direction]
        s.bytes += len(data)
        s.sha.update(data)

    def frame(self, direction: Direction, raw: bytes, session: Any = None, transport: dict[str, Any] | None = None,
              extra: Iterable[Finding] = (), value: Any = UNPARSED, t_us: int | None = None,
              parsed: tuple[Any, tuple[int, ...], int] | None = None) -> Message:
        """Record one already-framed payload (a JSON body, an SSE event's data).
        ``value``: the parsed JSON if the caller already has it (valid UTF-8,
        nothing only the exact parse reads); ``parsed``: instead, what
        ``jsonparse.parse_json_full(raw)`` returned for it (value, invalid
        UTF-8 offsets, flags), so the payload is not parsed again."""
        t = self.clock() if t_us is None else t_us
        odd = 0
        if parsed is not None:
            value, bad, odd = parsed
        elif value is UNPARSED:
            value, bad, odd = parse_message(raw)
        else:
            bad = ()
        frame = Frame(raw, 0, True, value, bad, 1, odd)
        del value     # the frame holds it: _emit drops a large message's value once annotated
        alone = self.hold_flush and len(raw) > RAW_ONLY_ABOVE
        if alone:
            self.flush()          # a multi-MiB record is written on its own, never copied into a joined batch
        msg = self._emit(frame, direction, t, session, transport, extra)
        if alone:
            self.flush()
        self._flush()
        return msg

    # -- other records ------------------------------------------------------------------
    def _put(self, make: Callable[[int, int], Record], findings: Iterable[Finding] = ()) -> int:
        """Number, time-stamp, count and write one record built by ``make(seq, t_us)``; returns its seq."""
        seq = self._next()
        self._count(findings)
        self._write(make(seq, self.clock()).to_json())
        self._flush()
        return seq

    def http(self, findings: Iterable[Finding] = (), **fields: Any) -> int:
        """An ``http`` record: exchange facts in the given order (``event`` among them, docs/http-tap.md); returns its seq."""
        fs = list(findings)
        return self._put(lambda seq, t: Http(seq, t, fields, _json(fs)), fs)

    def note(self, source: str, **fields: Any) -> int:
        """A ``note`` record (``source``: what mcptap did beside the relay, e.g. ``otlp``); returns its seq."""
        return self._put(lambda seq, t: Note(seq, t, source, fields))

    def assume(self, **state: Any) -> None:
        """Declare state that precedes the capture (it started mid-session):
        ``phase``, ``revision``, ``session``, ``client_caps``, ``server_caps``.
        Written as a ``context`` record so re-annotation sees the same state."""
        self.annotator.assume(**state)
        self._put(lambda seq, t: Context(seq, t, state))

    def close(self, exit_code: int | None = None, incomplete: bool = False, **extra: Any) -> dict[str, Any]:
        """Write the ``end`` record (idempotent) and close the writer.
        ``incomplete``: the traffic was cut short (re-annotating a capture
        without end record), so open requests are not judged unanswered.
        ``recorder_error`` (extra) defaults to why recording ``stopped``.
        Returns the end record (dict)."""
        if self.recorder_error is not None:
            extra.setdefault("recorder_error", self.recorder_error)
        if self.closed:
            return self.end or {}
        self._chunk_rest((C2S, S2C))
        self.stderr(b"", final=True)
        t = self.clock()
        unanswered = self._wind_up(t, incomplete)
        w = self.writer
        if w is not None:
            w.flush()
        end = self._end_record(t, unanswered, exit_code, w.failed if w is not None else None, w.dropped if w is not None else None,
                               **extra).to_json()
        if w is not None:
            w.write(end)
            w.close()
        self.end = end
        return end


def _json(fs: Iterable[Finding]) -> tuple[dict[str, Any], ...]:
    return tuple(f.to_json() for f in fs)
