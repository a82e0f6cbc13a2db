"""Re-framing of a stdio capture's bytes in re-annotation (pure, level 1): the
half of ``reannotate.Reannotator`` that frames each direction's bytes again
(from the first ``chunk`` record on, as the live recorder framed them), its
framers, the gap resyncs and the keyed sessions' segments, and the end of a
capture cut mid-line. ``Reframing`` is the base ``Reannotator`` adds the
record replay to; its state is set by ``Reannotator.__init__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptap.capture.format import annotation_record, message_record
from mcptap.model import Direction, Finding, Message
from mcptap.protocol.codes import finding
from mcptap.protocol.framing import NewlineFramer
from mcptap.recording import RecordingState

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


class Reframing(RecordingState):
    """Stdio re-framing (module doc) for ``reannotate.Reannotator``."""

    light: bool
    #: stdio directions cut by a gap record: framed again from their next line start
    _resync: set[Direction]
    #: set by a consumer that groups annotated Messages itself (check's FullScan): while
    #: re-framing, each message goes to it instead of coming back from ``replay`` as a record
    on_message: Callable[[Message], None] | None
    _seg: Any           # re-framing: the stdio session key of the records being framed

    def _cut_lines(self) -> list[Finding]:
        """A capture without end record whose bytes stop mid-line (mcptap killed while a peer's line streamed in as
        ``chunk`` records): the line is not judged (the peer may have finished it), it is reported (``capture.cut_line``)."""
        out = []
        for d, framer in self._framers.items():
            n = len(framer.take_buffered()) if framer.buffered else 0
            if n:
                at = self.streams[d].bytes - n
                out.append(finding("capture.cut_line", f"the capture ends in the middle of a {d.value} line: {n:,} bytes of it (from byte "
                                   f"{at:,} of the stream) and no newline; recording stopped there (mcptap killed, or still recording), so it is no "
                                   "message", {"dir": d.value, "bytes": n, "offset": at}))
        return out

    @property
    def reframing(self) -> bool:
        """True from the first stdio ``chunk`` record on (streams re-framed from bytes)."""
        return self._reframe

    def replay_json_reframed(self, rec: dict[str, Any], raw: bytes, whole: bool) -> None:
        """``replay`` of the common stdio message record (as ``replay_json``)
        while re-framing, for a consumer with ``on_message`` set (the messages
        go there). ``raw``: its bytes, ``dumps(json) + b"\\n"`` (the caller
        encoded them); ``whole``: orjson wrote them (one line of valid UTF-8 JSON
        that parses to ``json``). Then, when its direction's framer holds
        nothing, that line is its frame as it stands: not scanned or parsed
        again (``NewlineFramer.whole_line``)."""
        direction = _DIRS[rec["dir"]]
        self._segment(rec.get("session"))
        s = self.streams[direction]
        s.bytes += len(raw)
        if not self.light:
            s.sha.update(raw)
        t = rec["t_us"]
        frame = self._framers[direction].whole_line(raw, rec["json"]) if whole and direction not in self._resync else None
        if frame is None:
            self._replay_frames(direction, raw, t)
            return
        msg = self._emit(frame, direction, t, self._seg)
        if self.on_message is not None:
            self.on_message(msg)

    def _segment(self, key: Any) -> None:
        """A stdio record of another keyed session (``serve --extend``, ``replay``): framed afresh, as ``Recorder.segment`` did."""
        if key != self._seg:
            self._seg = key
            self._framers = {d: NewlineFramer(self.streams[d].bytes) for d in (Direction.C2S, Direction.S2C)}

    def _gap_in(self, rec: dict[str, Any]) -> None:
        """A stdio ``gap`` record in one direction: the recorder stored the
        partial line before it as a chunk (not a line) and framed again from
        the next line start (``Recorder.lost``, ``Recorder.cut``); so here."""
        d = _DIRS.get(str(rec.get("dir")))
        if d is not None:
            self._framers[d].take_buffered()
            self._resync.add(d)
            n = rec.get("bytes")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                self.streams[d].bytes += n        # forwarded, not recorded: later offsets count them

    def _replay_frames(self, direction: Direction, data: bytes, t: int) -> list[dict[str, Any]]:
        if direction in self._resync and data:
            i = data.find(b"\n") + 1
            if not i:
                return []                               # still the rest of the line cut by the gap
            self._resync.discard(direction)
            data = data[i:]
            self._framers[direction] = NewlineFramer(self.streams[direction].bytes - len(data))
            if not data:
                return []
        out = []
        sink = self.on_message
        for f in self._framers[direction].receive_data(data):
            msg = self._emit(f, direction, t, self._seg)
            if sink is not None:
                sink(msg)
            else:
                out.append(annotation_record(msg, findings=True) if self.light else message_record(msg, self._eol))
        return out
