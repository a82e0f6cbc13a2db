"""Re-annotation of an existing capture with today's rules (pure, level 1).

``reannotate(header, records, shapes=True, light=False, reuse=True)`` streams
a capture's records (after its header) and yields them re-annotated, then a
fresh ``end`` record. Two paths:

* full: every message is fed again, as a frame, through a fresh
  ``Reannotator`` and its Annotator — old captures are judged by current rules;
* reuse: a capture whose header ``rules`` fingerprint equals the running
  rules (protocol/fingerprint.py) keeps its recorded annotations, which are
  what the rules would compute, and only gains schema shape checks (never run
  by the live tap). ``reuse=False`` forces the full path (hand-edited files).

``Reannotator`` (below) is the offline re-annotator: the live recorder's bookkeeping
(``recording.RecordingState``) fed records instead of bytes, with no clock (times are the
records' own). Used by ``check``, ``show`` and the tests. Raises CaptureReadError for a
record that cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from mcptap.capture.dumps import dumps as _exact_dumps
from mcptap.capture.format import annotation_record, decode_bytes, message_record
from mcptap.capture.reader import reusable
from mcptap.errors import CaptureReadError
from mcptap.model import Direction, Finding, Frame, Message
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.codes import transport_made
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.protocol.framing import NewlineFramer
from mcptap.protocol.gap_pending import counted_findings
from mcptap.protocol.http_replay import HttpReplay
from mcptap.protocol.jsonparse import parse_json_full
from mcptap.reannotate_reframe import Reframing
from mcptap.records.end import kept as kept_end_fields
from mcptap.records.end import says_ended
from mcptap.records.refusals import mark_refusals, needs_marking
from mcptap.reuse_annotations import reuse_annotations

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


def reannotate(header: dict[str, Any], records: Iterable[dict[str, Any]], shapes: bool = True,
               light: bool = False, reuse: bool = True, marked: bool = False) -> Iterator[dict[str, Any]]:
    """Re-annotate a capture's records (after its header) with the current rules, streaming:
    yields each re-annotated record, then a fresh ``end`` record (the original end's exit code
    and extra fields are kept). ``shapes``: include schema shape checks (protocol/shapes.py).
    ``light``: message records carry annotations only (seq, t_us, dir, kind, method, id, pair,
    latency, session, findings), for consumers that do not need the bytes (check). ``reuse``:
    a capture written under the current rules fingerprint keeps its recorded annotations (they
    are what the rules compute; protocol/fingerprint.py) and only gains shape checks; False
    re-annotates everything (a hand-edited capture). A capture with ``chunk`` records always
    takes the full path when ``records`` is a CaptureStream (of a file, or of standard input,
    which cannot be searched first); from any other source the reuse path raises
    CaptureReadError at the first chunk record rather than leave its bytes out. An HTTP
    capture of other rules gets the ``refused`` marker where the tap refused a request
    (``records.refusals``; ``marked``: the caller's ``records`` went through that already)."""
    fp = header.get("rules")
    path = getattr(records, "path", None)       # a CaptureStream's: chunk records need the full path
    if reuse and fp and fp == rules_fingerprint() and (not isinstance(path, str) or reusable(path)):
        yield from reuse_annotations(header, records, shapes, light)
        return
    rec = reannotator_for(header, shapes, light)
    if not marked and needs_marking(header):
        records = mark_refusals(records)
    old_end: dict[str, Any] | None = None
    for r in records:
        if isinstance(r.get("t_us"), int):
            rec.t_us = r["t_us"]
        if r.get("type") == "end":
            old_end = r
            continue
        yield from rec.replay(r)
    yield end_record(rec, old_end)


def reannotator_for(header: dict[str, Any], shapes: bool, light: bool) -> Reannotator:
    """A fresh re-annotator for a capture with this header (its transport;
    an HTTP capture's upstream path, so legacy endpoint events are judged)."""
    transport = header.get("transport", "stdio")
    rec = Reannotator(transport, Annotator(transport, shapes=shapes), light)
    url = (header.get("target") or {}).get("url") if isinstance(header.get("target"), dict) else None
    if isinstance(url, str):
        path = urlsplit(url).path
        rec._http.judge.endpoint = path if path not in ("", "/") else None
    return rec


def end_record(rec: Reannotator, old_end: dict[str, Any] | None) -> dict[str, Any]:
    """The re-annotated capture's end record: the original end's seq (unless
    chunk records were re-framed) and every field it does not recompute
    (``records.end.kept``: exit code, signal, writer failure, ``original``…)
    kept; ``incomplete`` when the capture had no end record, or one itself
    marked incomplete (``records.end.says_ended``: a transform's output of an
    incomplete capture stays incomplete, its open requests not judged)."""
    if old_end is not None and not rec.chunks and isinstance(old_end.get("seq"), int):    # (seq is optional: null kept ours)
        rec.seq = old_end["seq"] - 1
    keep = kept_end_fields(old_end)
    incomplete = not says_ended(old_end)
    end = rec.close(incomplete=incomplete, **keep)
    if incomplete:
        end["incomplete"] = True
    return end


#: findings of a process exit record that re-annotation judges anew
_REJUDGED_AT_EXIT = ("process.exit", "process.stderr_unterminated")


class Reannotator(Reframing):
    """The offline re-annotator: the live recorder's bookkeeping without a
    writer and without a clock, fed the records of an existing capture
    (``replay(rec)``) instead of live bytes; times are the records' own
    (``t_us``: the latest one seen, set by the caller). ``light``: message records
    come back annotation-only (no bytes, no json), for consumers that need no payload."""

    LINES = True

    def __init__(self, transport: str, annotator: Annotator, light: bool = False) -> None:
        super().__init__(transport, annotator)
        self.t_us = 0
        self.light = light
        #: HTTP captures: the HTTP layer is judged again from the http records
        self._http = HttpReplay(annotator)
        #: stdio directions cut by a gap record: framed again from their next line start
        self._resync: set[Direction] = set()
        #: set by a consumer that groups annotated Messages itself (check's FullScan): while
        #: re-framing, each message goes to it instead of coming back from ``replay`` as a record
        self.on_message: Callable[[Message], None] | None = None
        self._seg: Any = None           # re-framing: the stdio session key of the records being framed

    def close(self, exit_code: int | None = None, incomplete: bool = False, **extra: Any) -> dict[str, Any]:
        """The fresh ``end`` record at the last record's time (``RecordingState._wind_up``); ``extra``: the original end's fields kept."""
        cut = self._cut_lines() if incomplete and self.transport == "stdio" else []
        fs = self._wind_up(self.t_us, incomplete) + cut
        self._count(cut)
        self.end = self._end_record(self.t_us, fs, exit_code, **extra).to_json()
        return self.end

    def replay(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        """Re-annotate one record of an existing capture with today's rules.

        Message records are re-fed as frames (same seq, time, direction,
        session and transport facts); eof, stderr and process-exit records
        re-derive their findings. From the first stdio ``chunk`` record on
        (bytes stored unframed when live analysis fell behind) each
        direction's bytes are re-framed instead, message records included,
        and records are numbered afresh. Returns the re-annotated records
        (none for the header; several for a chunk).
        """
        typ = rec.get("type")
        seq = rec.get("seq")
        if typ == "chunk" and self.transport == "stdio" and not self._reframe:
            self._reframe = True
            for d, framer in self._framers.items():
                if not framer.buffered:           # framing starts here: at each stream's offset so far
                    self._framers[d] = NewlineFramer(self.streams[d].bytes)
        elif typ == "gap":
            # as the live recorder: requests open now whose answers travel the gap's way may be answered in it
            lost = rec.get("bytes")
            self.annotator.gap(_DIRS.get(str(rec.get("dir"))), lost if type(lost) is int and lost >= 0 else None)
            if self.transport == "stdio":
                self._gap_in(rec)
        if self._reframe:
            return self._replay_reframed(rec)
        if isinstance(seq, int):
            self.seq = seq - 1
        out = self._replay_one(rec)
        if isinstance(seq, int):
            # taken, whatever the record (an eof, a process event): records re-framed after it
            # are numbered on from here, never again with its number
            self.seq = seq
        return [] if out is None else [out]

    def replay_json(self, value: Any, offset: Any, raw: bytes, seq: int, t_us: int, d: str) -> Message:
        """``replay`` of the common stdio message record while not re-framing:
        its payload as ``json`` (no ``raw``/``raw_b64``/``eol``), no findings,
        session or transport facts to keep; ``value``, ``offset``, ``seq``, ``t_us``
        and ``d``: its ``json``, ``offset`` (0 when absent), ``seq``, ``t_us`` and ``dir``
        (the caller read them already); ``raw``: ``dumps(json) + b"\n"``. Returns the
        annotated Message (the caller builds the record it needs)."""
        direction = _DIRS[d]
        s = self.streams[direction]
        s.bytes += len(raw)
        if not self.light:
            s.sha.update(raw)
        s.messages += 1
        # (self.seq, the record numbering re-framing goes on from, is read by no annotator: set once, after)
        msg = self.annotator.feed_line(value, raw, offset, seq, t_us, direction)
        self.seq = seq
        self._saw(direction, msg)
        if msg.findings:
            self._count(msg.findings)
        return msg

    def _replay_reframed(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        typ = rec.get("type")
        direction = _DIRS.get(str(rec.get("dir")))
        if typ in ("message", "eof") and self.transport == "stdio":
            self._segment(rec.get("session"))
        if typ in ("chunk", "message"):
            if direction is None:
                raise CaptureReadError(f"{typ} record seq {rec.get('seq')} has no valid dir")
            if typ == "chunk":
                data = decode_bytes(rec, "data")
                if data is None:
                    raise CaptureReadError(f"chunk record seq {rec.get('seq')} has no data")
                self.chunks += 1
                self.chunk_bytes += len(data)
            else:
                data = decode_bytes(rec, "raw")
                if data is None:
                    if "json" not in rec:
                        raise CaptureReadError(f"message record seq {rec.get('seq')} has neither json nor raw bytes")
                    data = _exact_dumps(rec["json"]) + rec.get("eol", "\n").encode("ascii")
            s = self.streams[direction]
            s.bytes += len(data)
            if not self.light:
                s.sha.update(data)
            return self._replay_frames(direction, data, rec.get("t_us", 0))
        if typ == "eof" and direction is not None:
            out = self._replay_frames(direction, b"", rec.get("t_us", 0))
            res = self._replay_one(dict(rec, seq=self._next()))
            return out + ([] if res is None else [res])
        if typ == "header":
            return []
        renumbered = dict(rec, seq=self._next()) if isinstance(rec.get("seq"), int) else rec
        res = self._replay_one(renumbered)
        return [] if res is None else [res]

    def _replay_one(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        typ = rec.get("type")
        if typ == "message":
            return self._replay_message(rec)
        if typ == "eof" and rec.get("dir") in ("c2s", "s2c"):
            fs = self.annotator.eof(Direction(rec["dir"]), rec.get("t_us", 0), session=rec.get("session"))
            self._count(fs)
            out = {k: v for k, v in rec.items() if k != "findings"}
            if fs:
                out["findings"] = [f.to_json() for f in fs]
            return out
        if typ == "header":
            return None
        if typ == "context" and isinstance(rec.get("state"), dict):
            self.annotator.assume(**rec["state"])
            return rec
        if typ == "http" and self.transport == "http":
            rec = self._http.record(rec)
        if typ == "process":
            self._note_signal(str(rec.get("event")), rec)
            if rec.get("event") == "exit":
                # judged again: the severity depends on what was answered before it
                code, sig = rec.get("code"), rec.get("signal")
                fs = [Finding.from_json(f) for f in rec.get("findings", ()) if f.get("code") not in _REJUDGED_AT_EXIT]
                fs += self._exit_findings(code if isinstance(code, int) else None, sig if isinstance(sig, int) else None)
                self._count(fs)
                return dict(rec, findings=[f.to_json() for f in fs])
        if typ == "stderr":
            data = decode_bytes(rec, "data") or b""
            s = self.stderr_stream
            s.bytes += len(data)
            s.sha.update(data)
            s.messages += 1
            self.stderr_open = not data.endswith(b"\n")
            kept = [f for f in rec.get("findings") or () if f.get("code") != "process.stderr_unterminated"]
            if self.stderr_open and b"\r" in data[data.rfind(b"\n") + 1:]:
                kept += [f.to_json() for f in self._stderr_end()]       # as the live recorder judges (recorder_stderr)
            if len(kept) != len(rec.get("findings") or ()):
                # an older mcptap flagged every read without a newline, a line written in two pieces too
                rec = {k: v for k, v in rec.items() if k != "findings"} | ({"findings": kept} if kept else {})
        # (a gap record: the capture.gap it stands for, as the live recorder counts it)
        self._count(Finding.from_json(f) for f in counted_findings(rec))
        return rec

    def _replay_message(self, rec: dict[str, Any]) -> dict[str, Any]:
        direction = _DIRS.get(rec.get("dir") or "")
        if direction is None:
            raise CaptureReadError(f"message record seq {rec.get('seq')} has no valid dir")
        raw = decode_bytes(rec, "raw")
        stdio = self.transport == "stdio"
        canonical = False
        if raw is None:
            if "json" not in rec:
                raise CaptureReadError(f"message record seq {rec.get('seq')} has neither json nor raw bytes")
            value = rec["json"]
            eol = rec.get("eol", "\n")
            # (at any depth, integers of any size: a hand-edited capture's json may hold what orjson refuses)
            raw = _exact_dumps(value) + (b"\n" if eol == "\n" else eol.encode("ascii"))
            # exact canonical JSON: valid UTF-8, one line, terminated as eol says
            frame = Frame(raw, rec.get("offset", 0), eol == "\n" or not stdio, value, (), 1)
            canonical = True
        elif stdio:
            value, bad, odd = parse_json_full(raw)
            terminated = raw.endswith(b"\n")
            lines = raw.count(b"\n") + (0 if terminated else 1)
            frame = Frame(raw, rec.get("offset", 0), terminated, value, bad, max(1, lines), odd)
        else:
            value, _, odd = parse_json_full(raw)
            frame = Frame(raw, rec.get("offset", 0), True, value, (), 1, odd)
        s = self.streams[direction]
        s.bytes += len(raw)
        if not self.light:
            s.sha.update(raw)
        s.messages += 1
        kept: Iterable[Finding] = [Finding.from_json(f) for f in rec.get("findings", ()) if transport_made(f["code"])] if "findings" in rec else ()
        if not stdio and "transport" in rec:
            judged = self._http.message(rec, direction, value, raw)
            if judged is not None:
                kept = judged
        msg = self.annotator.feed(frame, self._next(), rec.get("t_us", 0), direction, rec.get("session"), rec.get("transport"), kept)
        self._saw(direction, msg)
        if msg.findings:
            self._count(msg.findings)
        if self.light:
            return annotation_record(msg, findings=True)  # check needs no bytes, no payload
        return message_record(msg, self._eol, canonical=canonical and msg.value is frame.value, source=rec)
